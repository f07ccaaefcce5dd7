//! An [`AuditQuery`] as one SQL statement, for the stores on SQL databases: a condition per
//! filter that is set, in a fixed order, `ORDER BY id DESC` (newest first) and the limit.
//!
//! The statement's text depends only on which filters are set, so a connection keeps one
//! prepared statement per combination in use. Both SQL stores write their `audit_records`
//! table with the same columns and encodings (timestamps as integer nanoseconds, ids as
//! integers); they differ in how a parameter is written in the text (`?` or `$1`) and in how a
//! value is bound, which each store does with the [`Parameter`]s in order.
//!
//! The `asks` column is written the same way by both ([`asks_to_sql`], [`asks_from_sql`]): the
//! record's questions as one JSON array in a text column, `NULL` for the record that asked
//! nothing, which is almost every record. So is the `switch` column ([`switch_to_sql`],
//! [`switch_from_sql`]): a switch's record's [`SwitchRecord`] as one JSON object, `NULL` in a
//! call's record.

use jiff::Timestamp;
use switchboard_core::ask::AskRecord;

use crate::store::AuditQuery;
use crate::switch::SwitchRecord;

/// A value a [`Select`] compares a column with, or its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parameter<'a> {
    /// Text, as given.
    Text(&'a str),
    /// An integer: a timestamp's nanoseconds, an id, or the limit.
    Integer(i64),
}

/// A `SELECT` statement on `audit_records` and its parameters, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select<'a> {
    /// The statement.
    pub sql: String,
    /// Its parameters, in the order of their placeholders.
    pub parameters: Vec<Parameter<'a>>,
}

impl<'a> Select<'a> {
    /// The statement that answers `query`, reading `columns`, with the `n`th parameter (from
    /// 1) written as `placeholder(n)` returns.
    pub fn of(query: &'a AuditQuery, columns: &str, placeholder: impl Fn(usize) -> String) -> Self {
        let conditions = [
            (
                "correlation_id = ",
                query
                    .correlation_id
                    .as_ref()
                    .map(|id| Parameter::Text(id.as_str())),
            ),
            ("tool = ", query.tool.as_deref().map(Parameter::Text)),
            (
                "org_id = ",
                query
                    .org_id
                    .as_ref()
                    .map(|org| Parameter::Text(org.as_str())),
            ),
            (
                "user_id = ",
                query
                    .user_id
                    .as_ref()
                    .map(|user| Parameter::Text(user.as_str())),
            ),
            (
                "outcome = ",
                query
                    .outcome
                    .map(|outcome| Parameter::Text(outcome.as_str())),
            ),
            (
                "timestamp_ns >= ",
                query
                    .since
                    .map(|since| Parameter::Integer(nanoseconds(since))),
            ),
            (
                "timestamp_ns < ",
                query
                    .until
                    .map(|until| Parameter::Integer(nanoseconds(until))),
            ),
            (
                "id < ",
                query.before_id.map(|id| Parameter::Integer(bound(id))),
            ),
        ];
        let mut sql = format!("SELECT {columns} FROM audit_records");
        let mut parameters = Vec::new();
        for (condition, value) in conditions {
            let Some(value) = value else { continue };
            sql.push_str(if parameters.is_empty() {
                " WHERE "
            } else {
                " AND "
            });
            parameters.push(value);
            sql.push_str(condition);
            sql.push_str(&placeholder(parameters.len()));
        }
        sql.push_str(" ORDER BY id DESC");
        if let Some(limit) = query.limit {
            parameters.push(Parameter::Integer(bound(limit)));
            sql.push_str(" LIMIT ");
            sql.push_str(&placeholder(parameters.len()));
        }
        Self { sql, parameters }
    }
}

/// A timestamp as the stores keep it: integer nanoseconds since the epoch, clamped to the
/// range of a 64-bit integer.
fn nanoseconds(timestamp: Timestamp) -> i64 {
    let nanoseconds = timestamp.as_nanosecond();
    i64::try_from(nanoseconds).unwrap_or(if nanoseconds < 0 { i64::MIN } else { i64::MAX })
}

/// An id or a limit as a 64-bit integer, the largest one if it does not fit.
fn bound(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// The `asks` column could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum AsksColumnError {
    /// The questions could not be written as JSON.
    #[error("a record's asks cannot be written as JSON: {0}")]
    Encode(#[source] serde_json::Error),
    /// The column holds text that is not a JSON array of questions.
    #[error(
        "the asks column is not a JSON array of questions (each with kind, outcome and \
         duration_us): {0}"
    )]
    Decode(#[source] serde_json::Error),
}

/// A record's questions as the `asks` column holds them: `None` (SQL `NULL`) when it asked
/// nothing, without any work, else their JSON array, e.g.
/// `[{"kind":"form","outcome":"accepted","request_hash":"…","answer_hash":"…","duration_us":812}]`
/// (fields as [`AskRecord`] serializes them, absent ones left out).
pub fn asks_to_sql(asks: &[AskRecord]) -> Result<Option<String>, AsksColumnError> {
    if asks.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(asks)
        .map(Some)
        .map_err(AsksColumnError::Encode)
}

/// The `asks` column read back: no questions for `NULL`, else the JSON array
/// [`asks_to_sql`] wrote.
pub fn asks_from_sql(column: Option<&str>) -> Result<Vec<AskRecord>, AsksColumnError> {
    match column {
        None => Ok(Vec::new()),
        Some(text) => serde_json::from_str(text).map_err(AsksColumnError::Decode),
    }
}

/// The `switch` column could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SwitchColumnError {
    /// The switch could not be written as JSON.
    #[error("a record's switch cannot be written as JSON: {0}")]
    Encode(#[source] serde_json::Error),
    /// The column holds text that is not a switch.
    #[error("the switch column is not a JSON switch (with action, selector and changed): {0}")]
    Decode(#[source] serde_json::Error),
}

/// A record's switch as the `switch` column holds it: `None` (SQL `NULL`) in a call's record,
/// else its JSON object, e.g. `{"action":"disable","selector":"tag:beta","changed":["a","b"]}`.
pub fn switch_to_sql(switch: Option<&SwitchRecord>) -> Result<Option<String>, SwitchColumnError> {
    switch
        .map(|switch| serde_json::to_string(switch).map_err(SwitchColumnError::Encode))
        .transpose()
}

/// The `switch` column read back: none for `NULL`, else the object [`switch_to_sql`] wrote.
pub fn switch_from_sql(column: Option<&str>) -> Result<Option<SwitchRecord>, SwitchColumnError> {
    column
        .map(|text| serde_json::from_str(text).map_err(SwitchColumnError::Decode))
        .transpose()
}

#[cfg(test)]
mod tests {
    use switchboard_core::{
        Digest, ErrorKind,
        ask::{AskKind, AskOutcome},
    };

    use super::*;
    use crate::record::Outcome;

    const COLUMNS: &str = "id, tool";

    fn question_mark(_: usize) -> String {
        "?".to_owned()
    }

    fn dollar(n: usize) -> String {
        format!("${n}")
    }

    #[test]
    fn no_filter_reads_every_record_newest_first() {
        let all = AuditQuery::all();
        let select = Select::of(&all, COLUMNS, question_mark);
        assert_eq!(
            select.sql,
            "SELECT id, tool FROM audit_records ORDER BY id DESC"
        );
        assert!(select.parameters.is_empty());
    }

    #[test]
    fn each_filter_set_is_one_condition_with_its_parameter_in_order() {
        let query = AuditQuery {
            outcome: Some(Outcome::Error(ErrorKind::Timeout)),
            before_id: Some(u64::MAX),
            since: Some(Timestamp::constant(1, 5)),
            ..AuditQuery::all()
                .org("acme")
                .tool("roster_list_shifts")
                .limit(3)
        };
        let parameters = [
            Parameter::Text("roster_list_shifts"),
            Parameter::Text("acme"),
            Parameter::Text("timeout"),
            Parameter::Integer(1_000_000_005),
            Parameter::Integer(i64::MAX),
            Parameter::Integer(3),
        ];
        let select = Select::of(&query, COLUMNS, question_mark);
        assert_eq!(
            select.sql,
            "SELECT id, tool FROM audit_records WHERE tool = ? AND org_id = ? AND outcome = ? \
             AND timestamp_ns >= ? AND id < ? ORDER BY id DESC LIMIT ?"
        );
        assert_eq!(select.parameters, parameters);
        let select = Select::of(&query, COLUMNS, dollar);
        assert_eq!(
            select.sql,
            "SELECT id, tool FROM audit_records WHERE tool = $1 AND org_id = $2 AND \
             outcome = $3 AND timestamp_ns >= $4 AND id < $5 ORDER BY id DESC LIMIT $6"
        );
        assert_eq!(select.parameters, parameters);
    }

    #[test]
    fn no_asks_is_null_and_null_is_no_asks() {
        assert_eq!(asks_to_sql(&[]).ok(), Some(None));
        assert_eq!(asks_from_sql(None).ok(), Some(Vec::new()));
    }

    #[test]
    fn a_switch_round_trips_through_its_json_object_and_a_call_has_none() {
        use crate::switch::SwitchAction;
        assert_eq!(switch_to_sql(None).ok(), Some(None));
        assert_eq!(switch_from_sql(None).ok(), Some(None));
        let switch = SwitchRecord {
            action: SwitchAction::Disable,
            selector: "tag:beta".to_owned(),
            changed: vec!["shop_preview".to_owned()],
        };
        let text = switch_to_sql(Some(&switch))
            .expect("a switch is JSON")
            .expect("a column");
        assert_eq!(
            text,
            r#"{"action":"disable","selector":"tag:beta","changed":["shop_preview"]}"#
        );
        assert_eq!(switch_from_sql(Some(&text)).ok(), Some(Some(switch)));
        let error = switch_from_sql(Some(r#"{"action":"toggle"}"#)).expect_err("no switch");
        assert!(
            error.to_string().starts_with("the switch column"),
            "{error}"
        );
    }

    #[test]
    fn asks_round_trip_through_their_json_array() {
        let asks = vec![
            AskRecord {
                kind: AskKind::Sampling,
                outcome: AskOutcome::Failed,
                error: Some("client_refused".to_owned()),
                request_hash: Some(Digest([1; 32])),
                answer_hash: None,
                duration_us: 7,
            },
            AskRecord {
                kind: AskKind::Form,
                outcome: AskOutcome::Accepted,
                error: None,
                request_hash: Some(Digest([2; 32])),
                answer_hash: Some(Digest([3; 32])),
                duration_us: u64::MAX,
            },
        ];
        let text = asks_to_sql(&asks)
            .expect("questions are JSON")
            .expect("a record that asked has a column");
        assert!(
            text.starts_with(r#"[{"kind":"sampling","outcome":"failed","error":"client_refused""#),
            "{text}"
        );
        assert_eq!(asks_from_sql(Some(&text)).ok(), Some(asks));
    }

    #[test]
    fn a_column_that_is_no_array_of_questions_is_an_error() {
        for text in [
            "",
            "{}",
            r#"[{"kind":"telepathy","outcome":"failed","duration_us":1}]"#,
        ] {
            let error = asks_from_sql(Some(text)).expect_err("not questions");
            assert!(
                matches!(error, AsksColumnError::Decode(_)),
                "{text}: {error}"
            );
            assert!(error.to_string().starts_with("the asks column"), "{error}");
        }
    }
}

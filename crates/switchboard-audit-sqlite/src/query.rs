//! An [`AuditQuery`] as one SQL statement: a condition per filter that is set,
//! `ORDER BY id DESC` (newest first) and the limit, run on a reader connection.
//!
//! Which index answers it is SQLite's choice: every filter that narrows a search on its own has
//! one (`schema`), and each ends with the rowid, so a single filter walks its index newest first.

use rusqlite::{Connection, params_from_iter, types::Value};
use switchboard_audit::{AuditQuery, AuditRecord};

use crate::codec::{self, COLUMNS};

/// The records matching `query`, newest first.
pub(crate) fn run(
    connection: &Connection,
    query: &AuditQuery,
) -> rusqlite::Result<Vec<AuditRecord>> {
    let select = Select::of(query);
    connection
        .prepare_cached(&select.sql)?
        .query_map(params_from_iter(&select.parameters), codec::read)?
        .collect()
}

/// A `SELECT` statement and its parameters, in order.
#[derive(Debug, PartialEq)]
struct Select {
    sql: String,
    parameters: Vec<Value>,
}

impl Select {
    /// The statement that answers `query`. Its text depends only on which filters are set, so
    /// a reader connection keeps one prepared statement per combination in use.
    fn of(query: &AuditQuery) -> Self {
        let text = |value: &str| Some(Value::Text(value.to_owned()));
        let conditions = [
            (
                "correlation_id = ?",
                query
                    .correlation_id
                    .as_ref()
                    .and_then(|id| text(id.as_str())),
            ),
            ("tool = ?", query.tool.as_deref().and_then(text)),
            (
                "org_id = ?",
                query.org_id.as_ref().and_then(|org| text(org.as_str())),
            ),
            (
                "user_id = ?",
                query.user_id.as_ref().and_then(|user| text(user.as_str())),
            ),
            (
                "outcome = ?",
                query.outcome.and_then(|outcome| text(outcome.as_str())),
            ),
            (
                "timestamp_ns >= ?",
                query
                    .since
                    .map(|since| Value::Integer(switchboard_sqlite::timestamp_to_sql(since))),
            ),
            (
                "timestamp_ns < ?",
                query
                    .until
                    .map(|until| Value::Integer(switchboard_sqlite::timestamp_to_sql(until))),
            ),
            (
                "id < ?",
                query
                    .before_id
                    .map(|id| Value::Integer(codec::id_to_sql(id))),
            ),
        ];
        let mut sql = format!("SELECT {COLUMNS} FROM audit_records");
        let mut parameters = Vec::new();
        for (condition, value) in conditions {
            let Some(value) = value else { continue };
            sql.push_str(if parameters.is_empty() {
                " WHERE "
            } else {
                " AND "
            });
            sql.push_str(condition);
            parameters.push(value);
        }
        sql.push_str(" ORDER BY id DESC");
        if let Some(limit) = query.limit {
            sql.push_str(" LIMIT ?");
            parameters.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        }
        Self { sql, parameters }
    }
}

#[cfg(test)]
mod tests {
    use switchboard_audit::Outcome;
    use switchboard_core::ErrorKind;

    use super::*;

    #[test]
    fn no_filter_reads_every_record_newest_first() {
        let select = Select::of(&AuditQuery::all());
        assert_eq!(
            select.sql,
            format!("SELECT {COLUMNS} FROM audit_records ORDER BY id DESC")
        );
        assert!(select.parameters.is_empty());
    }

    #[test]
    fn each_filter_set_is_one_condition_with_its_parameter_in_order() {
        let query = AuditQuery {
            outcome: Some(Outcome::Error(ErrorKind::Timeout)),
            before_id: Some(u64::MAX),
            ..AuditQuery::all()
                .org("acme")
                .tool("roster_list_shifts")
                .limit(3)
        };
        let select = Select::of(&query);
        assert_eq!(
            select.sql,
            format!(
                "SELECT {COLUMNS} FROM audit_records WHERE tool = ? AND org_id = ? AND \
                 outcome = ? AND id < ? ORDER BY id DESC LIMIT ?"
            )
        );
        assert_eq!(
            select.parameters,
            [
                Value::Text("roster_list_shifts".to_owned()),
                Value::Text("acme".to_owned()),
                Value::Text("timeout".to_owned()),
                Value::Integer(i64::MAX),
                Value::Integer(3),
            ]
        );
    }
}

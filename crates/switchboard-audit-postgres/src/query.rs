//! An [`AuditQuery`] as one SQL statement: a condition per filter that is set,
//! `ORDER BY id DESC` (newest first) and the limit.
//!
//! Which index answers it is PostgreSQL's choice: every filter that narrows a search on its own
//! has an index on `(column, id)` (`schema`), so a single filter walks its index backwards,
//! newest first, with no sort.

use switchboard_audit::AuditQuery;
use switchboard_postgres::tokio_postgres::types::ToSql;

use crate::codec::{self, COLUMNS};

/// One parameter of a [`Select`]: owned, so the statement can run on the store's runtime.
pub(crate) type Parameter = Box<dyn ToSql + Send + Sync>;

/// A `SELECT` statement and its parameters, in order.
#[derive(Debug)]
pub(crate) struct Select {
    pub(crate) sql: String,
    pub(crate) parameters: Vec<Parameter>,
}

impl Select {
    /// The statement that answers `query`. Its text depends only on which filters are set, so
    /// a connection keeps one prepared statement per combination in use.
    pub(crate) fn of(query: &AuditQuery) -> Self {
        let text = |value: &str| -> Option<Parameter> {
            Some(Box::new(codec::storable(value).into_owned()))
        };
        let integer = |value: i64| -> Option<Parameter> { Some(Box::new(value)) };
        let conditions = [
            (
                "correlation_id = ",
                query
                    .correlation_id
                    .as_ref()
                    .and_then(|id| text(id.as_str())),
            ),
            ("tool = ", query.tool.as_deref().and_then(text)),
            (
                "org_id = ",
                query.org_id.as_ref().and_then(|org| text(org.as_str())),
            ),
            (
                "user_id = ",
                query.user_id.as_ref().and_then(|user| text(user.as_str())),
            ),
            (
                "outcome = ",
                query.outcome.and_then(|outcome| text(outcome.as_str())),
            ),
            (
                "timestamp_ns >= ",
                query
                    .since
                    .and_then(|since| integer(codec::timestamp_to_sql(since))),
            ),
            (
                "timestamp_ns < ",
                query
                    .until
                    .and_then(|until| integer(codec::timestamp_to_sql(until))),
            ),
            (
                "id < ",
                query.before_id.and_then(|id| integer(codec::id_to_sql(id))),
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
            parameters.push(value);
            sql.push_str(condition);
            sql.push_str(&format!("${}", parameters.len()));
        }
        sql.push_str(" ORDER BY id DESC");
        if let Some(limit) = query.limit {
            parameters.push(Box::new(i64::try_from(limit).unwrap_or(i64::MAX)));
            sql.push_str(&format!(" LIMIT ${}", parameters.len()));
        }
        Self { sql, parameters }
    }

    /// The parameters as the client takes them.
    pub(crate) fn parameters(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.parameters
            .iter()
            .map(|parameter| parameter.as_ref() as &(dyn ToSql + Sync))
            .collect()
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
                "SELECT {COLUMNS} FROM audit_records WHERE tool = $1 AND org_id = $2 AND \
                 outcome = $3 AND id < $4 ORDER BY id DESC LIMIT $5"
            )
        );
        let shown: Vec<String> = select
            .parameters
            .iter()
            .map(|parameter| format!("{parameter:?}"))
            .collect();
        assert_eq!(
            shown,
            [
                "\"roster_list_shifts\"",
                "\"acme\"",
                "\"timeout\"",
                &i64::MAX.to_string(),
                "3"
            ]
        );
    }
}

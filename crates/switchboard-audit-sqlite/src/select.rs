//! An [`AuditQuery`] as SQL: one `SELECT` whose `WHERE` holds a condition per filter that is
//! set, newest first, with every value bound as a parameter (never spliced into the text).
//!
//! The statement text depends only on which filters are set, so the prepared-statement cache
//! holds at most one statement per combination in use. Every filter is an exact comparison
//! under SQLite's default binary collation: an org id matches itself only, never a prefix, a
//! pattern or another case. Each single-column filter has an index whose entries end with the
//! id (see the schema), so `ORDER BY id DESC LIMIT n` reads n index entries and no more.

use rusqlite::types::Value;
use switchboard_audit::AuditQuery;

use crate::codec::{COLUMNS, id_to_sql, timestamp_to_sql};

/// The SQL text and its parameters, in order.
#[derive(Debug, PartialEq)]
pub(crate) struct Select {
    pub(crate) sql: String,
    pub(crate) parameters: Vec<Value>,
}

/// The `SELECT` that answers `query`.
pub(crate) fn select(query: &AuditQuery) -> Select {
    let mut conditions: Vec<&str> = Vec::new();
    let mut parameters: Vec<Value> = Vec::new();
    let mut text = |condition: &'static str, value: Option<&str>| {
        if let Some(value) = value {
            conditions.push(condition);
            parameters.push(Value::Text(value.to_owned()));
        }
    };
    text(
        "correlation_id = ?",
        query.correlation_id.as_ref().map(|id| id.as_str()),
    );
    text("tool = ?", query.tool.as_deref());
    text("org_id = ?", query.org_id.as_ref().map(|id| id.as_str()));
    text("user_id = ?", query.user_id.as_ref().map(|id| id.as_str()));
    text("outcome = ?", query.outcome.map(|outcome| outcome.as_str()));
    let mut integer = |condition: &'static str, value: Option<i64>| {
        if let Some(value) = value {
            conditions.push(condition);
            parameters.push(Value::Integer(value));
        }
    };
    integer("timestamp_ns >= ?", query.since.map(timestamp_to_sql));
    integer("timestamp_ns < ?", query.until.map(timestamp_to_sql));
    integer("id < ?", query.before_id.map(id_to_sql));
    let mut sql = format!("SELECT id, {COLUMNS} FROM audit_records");
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    sql.push_str(" ORDER BY id DESC");
    if let Some(limit) = query.limit {
        sql.push_str(" LIMIT ?");
        parameters.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    }
    Select { sql, parameters }
}

#[cfg(test)]
mod tests {
    use switchboard_audit::Outcome;
    use switchboard_core::ErrorKind;

    use super::*;

    /// `EXPLAIN QUERY PLAN` of the `SELECT` for `query`, one line per step.
    fn plan(connection: &rusqlite::Connection, query: &AuditQuery) -> String {
        let statement = select(query);
        let mut explain = connection
            .prepare(&format!("EXPLAIN QUERY PLAN {}", statement.sql))
            .expect("the statement prepares");
        let steps: Vec<String> = explain
            .query_map(rusqlite::params_from_iter(&statement.parameters), |row| {
                row.get::<_, String>(3)
            })
            .expect("explains")
            .collect::<Result<_, _>>()
            .expect("reads the plan");
        steps.join("; ")
    }

    #[test]
    fn filtered_queries_walk_an_index_newest_first_without_sorting() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("audit.db");
        drop(crate::SqliteAuditStore::open(&path).expect("opens"));
        let connection = rusqlite::Connection::open(&path).expect("plain SQLite opens it");
        let cases = [
            (
                AuditQuery::correlation("c").limit(50),
                "audit_records_by_correlation",
            ),
            (
                AuditQuery::all().org("acme").limit(50),
                "audit_records_by_org",
            ),
            (
                AuditQuery::all().tool("t").limit(50),
                "audit_records_by_tool",
            ),
            (
                AuditQuery {
                    before_id: Some(1_000),
                    user_id: Some("alice".into()),
                    ..AuditQuery::all().org("acme").limit(50)
                },
                "audit_records_by_org",
            ),
        ];
        for (query, index) in cases {
            let plan = plan(&connection, &query);
            assert!(plan.contains(index), "{query:?} should use {index}: {plan}");
            assert!(
                !plan.contains("TEMP B-TREE"),
                "{query:?} should not sort: {plan}"
            );
        }
        let recent = plan(&connection, &AuditQuery::all().limit(50));
        assert!(
            !recent.contains("TEMP B-TREE"),
            "newest first is rowid order: {recent}"
        );
    }

    #[test]
    fn only_the_filters_that_are_set_become_conditions() {
        let all = select(&AuditQuery::all());
        assert!(all.sql.ends_with("FROM audit_records ORDER BY id DESC"));
        assert!(all.parameters.is_empty());

        let query = AuditQuery {
            outcome: Some(Outcome::Error(ErrorKind::Timeout)),
            before_id: Some(42),
            ..AuditQuery::all().org("acme' OR '1'='1").limit(5)
        };
        let scoped = select(&query);
        assert!(
            scoped
                .sql
                .ends_with("WHERE org_id = ? AND outcome = ? AND id < ? ORDER BY id DESC LIMIT ?"),
            "{}",
            scoped.sql
        );
        assert_eq!(
            scoped.parameters,
            [
                Value::Text("acme' OR '1'='1".to_owned()),
                Value::Text("timeout".to_owned()),
                Value::Integer(42),
                Value::Integer(5),
            ]
        );
    }
}

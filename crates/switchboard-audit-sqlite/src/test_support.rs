//! What the unit tests share: a database with the current schema, and its query plans.

use rusqlite::{Connection, types::Value};

/// A new database with the current schema (made by the store), opened with plain SQLite; the
/// directory goes away with the returned guard.
pub(crate) fn database() -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.db");
    drop(crate::SqliteAuditStore::open(&path).expect("opens"));
    let connection = Connection::open(&path).expect("plain SQLite opens it");
    (dir, connection)
}

/// `EXPLAIN QUERY PLAN` of `sql`, one line per step, `; `-separated; `parameters` beyond the
/// statement's own are ignored.
pub(crate) fn explain(connection: &Connection, sql: &str, parameters: &[Value]) -> String {
    let mut explain = connection
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .expect("the statement prepares");
    let parameters = &parameters[..explain.parameter_count().min(parameters.len())];
    let steps: Vec<String> = explain
        .query_map(rusqlite::params_from_iter(parameters), |row| {
            row.get::<_, String>(3)
        })
        .expect("explains")
        .collect::<Result<_, _>>()
        .expect("reads the plan");
    steps.join("; ")
}

//! The SQLite store against the in-memory table as a model, on random histories
//! (`switchboard_audit::conformance::model`): both stores get the same batches, retention
//! sweeps and queries and must give the same answers, record for record, and the file
//! reopened answers the same.

use proptest::prelude::*;
use switchboard_audit::conformance::model;
use switchboard_audit_sqlite::{SqliteAuditStore, SqliteOptions, Synchronous};

fn sqlite_store(dir: &tempfile::TempDir) -> SqliteAuditStore {
    // NORMAL changes when commits are flushed, never what is read; it keeps the test fast.
    let options = SqliteOptions::default().synchronous(Synchronous::Normal);
    SqliteAuditStore::open_with(dir.path().join("audit.db"), options).expect("the store opens")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn answers_like_the_in_memory_table(
        steps in model::history(),
        questions in prop::collection::vec(model::question(), 24),
    ) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        model::answers_like_the_in_memory_table(
            sqlite_store(&dir),
            || sqlite_store(&dir),
            steps,
            &questions,
        )?;
    }
}

//! The run store conformance suite (`switchboard_workflows::conformance`) against the SQLite
//! store, on a new file per check: the same checks the in-memory store passes, unchanged. Run
//! once with the default `synchronous = NORMAL` and once with `FULL`, which changes only when
//! commits are flushed, never what the store answers.

use crate::common::fresh_store;
use switchboard_workflows_sqlite::SqliteOptions;

switchboard_workflows::run_store_conformance!(|| fresh_store(SqliteOptions::default()));

mod synchronous_full {
    use super::*;
    use switchboard_workflows_sqlite::Synchronous;

    switchboard_workflows::run_store_conformance!(|| fresh_store(
        SqliteOptions::default().synchronous(Synchronous::Full)
    ));
}

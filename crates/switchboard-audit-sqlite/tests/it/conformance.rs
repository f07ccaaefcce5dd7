//! The store conformance suite (`switchboard_audit::conformance`) against the SQLite store, on
//! a new file per check: the same checks the in-memory table passes, unchanged. Run once with
//! the default `synchronous = FULL` and once with `NORMAL`, which changes only when commits are
//! flushed, never what a query sees.

use std::sync::Arc;

use crate::common::{TempStore, fresh_store};
use switchboard_audit_sqlite::{SqliteOptions, Synchronous};

switchboard_audit::audit_store_conformance!(|| fresh_store(SqliteOptions::default()));

mod synchronous_normal {
    use super::*;

    fn fresh() -> Arc<TempStore> {
        fresh_store(SqliteOptions::default().synchronous(Synchronous::Normal))
    }

    switchboard_audit::audit_store_conformance!(fresh);
}

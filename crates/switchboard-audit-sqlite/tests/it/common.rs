//! What the SQLite store's test files share: a store on a file in a temporary directory that
//! lives exactly as long as the store, and the suite's sample record.

use std::sync::Arc;

use switchboard_audit::conformance::Guarded;
pub(crate) use switchboard_audit::conformance::{call_record as record, correlation_digest};
use switchboard_audit_sqlite::{SqliteAuditStore, SqliteOptions};
use tempfile::TempDir;

/// A SQLite store whose temporary directory is deleted when the store is dropped.
pub(crate) type TempStore = Guarded<SqliteAuditStore, TempDir>;

/// A fresh store on `audit.db` in a new temporary directory, shared.
pub(crate) fn fresh_store(options: SqliteOptions) -> Arc<TempStore> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteAuditStore::open_with(dir.path().join("audit.db"), options)
        .expect("a new audit database opens");
    Arc::new(Guarded::new(store, dir))
}

//! What the test files share: a store on a file in a temporary directory that lives exactly as
//! long as the store, so the conformance suite can make fresh ones at will.

use std::sync::Arc;

use switchboard_workflows::conformance::Guarded;
use switchboard_workflows_sqlite::{SqliteOptions, SqliteRunStore};
use tempfile::TempDir;

/// A SQLite run store whose directory is deleted with it.
pub(crate) type TempRunStore = Guarded<SqliteRunStore, TempDir>;

/// A store with `options` on a file in a new temporary directory.
pub(crate) fn fresh_store(options: SqliteOptions) -> Arc<TempRunStore> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteRunStore::open_with(dir.path().join("workflows.db"), options)
        .expect("a new workflows database opens");
    Arc::new(Guarded::new(store, dir))
}

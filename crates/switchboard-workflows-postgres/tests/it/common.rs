//! What the test files share: a store on a fresh database that is dropped with it, so the
//! conformance suite can make fresh ones at will, and the suite's fixtures the other tests
//! write.

use std::sync::Arc;

use switchboard_test_postgres::{TestDatabase, test_database};
use switchboard_workflows::conformance::Guarded;
pub(crate) use switchboard_workflows::conformance::fixtures::{resumed, running_run as run};
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore};

/// A fresh database on the test server.
pub(crate) fn fresh_database() -> TestDatabase {
    tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(test_database())
        .expect("a test database (run the tests through `cargo xtask test`)")
}

/// A PostgreSQL run store whose database is dropped with it.
pub(crate) type TempRunStore = Guarded<PostgresRunStore, TestDatabase>;

/// A store on a fresh database.
pub(crate) fn fresh_store() -> Arc<TempRunStore> {
    let database = fresh_database();
    let store = PostgresRunStore::open(&PostgresOptions::new(database.url()))
        .expect("a new workflows database opens");
    Arc::new(Guarded::new(store, database))
}

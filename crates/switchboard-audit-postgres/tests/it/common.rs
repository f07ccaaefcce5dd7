//! What the PostgreSQL store's test files share: a store on a fresh database that lives exactly
//! as long as the store, and the suite's sample record.

use std::sync::Arc;

use switchboard_audit::conformance::Guarded;
pub(crate) use switchboard_audit::conformance::{call_record as record, correlation_digest};
use switchboard_audit_postgres::PostgresAuditStore;
use switchboard_test_postgres::TestDatabase;

/// A fresh, empty database on the shared test server.
pub(crate) fn fresh_database() -> TestDatabase {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(switchboard_test_postgres::test_database())
        .expect("a test database (run the tests through `cargo xtask test`)")
}

/// A PostgreSQL store whose database is dropped when the store is dropped.
pub(crate) type TestStore = Guarded<PostgresAuditStore, TestDatabase>;

/// A fresh store on a fresh database.
pub(crate) fn test_store() -> TestStore {
    let database = fresh_database();
    let store = PostgresAuditStore::open(database.url()).expect("a new audit database opens");
    Guarded::new(store, database)
}

/// A fresh store on a fresh database, shared.
pub(crate) fn fresh_store() -> Arc<TestStore> {
    Arc::new(test_store())
}

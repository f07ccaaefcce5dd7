//! What the PostgreSQL store's test files share: a store on a fresh database that lives exactly
//! as long as the store, and sample records.

use std::sync::Arc;

use jiff::Timestamp;
use switchboard_audit::{
    AuditError, AuditQuery, AuditRecord, AuditStats, AuditStore, Digest, Outcome, digest_json,
};
use switchboard_audit_postgres::PostgresAuditStore;
use switchboard_core::{Category, Initiator};
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
#[derive(Debug)]
pub(crate) struct TestStore {
    pub(crate) store: PostgresAuditStore,
    // Declared after the store, so dropped after it: the store's connections close first.
    pub(crate) database: TestDatabase,
}

impl TestStore {
    /// A fresh store on a fresh database.
    pub(crate) fn new() -> Self {
        let database = fresh_database();
        let store = PostgresAuditStore::open(database.url()).expect("a new audit database opens");
        Self { store, database }
    }

    /// A fresh store, shared.
    pub(crate) fn fresh() -> Arc<Self> {
        Arc::new(Self::new())
    }
}

impl AuditStore for TestStore {
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        self.store.append_batch(records)
    }

    fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        self.store.query(query)
    }

    fn delete_before(&self, cutoff: Timestamp, limit: usize) -> Result<u64, AuditError> {
        self.store.delete_before(cutoff, limit)
    }

    fn stats(&self) -> AuditStats {
        self.store.stats()
    }
}

/// A successful call's record, with `correlation_id`; the input digest is the digest of
/// `{"correlation": correlation_id}`, so a record read back can be checked against its id.
pub(crate) fn record(correlation_id: &str) -> AuditRecord {
    AuditRecord {
        node: None,
        id: 0,
        timestamp: Timestamp::now(),
        tool: "core_get_current_user".into(),
        domain: Some("core".into()),
        category: Some(Category::Read),
        org_id: Some("acme".into()),
        user_id: Some("alice".into()),
        session_id: Some("postgres".into()),
        correlation_id: Some(correlation_id.into()),
        initiator: Initiator::Human,
        input_hash: Some(input_digest(correlation_id)),
        output_hash: None,
        digest_error: None,
        duration_us: 12,
        outcome: Outcome::Ok,
        action: None,
    }
}

/// The input digest [`record`] gives a correlation id.
pub(crate) fn input_digest(correlation_id: &str) -> Digest {
    digest_json(&serde_json::json!({ "correlation": correlation_id })).expect("JSON has a digest")
}

//! What the SQLite store's test files share: a store on a file in a temporary directory that
//! lives exactly as long as the store.

use std::sync::Arc;

use jiff::Timestamp;
use switchboard_audit::{
    AuditError, AuditQuery, AuditRecord, AuditStats, AuditStore, Digest, Outcome, digest_json,
};
use switchboard_audit_sqlite::{SqliteAuditStore, SqliteOptions};
use switchboard_core::{Category, Initiator};
use tempfile::TempDir;

/// A SQLite store whose temporary directory is deleted when the store is dropped.
#[derive(Debug)]
pub(crate) struct TempStore {
    pub(crate) store: SqliteAuditStore,
    _dir: TempDir,
}

impl TempStore {
    /// A fresh store on `audit.db` in a new temporary directory.
    pub(crate) fn new(options: SqliteOptions) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = SqliteAuditStore::open_with(dir.path().join("audit.db"), options)
            .expect("a new audit database opens");
        Self { store, _dir: dir }
    }

    /// A fresh store with the default options, shared.
    pub(crate) fn fresh() -> Arc<Self> {
        Arc::new(Self::new(SqliteOptions::default()))
    }
}

impl AuditStore for TempStore {
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
        session_id: Some("durability".into()),
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

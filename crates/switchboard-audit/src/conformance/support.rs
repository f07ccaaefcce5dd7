//! What a store's own tests share besides the suite: [`Guarded`], a store under test together
//! with what it needs kept alive (its temporary directory, its test database), so that the
//! tests hand the suite one value that cleans up after itself; [`WrappedStore`], a store made
//! of another one that changes only the operations a test overrides (to refuse, hold or count
//! them), so that such a test store does not write out the whole trait; and [`call_record`], a
//! record whose input digest tells which call it was.

use jiff::Timestamp;
use switchboard_core::{Category, Digest, Initiator, digest_json};

use crate::{
    record::{AuditRecord, Outcome},
    store::{AuditError, AuditQuery, AuditStats, AuditStore, BatchKey},
};

/// A store and its guard: every operation is the store's, and the guard is dropped after the
/// store, so the store closes before its file or database goes.
#[derive(Debug)]
pub struct Guarded<S, G> {
    store: S,
    guard: G,
}

impl<S: AuditStore, G: Send + Sync + 'static> Guarded<S, G> {
    /// `store`, keeping `guard` alive as long as it.
    pub fn new(store: S, guard: G) -> Self {
        Self { store, guard }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// What the store needs kept alive.
    pub fn guard(&self) -> &G {
        &self.guard
    }
}

impl<S: AuditStore, G: Send + Sync + 'static> WrappedStore for Guarded<S, G> {
    fn inner(&self) -> &dyn AuditStore {
        &self.store
    }

    fn append_keyed_batch(
        &self,
        key: BatchKey,
        records: &mut [AuditRecord],
    ) -> Result<(), AuditError> {
        self.store.append_keyed_batch(key, records)
    }
}

/// An audit store that forwards every operation to [`inner`](Self::inner), except those its
/// implementation overrides; every `WrappedStore` is an [`AuditStore`].
///
/// Implement it by path (`impl conformance::WrappedStore for MyStore`) rather than importing
/// it where the wrapper is also used as an [`AuditStore`]: with both traits in scope, a method
/// call on the wrapper is ambiguous.
pub trait WrappedStore: Send + Sync + 'static {
    /// The store the operations not overridden go to.
    fn inner(&self) -> &dyn AuditStore;

    /// [`AuditStore::append_batch`], the inner store's unless overridden.
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        self.inner().append_batch(records)
    }

    /// [`AuditStore::append_keyed_batch`]: unless overridden, the wrapper's own
    /// [`append_batch`](Self::append_batch), ignoring the key (as the trait's default does),
    /// so that an overridden `append_batch` holds for the audit writer's appends too. A
    /// wrapper of a store that keeps its batches' keys overrides it to forward them.
    fn append_keyed_batch(
        &self,
        key: BatchKey,
        records: &mut [AuditRecord],
    ) -> Result<(), AuditError> {
        let _ = key;
        WrappedStore::append_batch(self, records)
    }

    /// [`AuditStore::query`], the inner store's unless overridden.
    fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        self.inner().query(query)
    }

    /// [`AuditStore::delete_before`], the inner store's unless overridden.
    fn delete_before(&self, cutoff: Timestamp, limit: usize) -> Result<u64, AuditError> {
        self.inner().delete_before(cutoff, limit)
    }

    /// [`AuditStore::stats`], the inner store's unless overridden.
    fn stats(&self) -> AuditStats {
        self.inner().stats()
    }
}

impl<W: WrappedStore> AuditStore for W {
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        WrappedStore::append_batch(self, records)
    }

    fn append_keyed_batch(
        &self,
        key: BatchKey,
        records: &mut [AuditRecord],
    ) -> Result<(), AuditError> {
        WrappedStore::append_keyed_batch(self, key, records)
    }

    fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        WrappedStore::query(self, query)
    }

    fn delete_before(&self, cutoff: Timestamp, limit: usize) -> Result<u64, AuditError> {
        WrappedStore::delete_before(self, cutoff, limit)
    }

    fn stats(&self) -> AuditStats {
        WrappedStore::stats(self)
    }
}

/// A successful call's record, with `correlation_id` and timestamped now; its input digest is
/// [`correlation_digest`] of the correlation id, so a record read back can be checked against
/// it.
pub fn call_record(correlation_id: &str) -> AuditRecord {
    AuditRecord {
        asks: Vec::new(),
        switch: None,
        node: None,
        id: 0,
        timestamp: Timestamp::now(),
        tool: "core_get_current_user".into(),
        domain: Some("core".into()),
        category: Some(Category::Read),
        org_id: Some("acme".into()),
        user_id: Some("alice".into()),
        session_id: Some("store-tests".into()),
        correlation_id: Some(correlation_id.into()),
        initiator: Initiator::Human,
        input_hash: correlation_digest(correlation_id),
        output_hash: None,
        digest_error: None,
        duration_us: 12,
        outcome: Outcome::Ok,
        action: None,
    }
}

/// The input digest [`call_record`] gives a correlation id: the digest of
/// `{"correlation": correlation_id}`.
pub fn correlation_digest(correlation_id: &str) -> Option<Digest> {
    digest_json(&serde_json::json!({ "correlation": correlation_id })).ok()
}

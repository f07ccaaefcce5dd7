//! The `AuditStore` trait: where records go, and how they are found again.
//!
//! The registry never calls a store from a caller's task: records reach it through the
//! [`AuditLog`](crate::AuditLog)'s writer thread, in batches. So the trait is synchronous and
//! may block (a disk, a transaction), and a persistent store replaces the in-memory one at
//! startup without the registry changing.

use std::sync::Arc;

use jiff::Timestamp;
use serde::Serialize;
use switchboard_core::{CorrelationId, OrgId, UserId};

use crate::record::{AuditId, AuditRecord, Outcome};

/// Why a store could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The store cannot take records now (closed, full under a fail-fast policy, broken).
    #[error("the audit store is unavailable: {0}")]
    Unavailable(String),
    /// A query was malformed.
    #[error("invalid audit query: {0}")]
    InvalidQuery(String),
    /// The log refuses a call before it runs: its writer is retrying a batch the store failed
    /// to take, and the log's durability is strict (or its queue is full). Nothing ran.
    #[error("the audit store is failing ({0})")]
    StoreFailing(String),
    /// A strict record was not written in time (the store failed, or did not answer within
    /// [`AuditConfig::strict_timeout`](crate::AuditConfig::strict_timeout)). The call it
    /// records has run; the record is kept by the writer, which writes it once the store takes
    /// it again.
    #[error(
        "its record is not written yet ({0}); the audit writer keeps it and writes it once the \
         store is back"
    )]
    NotWrittenYet(String),
}

/// The key of one batch, the same across every attempt the audit writer makes at it, so that a
/// store can tell a retry from a new batch: an attempt that timed out may still have
/// committed, and its retry must then not store the batch again.
///
/// A UUID version 7: keys minted later sort higher (to the millisecond), so a store can forget
/// the keys older than an age with one range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BatchKey(uuid::Uuid);

impl BatchKey {
    /// A new key, unique to this batch.
    #[must_use]
    pub fn new() -> Self {
        Self(uuid::Uuid::now_v7())
    }

    /// The lowest key minted at `at` (every key minted later is higher): where a store's
    /// forgetting of old keys stops.
    #[must_use]
    pub fn first_at(at: Timestamp) -> Self {
        let millis = u64::try_from(at.as_millisecond()).unwrap_or(0);
        Self(uuid::Builder::from_unix_timestamp_millis(millis, &[0; 10]).into_uuid())
    }

    /// The key's sixteen bytes, in order (big-endian time first).
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
}

impl Default for BatchKey {
    fn default() -> Self {
        Self::new()
    }
}

/// The hyphenated UUID (`0193…-…`).
impl std::fmt::Display for BatchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// Which records to return. Every filter that is set must match; results are newest first.
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct AuditQuery {
    /// Only records of this correlation id.
    pub correlation_id: Option<CorrelationId>,
    /// Only records of this tool.
    pub tool: Option<String>,
    /// Only records of this tenant.
    pub org_id: Option<OrgId>,
    /// Only records of this user.
    pub user_id: Option<UserId>,
    /// Only records with this outcome.
    pub outcome: Option<Outcome>,
    /// Only records at or after this time.
    pub since: Option<Timestamp>,
    /// Only records before this time.
    pub until: Option<Timestamp>,
    /// Only records with an id below this one (the cursor for the next page).
    pub before_id: Option<AuditId>,
    /// At most this many records (default: all).
    pub limit: Option<usize>,
}

impl AuditQuery {
    /// Matches every record.
    pub fn all() -> Self {
        Self::default()
    }

    /// Records of one correlation id.
    pub fn correlation(correlation_id: impl Into<CorrelationId>) -> Self {
        Self {
            correlation_id: Some(correlation_id.into()),
            ..Self::default()
        }
    }

    /// Records of one tool.
    pub fn tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// Records of one tenant.
    pub fn org(mut self, org_id: impl Into<OrgId>) -> Self {
        self.org_id = Some(org_id.into());
        self
    }

    /// Records in `[since, until)`.
    pub fn between(mut self, since: Timestamp, until: Timestamp) -> Self {
        self.since = Some(since);
        self.until = Some(until);
        self
    }

    /// At most `limit` records.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Whether `record` passes every filter.
    pub fn matches(&self, record: &AuditRecord) -> bool {
        self.correlation_id
            .as_ref()
            .is_none_or(|id| record.correlation_id.as_ref() == Some(id))
            && self
                .tool
                .as_deref()
                .is_none_or(|tool| &*record.tool == tool)
            && self
                .org_id
                .as_ref()
                .is_none_or(|org| record.org_id.as_ref() == Some(org))
            && self
                .user_id
                .as_ref()
                .is_none_or(|user| record.user_id.as_ref() == Some(user))
            && self.outcome.is_none_or(|outcome| record.outcome == outcome)
            && self.since.is_none_or(|since| record.timestamp >= since)
            && self.until.is_none_or(|until| record.timestamp < until)
            && self.before_id.is_none_or(|before| record.id < before)
    }
}

/// Counters a store exposes, so that nothing it drops goes unseen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AuditStats {
    /// Records appended since the store was opened.
    pub appended: u64,
    /// Records held now.
    pub held: u64,
    /// Records evicted to respect a capacity bound (each counted, none silently).
    pub evicted: u64,
    /// Records deleted by the retention sweep since the store was opened.
    pub expired: u64,
    /// The capacity bound, if any.
    pub capacity: Option<u64>,
}

/// Where audit records go.
///
/// Implementations are called from the audit writer's thread (appends, retention) and from
/// blocking tasks (queries), never on an async worker, so they may block. Every conforming store
/// passes the shared suite in `switchboard_audit::conformance` (feature `conformance`).
pub trait AuditStore: Send + Sync + 'static {
    /// Appends `records` in order, assigning each its id (`record.id`, increasing in append
    /// order). Returns once the store holds them as durably as it ever will: a persistent store
    /// returns after its transaction commits. On error none of the records may be half-written:
    /// the writer retries the whole batch.
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError>;

    /// [`append_batch`](Self::append_batch) of the batch known by `key`: the audit writer's
    /// append, with the same key on every attempt at one batch. A store whose failed attempt
    /// may still commit afterwards (a network database: the attempt timed out on this side, and
    /// the server went on) must store the batch at most once per key: an attempt whose key is
    /// already stored gives the records the ids they got then, and stores nothing. A store
    /// whose failed attempt never commits may ignore the key, which is what this default does.
    fn append_keyed_batch(
        &self,
        key: BatchKey,
        records: &mut [AuditRecord],
    ) -> Result<(), AuditError> {
        let _ = key;
        self.append_batch(records)
    }

    /// Records matching `query`, newest first.
    fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError>;

    /// Deletes at most `limit` records timestamped before `cutoff`, oldest first, and returns how
    /// many it deleted. The retention sweep calls it in small steps between batches, so a
    /// sweep never holds up appends for long.
    fn delete_before(&self, cutoff: Timestamp, limit: usize) -> Result<u64, AuditError>;

    /// The store's counters.
    fn stats(&self) -> AuditStats;
}

impl<S: AuditStore + ?Sized> AuditStore for Arc<S> {
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        (**self).append_batch(records)
    }

    fn append_keyed_batch(
        &self,
        key: BatchKey,
        records: &mut [AuditRecord],
    ) -> Result<(), AuditError> {
        (**self).append_keyed_batch(key, records)
    }

    fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        (**self).query(query)
    }

    fn delete_before(&self, cutoff: Timestamp, limit: usize) -> Result<u64, AuditError> {
        (**self).delete_before(cutoff, limit)
    }

    fn stats(&self) -> AuditStats {
        (**self).stats()
    }
}

//! The `AuditStore` trait: where records go, and how they are found again.
//!
//! The registry writes through this trait and nothing else, so a persistent store replaces
//! the in-memory one at startup without the registry changing. Appending returns
//! [`Appended::Done`] when the store finished synchronously (the in-memory table always does,
//! at no allocation), or a future when it must wait (for a disk, a batch, a full queue).

use std::{fmt, sync::Arc};

use jiff::Timestamp;
use serde::Serialize;
use switchboard_core::{BoxFuture, CorrelationId, OrgId, UserId};

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
}

/// The result of an append: finished now, or a future to await.
pub enum Appended {
    /// The store finished the append synchronously.
    Done(Result<AuditId, AuditError>),
    /// The store finishes the append later; the record is acknowledged when this resolves.
    /// The future owns what it needs (`'static`), so whoever holds it can move it to a task
    /// rather than drop it: dropping it may abandon the record.
    Pending(BoxFuture<'static, Result<AuditId, AuditError>>),
}

impl Appended {
    /// Waits for the append to be acknowledged.
    pub async fn acknowledged(self) -> Result<AuditId, AuditError> {
        match self {
            Appended::Done(result) => result,
            Appended::Pending(future) => future.await,
        }
    }
}

impl fmt::Debug for Appended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Appended::Done(result) => f.debug_tuple("Done").field(result).finish(),
            Appended::Pending(_) => f.write_str("Pending"),
        }
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
    /// Records appended since the store was created.
    pub appended: u64,
    /// Records held now.
    pub held: u64,
    /// Records evicted to respect a capacity bound (each counted, none silently).
    pub evicted: u64,
    /// The capacity bound, if any.
    pub capacity: Option<u64>,
}

/// Where audit records go.
pub trait AuditStore: Send + Sync + 'static {
    /// Appends a record; `record.id` is assigned by the store and returned.
    fn append(&self, record: AuditRecord) -> Appended;

    /// Records matching `query`, newest first.
    fn query(&self, query: &AuditQuery) -> BoxFuture<'_, Result<Vec<AuditRecord>, AuditError>>;

    /// The store's counters.
    fn stats(&self) -> AuditStats;
}

impl<S: AuditStore + ?Sized> AuditStore for Arc<S> {
    fn append(&self, record: AuditRecord) -> Appended {
        (**self).append(record)
    }

    fn query(&self, query: &AuditQuery) -> BoxFuture<'_, Result<Vec<AuditRecord>, AuditError>> {
        (**self).query(query)
    }

    fn stats(&self) -> AuditStats {
        (**self).stats()
    }
}

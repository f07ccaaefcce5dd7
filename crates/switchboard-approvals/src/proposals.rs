//! Proposals: a mutation an agent asked for, stored instead of run, until a human decides.
//!
//! A [`Proposal`] keeps everything needed to run the target later exactly as validated: the
//! tool, the params (already checked against its input), a summary for the approver, who
//! proposed it and in which thread and project, and when it expires. Its [`ProposalStatus`]
//! leaves `pending` exactly once — approved, rejected, expired or withdrawn — through
//! [`ProposalStore::decide`], a compare-and-set, so two approvers racing cannot both win and a
//! decision is final. A proposal is withdrawn when whoever asked for it no longer wants it (a
//! workflow run cancelled or failed while its step waited for the decision): approving it
//! afterwards is refused like approving any closed proposal.

use std::sync::Arc;

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;
use switchboard_core::{
    AgentType, CorrelationId, Initiator, OrgId, ProjectId, ProposalId, SessionId, ThreadId, UserId,
};

/// Who proposed, and in which context; the approval runs in the same thread and project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proposer {
    /// The user the proposing call ran for.
    pub user_id: UserId,
    /// Its session.
    pub session_id: SessionId,
    /// Its request.
    pub correlation_id: CorrelationId,
    /// Human or agent.
    pub initiator: Initiator,
    /// The agent type, when an agent proposed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<AgentType>,
    /// The thread it was proposed in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<ThreadId>,
    /// The project it was proposed in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<ProjectId>,
}

/// Where a proposal stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ProposalStatus {
    /// Awaiting a decision.
    Pending,
    /// Approved; the target ran (or is running) once, as `by`.
    Approved {
        /// The approver.
        by: UserId,
        /// When.
        at: Timestamp,
        /// How the run ended: `ok` or an error kind; absent while it runs.
        #[serde(skip_serializing_if = "Option::is_none")]
        outcome: Option<String>,
    },
    /// Rejected, with feedback for the proposer.
    Rejected {
        /// Who rejected it.
        by: UserId,
        /// When.
        at: Timestamp,
        /// Why.
        feedback: String,
    },
    /// Nobody decided in time.
    Expired {
        /// When it was found expired.
        at: Timestamp,
    },
    /// Withdrawn before anyone decided: its proposer no longer wants it.
    Withdrawn {
        /// Who withdrew it.
        by: UserId,
        /// When.
        at: Timestamp,
        /// Why, for the approvers.
        reason: String,
    },
}

impl ProposalStatus {
    /// `pending`, `approved`, `rejected`, `expired` or `withdrawn`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            ProposalStatus::Pending => "pending",
            ProposalStatus::Approved { .. } => "approved",
            ProposalStatus::Rejected { .. } => "rejected",
            ProposalStatus::Expired { .. } => "expired",
            ProposalStatus::Withdrawn { .. } => "withdrawn",
        }
    }

    /// Whether a decision can still be made.
    pub const fn is_pending(&self) -> bool {
        matches!(self, ProposalStatus::Pending)
    }
}

/// A stored proposal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proposal {
    /// Its id; also the action id of its records and the idempotency key of its run.
    pub id: ProposalId,
    /// The tenant: only its members see or decide it.
    pub org_id: OrgId,
    /// The tool to run on approval (execute or restricted).
    pub tool: Arc<str>,
    /// The validated params.
    pub params: Arc<Value>,
    /// What it would do, for the approver.
    pub summary: String,
    /// Who proposed it.
    pub proposer: Proposer,
    /// When it was stored.
    pub created_at: Timestamp,
    /// When it expires if nobody decides.
    pub expires_at: Timestamp,
    /// Where it stands.
    #[serde(flatten)]
    pub status: ProposalStatus,
}

/// A decision on a pending proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve it; the caller then runs the target.
    Approve {
        /// The approver.
        by: UserId,
    },
    /// Reject it.
    Reject {
        /// Who rejects it.
        by: UserId,
        /// Why.
        feedback: String,
    },
    /// Mark it expired (only once it is past its expiry).
    Expire,
    /// Withdraw it: whoever asked for it no longer wants it.
    Withdraw {
        /// Who withdraws it.
        by: UserId,
        /// Why.
        reason: String,
    },
}

/// Why a decision was not applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TransitionError {
    /// No such proposal in that organisation.
    #[error("no such proposal")]
    NotFound,
    /// It was decided before; here is how.
    #[error("the proposal is already {}", .0.status.as_str())]
    Closed(Box<Proposal>),
    /// It was past its expiry: it is now expired (this call made it so, exactly once).
    #[error("the proposal has expired")]
    Expired(Box<Proposal>),
    /// The store failed; the decision was not recorded.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A proposal store could not do what it was asked (its database failed). Nothing was
/// changed: a failed write leaves the store as it was, so the caller can report the failure
/// and the operation can be retried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the proposal store failed while {action}: {reason}")]
pub struct StoreError {
    /// What the store was doing, e.g. "storing proposal prop-…".
    pub action: String,
    /// The underlying error, as text.
    pub reason: String,
}

impl StoreError {
    /// A failure while doing `action`, caused by `reason`.
    pub fn new(action: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        Self {
            action: action.into(),
            reason: reason.to_string(),
        }
    }
}

/// Where proposals are kept. Every status change is a compare-and-set from `pending`.
///
/// Every operation reports a failing store as an error ([`StoreError`], or
/// [`TransitionError::Store`] for a decision) rather than as "not found" or an empty list: a
/// caller must never be told a proposal was stored, or does not exist, when the store could
/// not tell.
pub trait ProposalStore: Send + Sync + 'static {
    /// Stores a new (pending) proposal; an existing proposal with the same id is replaced.
    fn insert(&self, proposal: Proposal) -> Result<(), StoreError>;

    /// Stores `proposal` (new, pending) unless its id is taken, in one atomic step: then the
    /// proposal holding the id is returned, untouched, and nothing is stored (`None`:
    /// `proposal` was stored). An id taken in another organisation is an error, and that
    /// proposal is neither changed nor shown. This is how a proposal made under an idempotency
    /// key is made once, whatever its status since: its id derives from the key.
    fn insert_new(&self, proposal: Proposal) -> Result<Option<Proposal>, StoreError>;

    /// One proposal of `org_id`; `None` if it has no proposal with that id.
    fn get(&self, org_id: &OrgId, id: &ProposalId) -> Result<Option<Proposal>, StoreError>;

    /// The proposals of `org_id`, newest first.
    fn list(&self, org_id: &OrgId) -> Result<Vec<Proposal>, StoreError>;

    /// Applies `decision` if the proposal is pending and not past its expiry at `now`; a
    /// pending proposal past its expiry becomes expired instead ([`TransitionError::Expired`]).
    fn decide(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        decision: Decision,
        now: Timestamp,
    ) -> Result<Proposal, TransitionError>;

    /// Records how an approved proposal's run ended (`ok` or an error kind).
    fn record_outcome(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        outcome: &str,
    ) -> Result<(), StoreError>;

    /// Expires every pending proposal past its expiry at `now`, returning them (each exactly
    /// once, so the caller can audit them).
    fn expire_overdue(&self, now: Timestamp) -> Result<Vec<Proposal>, StoreError>;
}

//! Which mutation a record belongs to, and what happened to it.
//!
//! A mutating call gets an action id; its first run, every idempotent replay, and (for a
//! proposal) the proposal, its approval, rejection or expiry each leave a record carrying the
//! same [`ActionId`] with the [`ActionEvent`] that record stands for. Query by action id to see
//! a mutation's whole story; query by correlation id to see one request's.

use std::fmt;

use serde::{Serialize, Serializer};
use switchboard_core::ActionId;

/// What happened to an action in the call a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionEvent {
    /// A mutating call ran its tool (the first and only run for its idempotency key).
    Executed,
    /// A retry with a known idempotency key got the first result back; the tool did not run.
    Replayed,
    /// A proposal was stored instead of running the tool.
    Proposed,
    /// A human approved a proposal and its tool ran (the record's user is the approver).
    Approved,
    /// A human rejected a proposal.
    Rejected,
    /// A proposal expired without a decision.
    Expired,
    /// A proposal was withdrawn before anyone decided (its proposer no longer wants it).
    Withdrawn,
}

impl ActionEvent {
    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ActionEvent::Executed => "executed",
            ActionEvent::Replayed => "replayed",
            ActionEvent::Proposed => "proposed",
            ActionEvent::Approved => "approved",
            ActionEvent::Rejected => "rejected",
            ActionEvent::Expired => "expired",
            ActionEvent::Withdrawn => "withdrawn",
        }
    }
}

/// An [`ActionEvent`] name that is not one (for stores reading records back).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown action event `{0}`: expected executed, replayed, proposed, approved, rejected, expired or withdrawn"
)]
pub struct UnknownActionEvent(pub String);

impl std::str::FromStr for ActionEvent {
    type Err = UnknownActionEvent;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        [
            ActionEvent::Executed,
            ActionEvent::Replayed,
            ActionEvent::Proposed,
            ActionEvent::Approved,
            ActionEvent::Rejected,
            ActionEvent::Expired,
            ActionEvent::Withdrawn,
        ]
        .into_iter()
        .find(|event| event.as_str() == text)
        .ok_or_else(|| UnknownActionEvent(text.to_owned()))
    }
}

impl fmt::Display for ActionEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ActionEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The action a record belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct AuditAction {
    /// Shared by every record of one mutation.
    pub id: ActionId,
    /// What this record stands for.
    pub event: ActionEvent,
}

impl AuditAction {
    /// Makes an action link.
    pub fn new(id: ActionId, event: ActionEvent) -> Self {
        Self { id, event }
    }
}

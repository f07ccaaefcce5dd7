//! The statement's claims as they travel, and the constants both sides hold them to.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_core::{
    ActionId, AgentType, CorrelationId, Digest, IdempotencyKey, Initiator, OrgId, ProjectId, Role,
    SessionId, ThreadId, UserId,
};
use uuid::Uuid;

/// The JWS `typ` of an identity statement (RFC 8725 §3.11: explicit typing, so that no other
/// JWT signed with the same key passes for one).
pub const STATEMENT_TYPE: &str = "switchboard-identity+jwt";

/// How far the two nodes' clocks may disagree: a statement is accepted this long before its
/// `nbf` and after its `exp`.
pub const LEEWAY: Duration = Duration::from_secs(5);

/// The longest a statement is valid (`exp - iat`): a statement is valid for the tool's
/// timeout plus [`LEEWAY`], and never longer than this.
pub const MAX_LIFETIME: Duration = Duration::from_secs(120);

/// The claims of one statement (RFC 7519 names where one exists).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Claims {
    /// The node that signed it.
    pub(crate) iss: String,
    /// `<node>/<domain>`: the one node and domain that may accept it.
    pub(crate) aud: String,
    /// When it was signed, in seconds since the epoch.
    pub(crate) iat: u64,
    /// Not valid before, in seconds since the epoch.
    pub(crate) nbf: u64,
    /// Not valid from, in seconds since the epoch.
    pub(crate) exp: u64,
    /// Its id, a UUID v7: accepted once.
    pub(crate) jti: Uuid,
    /// The tool called.
    pub(crate) tool: String,
    /// The digest of the call's params (hex).
    pub(crate) input: Digest,
    pub(crate) correlation_id: CorrelationId,
    pub(crate) session_id: SessionId,
    pub(crate) org_id: OrgId,
    pub(crate) user_id: UserId,
    pub(crate) roles: Vec<Role>,
    pub(crate) initiator: Initiator,
    pub(crate) confirmed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent_type: Option<AgentType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) thread_id: Option<ThreadId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) project_id: Option<ProjectId>,
    /// The idempotency key the caller gave, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) idempotency_key: Option<IdempotencyKey>,
    /// For a mutation holding its key on the sender: that key (the caller's, or the one the
    /// sender derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) action_key: Option<IdempotencyKey>,
    /// For a mutation holding its key on the sender: its action id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) action_id: Option<ActionId>,
}

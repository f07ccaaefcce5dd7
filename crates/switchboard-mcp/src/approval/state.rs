//! The `requestState` of an approval asked for with an `input_required` result (2026-07-28).
//!
//! The client echoes the state back verbatim when it retries the call with the human's answer,
//! so to the server it is untrusted input. It is sealed with rmcp's [`RequestStateCodec`]
//! (HMAC-SHA256) under a key this process mints the first time it needs one and never shows
//! anyone: 48 bytes from three version-4 UUIDs (366 random bits, from the `uuid` crate's
//! cryptographically secure source, seeded by the operating system). One key per process, not per handler, because over HTTP each 2026-07-28 request
//! gets a handler of its own: the retry must open what another handler sealed. A restart
//! forgets the key, so states sealed before it are refused (the proposal stays pending).
//!
//! What it holds and what it is bound to:
//!
//! - **Sealed** (readable, not secret): the proposal id.
//! - **Bound** (associated data, not stored, must match to open): the identity answering
//!   (organisation, user, initiator, agent type, roles) and the request retried (tool name and
//!   a SHA-256 of its arguments). A state sealed for alice's request cannot be opened by a
//!   client acting as anyone else, nor for another tool or other arguments.
//! - **Expiry**: [`STATE_TTL`], or the proposal's own expiry if that is sooner.
//!
//! A state that fails any of these is refused with `-32602` and nothing is decided. One that
//! opens can still be *replayed*: the decision it leads to is a compare-and-set in the
//! proposal store, so a second use finds the proposal decided (`proposal_closed`).

use std::{
    sync::OnceLock,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use rmcp::model::{CallToolRequestParams, RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use switchboard_core::{Initiator, ProposalId};
use switchboard_registry::Proposal;

use crate::identity::Identity;

/// How long the human has to answer before the sealed state expires.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// Separates this use of the key from any other.
const DOMAIN: &[u8] = b"switchboard.mcp.approval-state.v1";

/// The process's codec, with a key minted on first use.
fn codec() -> &'static RequestStateCodec {
    static CODEC: OnceLock<RequestStateCodec> = OnceLock::new();
    CODEC.get_or_init(|| {
        let mut key = Vec::with_capacity(48);
        for _ in 0..3 {
            key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        }
        // 48 bytes: above `RequestStateCodec::MIN_KEY_LENGTH` (32), so nothing to check.
        RequestStateCodec::new_unchecked(key)
    })
}

/// The sealed payload.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    /// The proposal awaiting the answer.
    proposal: ProposalId,
}

/// What a state is bound to: who answers, and which request is retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Binding(Vec<u8>);

impl Binding {
    /// The binding of `request` made by `identity`.
    pub(crate) fn of(identity: &Identity, request: &CallToolRequestParams) -> Self {
        let mut bytes = Vec::with_capacity(256);
        let mut field = |value: &[u8]| {
            // Length-prefixed, so no two different field lists give the same bytes.
            bytes.extend_from_slice(&(value.len() as u64).to_be_bytes());
            bytes.extend_from_slice(value);
        };
        field(DOMAIN);
        field(identity.org.as_deref().unwrap_or_default().as_bytes());
        field(identity.user.as_deref().unwrap_or_default().as_bytes());
        field(match identity.initiator {
            Initiator::Human => b"human",
            Initiator::Agent => b"agent",
        });
        field(
            identity
                .agent_type
                .as_ref()
                .map_or("", |agent_type| agent_type.as_str())
                .as_bytes(),
        );
        let mut roles: Vec<&str> = identity.roles.iter().map(|role| role.as_str()).collect();
        roles.sort_unstable();
        roles.dedup();
        field(roles.join("\n").as_bytes());
        field(request.name.as_bytes());
        let arguments = request.arguments.clone().unwrap_or_default();
        let digest = Sha256::digest(serde_json::to_vec(&arguments).unwrap_or_default());
        field(&digest);
        Self(bytes)
    }
}

/// Why an echoed state was refused. The client is told only that it is not valid for this
/// request (one message for every case, as rmcp advises); the server logs which.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct StateRefused(RequestStateError);

/// Seals the state of an approval of `proposal` asked for in the request `binding` describes.
pub(crate) fn seal(proposal: &Proposal, binding: &Binding) -> Result<String, RequestStateError> {
    // An expired proposal gets a state that is already stale: its answer could decide nothing.
    let ttl = until_expiry(proposal).map_or(Duration::from_millis(1), |left| left.min(STATE_TTL));
    let payload = Payload {
        proposal: proposal.id.clone(),
    };
    codec().seal_json_with(
        &payload,
        &SealOptions::new().associated_data(&binding.0).ttl(ttl),
    )
}

/// Opens an echoed state: the proposal it is about, if it was sealed here, for this identity
/// and this request, and has not expired.
pub(crate) fn open(sealed: &str, binding: &Binding) -> Result<ProposalId, StateRefused> {
    codec()
        .open_json_with::<Payload>(sealed, &binding.0)
        .map(|payload| payload.proposal)
        .map_err(StateRefused)
}

/// How long `proposal` has left before it expires; `None` if it has expired.
fn until_expiry(proposal: &Proposal) -> Option<Duration> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis());
    let expires = u128::try_from(proposal.expires_at.as_millisecond()).unwrap_or(0);
    let left = expires.checked_sub(now).filter(|left| *left > 0)?;
    Some(Duration::from_millis(
        u64::try_from(left).unwrap_or(u64::MAX),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(arguments: serde_json::Value) -> CallToolRequestParams {
        CallToolRequestParams::new("roster_assign_shift")
            .with_arguments(arguments.as_object().cloned().unwrap_or_default())
    }

    fn alice() -> Identity {
        Identity::agent("acme", "alice").with_role("admin")
    }

    fn proposal() -> Proposal {
        Proposal {
            id: ProposalId::from("prop-1"),
            org_id: "acme".into(),
            tool: "roster_assign_shift".into(),
            params: std::sync::Arc::new(json!({"shift_id": "s"})),
            summary: "assign".to_owned(),
            proposer: switchboard_registry::Proposer {
                user_id: "alice".into(),
                session_id: "s1".into(),
                correlation_id: "c1".into(),
                initiator: Initiator::Agent,
                agent_type: None,
                thread_id: None,
                project_id: None,
            },
            created_at: "2026-11-20T10:00:00Z".parse().expect("a timestamp"),
            expires_at: "2999-01-01T00:00:00Z".parse().expect("a timestamp"),
            status: switchboard_registry::ProposalStatus::Pending,
        }
    }

    #[test]
    fn opens_only_for_the_same_identity_and_request() {
        let binding = Binding::of(&alice(), &request(json!({"shift_id": "s"})));
        let sealed = seal(&proposal(), &binding).expect("seals");
        assert_eq!(open(&sealed, &binding).expect("opens").as_str(), "prop-1");

        let others = [
            Binding::of(
                &Identity::agent("acme", "mark").with_role("admin"),
                &request(json!({"shift_id": "s"})),
            ),
            Binding::of(
                &alice().with_role("staff"),
                &request(json!({"shift_id": "s"})),
            ),
            Binding::of(
                &alice().with_agent_type("planner"),
                &request(json!({"shift_id": "s"})),
            ),
            Binding::of(&alice(), &request(json!({"shift_id": "t"}))),
        ];
        for other in others {
            assert_ne!(other, binding);
            assert!(open(&sealed, &other).is_err());
        }
    }

    #[test]
    fn tampering_is_refused() {
        let binding = Binding::of(&alice(), &request(json!({})));
        let sealed = seal(&proposal(), &binding).expect("seals");
        let mut bytes = sealed.clone().into_bytes();
        let middle = bytes.len() / 2;
        bytes[middle] = if bytes[middle] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).expect("ASCII");
        assert!(open(&tampered, &binding).is_err());
        assert!(open("rs1.not.ours", &binding).is_err());
        assert!(open("", &binding).is_err());
    }
}

//! The `requestState` of an approval asked for with an `input_required` result (2026-07-28).
//!
//! The client echoes the state back verbatim when it retries the call with the human's answer,
//! so to the server it is untrusted input. It is sealed with rmcp's [`RequestStateCodec`]
//! (HMAC-SHA256) under a [`StateKey`] that never leaves the server. Every handler of a server
//! shares its key, because over HTTP each 2026-07-28 request gets a handler of its own: the
//! retry must open what another handler sealed. The key comes from configuration
//! ([`McpServer::with_state_key`](crate::McpServer::with_state_key),
//! [`HttpConfig::state_key`](crate::HttpConfig::state_key)), so that a restarted server, or
//! another replica given the same key, opens the states sealed before. Without one, a key is
//! generated once per process: states sealed before a restart are then refused (the proposal
//! stays pending, for the CLI or the API).
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
    fmt,
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
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

/// The secret that seals and opens approval states: at least [`StateKey::MIN_BYTES`] bytes.
///
/// Cloning shares the key. `Debug` never shows it.
#[derive(Clone)]
pub struct StateKey(Arc<RequestStateCodec>);

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// The shortest key accepted, in bytes (HMAC-SHA256's output size).
    pub const MIN_BYTES: usize = RequestStateCodec::MIN_KEY_LENGTH;

    /// A key from raw bytes.
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Result<Self, StateKeyError> {
        let bytes = bytes.into();
        if bytes.len() < Self::MIN_BYTES {
            return Err(StateKeyError::TooShort { bytes: bytes.len() });
        }
        Ok(Self(Arc::new(RequestStateCodec::new_unchecked(bytes))))
    }

    /// A key written as hexadecimal digits (upper or lower case; surrounding whitespace, such
    /// as a file's final newline, is ignored): at least 64 digits for 32 bytes, the output of
    /// `openssl rand -hex 32`.
    ///
    /// For a rotation, several keys, one per line or separated by commas (blank lines and
    /// lines starting with `#` are skipped): the first seals, and every one of them opens. See
    /// [`StateKey::from_keys`].
    pub fn from_hex(text: &str) -> Result<Self, StateKeyError> {
        let keys = text
            .lines()
            .filter(|line| !line.trim_start().starts_with('#'))
            .flat_map(|line| line.split(','))
            .map(str::trim)
            .filter(|key| !key.is_empty())
            .map(key_from_hex)
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_keys(keys)
    }

    /// A key ring for a rotation: the first key seals, and every key opens, so that states
    /// sealed under a retired key keep opening until they expire (at most 15 minutes) and
    /// replicas that still seal with it interoperate.
    ///
    /// A rotation in a fleet: (1) give every replica the lines `OLD` then `NEW` (all still seal
    /// with the old key, all open both); (2) swap them to `NEW` then `OLD`, replica by replica
    /// (whichever seals, every replica opens); (3) after 15 minutes, drop `OLD`. One key is the
    /// single-key case.
    ///
    /// States are sealed in rmcp's `rs1` form whatever the number of keys (its transitional
    /// signing mode), so a replica given one key and another given a ring open each other's
    /// states; opening tries the ring's keys in turn, each a single HMAC.
    pub fn from_keys(keys: Vec<Vec<u8>>) -> Result<Self, StateKeyError> {
        if let Some(short) = keys.iter().find(|key| key.len() < Self::MIN_BYTES) {
            return Err(StateKeyError::TooShort { bytes: short.len() });
        }
        let mut keys = keys.into_iter();
        let Some(sealing) = keys.next() else {
            return Err(StateKeyError::NotHex("no key at all".to_owned()));
        };
        let opening: Vec<Vec<u8>> = keys.collect();
        if opening.is_empty() {
            return Ok(Self(Arc::new(RequestStateCodec::new_unchecked(sealing))));
        }
        let sealing_id = key_id(&sealing);
        let ids: Vec<String> = opening.iter().map(|key| key_id(key)).collect();
        let mut ring: Vec<(String, Vec<u8>)> = vec![(sealing_id.clone(), sealing)];
        for (id, key) in ids.iter().zip(opening) {
            if ring.iter().all(|(known, _)| known != id) {
                ring.push((id.clone(), key));
            }
        }
        let ring_error = |error: RequestStateError| StateKeyError::Ring(error.to_string());
        let mut codec = RequestStateCodec::new_with_keyring(sealing_id.clone(), ring)
            .and_then(|codec| codec.with_rs1_signing(&sealing_id))
            .map_err(ring_error)?;
        for id in &ids {
            codec = codec.with_rs1_fallback(id).map_err(ring_error)?;
        }
        Ok(Self(Arc::new(codec)))
    }

    /// A key read from a file holding it in hex (see [`StateKey::from_hex`]), or several for
    /// a rotation, one per line.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, StateKeyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| StateKeyError::Unreadable {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_hex(&text)
    }

    /// A fresh random key (48 bytes from the operating system's secure random source, through
    /// three version-4 UUIDs: 366 random bits). States it seals can be opened only by this
    /// key: configure one instead where a restart or another replica must open them.
    pub fn generate() -> Self {
        let mut key = Vec::with_capacity(48);
        for _ in 0..3 {
            key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        }
        Self(Arc::new(RequestStateCodec::new_unchecked(key)))
    }

    /// The codec that seals and opens with this key: approval states, and the navigation's
    /// page states ([`crate::navigation`]), each bound to its own domain string.
    pub(crate) fn codec(&self) -> &RequestStateCodec {
        &self.0
    }

    /// The key of servers given none: generated once per process, with a warning.
    pub(crate) fn process_default() -> Self {
        static KEY: OnceLock<StateKey> = OnceLock::new();
        KEY.get_or_init(|| {
            tracing::warn!(
                "no requestState key configured: generated one for this process, so approval \
                 states sealed now will not open after a restart or on another replica; give \
                 the server a key (`McpServer::with_state_key`, `HttpConfig::state_key`)"
            );
            StateKey::generate()
        })
        .clone()
    }
}

/// The bytes of one key written in hex.
fn key_from_hex(text: &str) -> Result<Vec<u8>, StateKeyError> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err(StateKeyError::NotHex(format!(
            "{} digits, an odd number",
            digits.len()
        )));
    }
    digits
        .chunks_exact(2)
        .enumerate()
        .map(|(index, pair)| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| {
                    StateKeyError::NotHex(format!(
                        "the characters at {} and {} are not two hex digits",
                        2 * index + 1,
                        2 * index + 2
                    ))
                })
        })
        .collect()
}

/// A key's id in a ring: the first 8 bytes of its SHA-256, in hex. Derived from the key, so
/// that every replica given the same keys names them alike, and revealing nothing of it.
fn key_id(key: &[u8]) -> String {
    Sha256::digest(key)[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A [`StateKey`] that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateKeyError {
    /// Fewer bytes than [`StateKey::MIN_BYTES`].
    #[error(
        "the requestState key is {bytes} bytes long, and must be at least 32 (64 hex digits); \
         make one with `openssl rand -hex 32`"
    )]
    TooShort {
        /// Its length.
        bytes: usize,
    },
    /// Not hexadecimal digits.
    #[error(
        "the requestState key is not hexadecimal ({0}); write it as 64 or more hex digits, \
         such as the output of `openssl rand -hex 32`"
    )]
    NotHex(String),
    /// The keys do not make a ring (rmcp's check).
    #[error("the requestState keys do not make a key ring: {0}")]
    Ring(String),
    /// The key file could not be read.
    #[error("cannot read the requestState key file {}: {source}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
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
        Self(request_binding(DOMAIN, identity, request))
    }
}

/// The bytes a state sealed for `domain` is bound to: the identity answering, and the tool and
/// arguments (a SHA-256 of their JSON) of the request it answers for.
pub(crate) fn request_binding(
    domain: &[u8],
    identity: &Identity,
    request: &CallToolRequestParams,
) -> Vec<u8> {
    named_binding(domain, identity, &request.name, request.arguments.as_ref())
}

/// The bytes a state sealed for `domain` is bound to, for a request of the tool or prompt
/// `name` with `arguments` (see [`request_binding`]).
pub(crate) fn named_binding(
    domain: &[u8],
    identity: &Identity,
    name: &str,
    arguments: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(256);
    push_field(&mut bytes, domain);
    push_identity(&mut bytes, identity);
    push_field(&mut bytes, name.as_bytes());
    let arguments = match arguments {
        Some(arguments) => serde_json::to_vec(arguments),
        None => serde_json::to_vec(&serde_json::Map::new()),
    };
    push_field(&mut bytes, &Sha256::digest(arguments.unwrap_or_default()));
    bytes
}

/// Appends `value` to `bytes`, length-prefixed, so that no two different field lists give the
/// same bytes.
pub(crate) fn push_field(bytes: &mut Vec<u8>, value: &[u8]) {
    bytes.extend_from_slice(&(value.len() as u64).to_be_bytes());
    bytes.extend_from_slice(value);
}

/// Appends who `identity` is (organisation, user, initiator, agent type, sorted roles) to
/// `bytes`, field by field: a sealed value bound to it opens for that identity only.
pub(crate) fn push_identity(bytes: &mut Vec<u8>, identity: &Identity) {
    push_field(
        bytes,
        identity.org.as_deref().unwrap_or_default().as_bytes(),
    );
    push_field(
        bytes,
        identity.user.as_deref().unwrap_or_default().as_bytes(),
    );
    push_field(
        bytes,
        match identity.initiator {
            Initiator::Human => b"human",
            Initiator::Agent => b"agent",
        },
    );
    push_field(
        bytes,
        identity
            .agent_type
            .as_ref()
            .map_or("", |agent_type| agent_type.as_str())
            .as_bytes(),
    );
    let mut roles: Vec<&str> = identity.roles.iter().map(|role| role.as_str()).collect();
    roles.sort_unstable();
    roles.dedup();
    push_field(bytes, roles.join("\n").as_bytes());
}

/// Why an echoed state was refused. The client is told only that it is not valid for this
/// request (one message for every case, as rmcp advises); the server logs which.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct StateRefused(RequestStateError);

/// Seals the state of an approval of `proposal` asked for in the request `binding` describes.
pub(crate) fn seal(
    key: &StateKey,
    proposal: &Proposal,
    binding: &Binding,
) -> Result<String, RequestStateError> {
    // An expired proposal gets a state that is already stale: its answer could decide nothing.
    let ttl = until_expiry(proposal).map_or(Duration::from_millis(1), |left| left.min(STATE_TTL));
    let payload = Payload {
        proposal: proposal.id.clone(),
    };
    key.0.seal_json_with(
        &payload,
        &SealOptions::new().associated_data(&binding.0).ttl(ttl),
    )
}

/// Opens an echoed state: the proposal it is about, if it was sealed here, for this identity
/// and this request, and has not expired.
pub(crate) fn open(
    key: &StateKey,
    sealed: &str,
    binding: &Binding,
) -> Result<ProposalId, StateRefused> {
    key.0
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

    const KEY_HEX: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    fn key() -> StateKey {
        StateKey::from_hex(KEY_HEX).expect("a valid key")
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
        let sealed = seal(&key(), &proposal(), &binding).expect("seals");
        assert_eq!(
            open(&key(), &sealed, &binding).expect("opens").as_str(),
            "prop-1"
        );

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
            assert!(open(&key(), &sealed, &other).is_err());
        }
    }

    #[test]
    fn tampering_is_refused() {
        let binding = Binding::of(&alice(), &request(json!({})));
        let sealed = seal(&key(), &proposal(), &binding).expect("seals");
        let mut bytes = sealed.clone().into_bytes();
        let middle = bytes.len() / 2;
        bytes[middle] = if bytes[middle] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).expect("ASCII");
        assert!(open(&key(), &tampered, &binding).is_err());
        assert!(open(&key(), "rs1.not.ours", &binding).is_err());
        assert!(open(&key(), "", &binding).is_err());
    }

    #[test]
    fn a_state_opens_under_the_same_key_only() {
        let binding = Binding::of(&alice(), &request(json!({})));
        let sealed = seal(&key(), &proposal(), &binding).expect("seals");
        let same = StateKey::from_hex(&format!("{}\n", KEY_HEX.to_uppercase())).expect("valid");
        assert_eq!(
            open(&same, &sealed, &binding).expect("opens").as_str(),
            "prop-1"
        );
        assert!(open(&StateKey::generate(), &sealed, &binding).is_err());
    }

    #[test]
    fn a_rotation_keeps_every_state_opening_until_its_old_key_is_dropped() {
        let binding = Binding::of(&alice(), &request(json!({})));
        let new_hex = "ab".repeat(32);
        let old = key();
        let new = StateKey::from_hex(&new_hex).expect("valid");
        let both_old_first =
            StateKey::from_hex(&format!("# rotation\n{KEY_HEX}\n\n{new_hex}\n")).expect("valid");
        let both_new_first = StateKey::from_hex(&format!("{new_hex},{KEY_HEX}")).expect("valid");
        let sealed_old = seal(&old, &proposal(), &binding).expect("seals");
        let sealed_ring = seal(&both_old_first, &proposal(), &binding).expect("seals");
        let sealed_new = seal(&both_new_first, &proposal(), &binding).expect("seals");
        for (state, openers) in [
            (&sealed_old, [&old, &both_old_first, &both_new_first]),
            (&sealed_ring, [&old, &both_old_first, &both_new_first]),
            (&sealed_new, [&new, &both_old_first, &both_new_first]),
        ] {
            for opener in openers {
                assert_eq!(
                    open(opener, state, &binding).expect("opens").as_str(),
                    "prop-1"
                );
            }
        }
        // Once the old key is dropped, what it sealed is refused.
        assert!(open(&new, &sealed_old, &binding).is_err());
        assert!(open(&old, &sealed_new, &binding).is_err());
        let short = StateKey::from_hex(&format!("{new_hex}\n{}", &KEY_HEX[..62]))
            .expect_err("the second key is 31 bytes");
        assert!(
            matches!(short, StateKeyError::TooShort { bytes: 31 }),
            "{short}"
        );
    }

    #[test]
    fn short_or_malformed_keys_are_refused_with_what_to_do() {
        let short = StateKey::from_hex(&KEY_HEX[..62]).expect_err("31 bytes");
        assert!(
            matches!(short, StateKeyError::TooShort { bytes: 31 }),
            "{short}"
        );
        for malformed in [&KEY_HEX[..63], "zz", "0x0102"] {
            let error = StateKey::from_hex(malformed).expect_err("not hex");
            assert!(matches!(error, StateKeyError::NotHex(_)), "{error}");
            assert!(
                error.to_string().contains("openssl rand -hex 32"),
                "{error}"
            );
        }
        assert!(StateKey::from_bytes(vec![7; 32]).is_ok());
        assert_eq!(format!("{:?}", key()), "StateKey(..)");
    }
}

//! Verifying: the statement a peer sent with a call, checked in a fixed order before the call
//! runs as the caller it names.
//!
//! The order (the first failure refuses): the peer has keys here; the header is `alg = EdDSA`,
//! `typ = switchboard-identity+jwt`, no `crit`, and its `kid` is one of the peer's keys; the
//! signature verifies with that key; `iss` is the authenticated peer; `aud` is this node and
//! the called tool's domain; now is within `nbf`..`exp` (give or take [`LEEWAY`]) and the
//! statement is valid no longer than [`MAX_LIFETIME`]; `tool` is the called tool; `input` is
//! the digest of the params received; a mutation's key and action id come together; and the
//! `jti` was never accepted before. Only then is the `jti` recorded, so a refused statement
//! does not use up the id of a genuine one.
//!
//! A [`Refused`] is for the serving node's log: the peer gets one generic refusal.

use std::collections::HashMap;

use jsonwebtoken::{Algorithm, Validation, errors::ErrorKind};
use serde_json::Value;
use switchboard_core::{ActionKey, CallContext};
use uuid::Uuid;

use crate::{
    keys::VerifyingKeys,
    seen::SeenStatements,
    statement::{Claims, LEEWAY, MAX_LIFETIME, STATEMENT_TYPE},
};

/// The longest statement read; anything longer is refused unread.
const MAX_STATEMENT_BYTES: usize = 16 * 1024;

/// What the call that came with a statement is: what the statement must name.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The tool called.
    pub tool: &'a str,
    /// The tool's domain on this node.
    pub domain: &'a str,
    /// The params received.
    pub params: &'a Value,
}

/// A statement that verified: the caller the call runs as, and for a mutation the key and
/// action id the sender holds.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Verified {
    /// The caller, with its session and correlation id, as the sender verified it.
    pub context: CallContext,
    /// For a mutation holding its key on the sender: that key and its action id.
    pub action: Option<ActionKey>,
    /// The statement's `jti`: the one thing about it that may be logged.
    pub statement_id: Uuid,
}

/// Why a statement was refused. The message is for the serving node's log; it never holds
/// the statement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// No keys are listed here for the peer.
    #[error("no public keys are listed for the peer {peer:?}")]
    UnknownPeer {
        /// The authenticated peer.
        peer: String,
    },
    /// Not a JWS compact of a statement (its parts, header or claims do not decode).
    #[error("the statement is malformed: {reason}")]
    Malformed {
        /// What did not decode.
        reason: String,
    },
    /// The header names another algorithm than EdDSA.
    #[error("the statement's algorithm is {alg}, and only EdDSA is accepted")]
    Algorithm {
        /// The algorithm named.
        alg: String,
    },
    /// The header's `typ` is not an identity statement's, or it has `crit` parameters.
    #[error("the statement's header is not an identity statement's: {reason}")]
    Header {
        /// What is wrong.
        reason: String,
    },
    /// The header's `kid` is none of the peer's keys.
    #[error("the statement's key {kid:?} is not one of the keys listed for the peer {peer:?}")]
    UnknownKey {
        /// The key named (`None`: no `kid`).
        kid: Option<String>,
        /// The authenticated peer.
        peer: String,
    },
    /// The signature does not verify.
    #[error("the statement's signature does not verify with the key {kid:?} of {peer:?}")]
    Signature {
        /// The key named.
        kid: String,
        /// The authenticated peer.
        peer: String,
    },
    /// `iss` is not the authenticated peer.
    #[error("statement {jti}: issued by {iss:?}, but the request comes from the peer {peer:?}")]
    Issuer {
        /// The statement's id.
        jti: Uuid,
        /// Its `iss`.
        iss: String,
        /// The authenticated peer.
        peer: String,
    },
    /// `aud` is not this node and the tool's domain.
    #[error("statement {jti}: addressed to {aud:?}, not to {expected:?}")]
    Audience {
        /// The statement's id.
        jti: Uuid,
        /// Its `aud`.
        aud: String,
        /// `<this node>/<the tool's domain>`.
        expected: String,
    },
    /// Not valid yet, even with the leeway.
    #[error("statement {jti}: not valid before {nbf} (now {now})")]
    NotYetValid {
        /// The statement's id.
        jti: Uuid,
        /// Its `nbf`.
        nbf: u64,
        /// Now, in seconds since the epoch.
        now: u64,
    },
    /// Expired, even with the leeway.
    #[error("statement {jti}: expired at {exp} (now {now})")]
    Expired {
        /// The statement's id.
        jti: Uuid,
        /// Its `exp`.
        exp: u64,
        /// Now, in seconds since the epoch.
        now: u64,
    },
    /// Valid for longer than a statement may be, or ending before it begins.
    #[error(
        "statement {jti}: valid from {iat} to {exp}, and a statement is valid at most {max} s",
        max = MAX_LIFETIME.as_secs()
    )]
    Lifetime {
        /// The statement's id.
        jti: Uuid,
        /// Its `iat`.
        iat: u64,
        /// Its `exp`.
        exp: u64,
    },
    /// It names another tool than the one called.
    #[error("statement {jti}: for the tool {tool:?}, not {called:?}")]
    Tool {
        /// The statement's id.
        jti: Uuid,
        /// The tool it names.
        tool: String,
        /// The tool called.
        called: String,
    },
    /// The params received are not the ones signed.
    #[error("statement {jti}: the params received are not the ones signed")]
    Input {
        /// The statement's id.
        jti: Uuid,
    },
    /// The claims do not fit together.
    #[error("statement {jti}: {reason}")]
    Claims {
        /// The statement's id.
        jti: Uuid,
        /// What does not fit.
        reason: String,
    },
    /// The statement was accepted before.
    #[error("statement {jti}: accepted before (a replay)")]
    Replayed {
        /// The statement's id.
        jti: Uuid,
    },
}

impl Refused {
    /// The statement's id, once its signature verified (before that, its claims are not to
    /// be believed).
    pub fn statement_id(&self) -> Option<Uuid> {
        match self {
            Refused::Issuer { jti, .. }
            | Refused::Audience { jti, .. }
            | Refused::NotYetValid { jti, .. }
            | Refused::Expired { jti, .. }
            | Refused::Lifetime { jti, .. }
            | Refused::Tool { jti, .. }
            | Refused::Input { jti }
            | Refused::Claims { jti, .. }
            | Refused::Replayed { jti } => Some(*jti),
            Refused::UnknownPeer { .. }
            | Refused::Malformed { .. }
            | Refused::Algorithm { .. }
            | Refused::Header { .. }
            | Refused::UnknownKey { .. }
            | Refused::Signature { .. } => None,
        }
    }
}

/// Checks the statements this node's peers send: this node's name, each peer's key ring, and
/// the statement ids accepted so far. Shared by every session of a server.
#[derive(Debug)]
pub struct StatementVerifier {
    node: String,
    peers: HashMap<String, VerifyingKeys>,
    seen: SeenStatements,
    /// Signature checks only: every claim is checked here, in order.
    validation: Validation,
}

impl StatementVerifier {
    /// A verifier for the node `node` (the node part of the `aud` it accepts), with no peers.
    pub fn new(node: impl Into<String>) -> Self {
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        Self {
            node: node.into(),
            peers: HashMap::new(),
            seen: SeenStatements::default(),
            validation,
        }
    }

    /// Accepts statements from the peer `name` signed with any of `keys` (replacing the keys
    /// listed for it before).
    #[must_use]
    pub fn peer(mut self, name: impl Into<String>, keys: VerifyingKeys) -> Self {
        self.peers.insert(name.into(), keys);
        self
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Whether `name` is a peer with keys here.
    pub fn knows(&self, name: &str) -> bool {
        self.peers.contains_key(name)
    }

    /// Checks `statement`, sent by the authenticated peer `peer` with the call `expected`
    /// (in the order the crate documents), and records its id.
    pub fn verify(
        &self,
        peer: &str,
        statement: &str,
        expected: Expected<'_>,
    ) -> Result<Verified, Refused> {
        self.verify_at(
            peer,
            statement,
            expected,
            jsonwebtoken::get_current_timestamp(),
        )
    }

    /// Checks `statement` as [`verify`](Self::verify) does, for a transport that does not
    /// say which peer sent it (a `ractor_cluster` message does not name its sender node): the
    /// peer is the one whose ring holds the key the header's `kid` names, so `iss` must be the
    /// owner of the key that verifies. A statement signed with peer X's key that names Y as
    /// its issuer is refused ([`Refused::Issuer`]). A key listed for two peers authenticates
    /// neither: its statements are refused ([`Refused::UnknownKey`]).
    pub fn verify_by_key(
        &self,
        statement: &str,
        expected: Expected<'_>,
    ) -> Result<Verified, Refused> {
        let peer = self.key_owner(statement)?;
        self.verify(peer, statement, expected)
    }

    /// The one peer whose ring holds the key `statement`'s header names.
    fn key_owner(&self, statement: &str) -> Result<&str, Refused> {
        let unowned = |kid: Option<String>| Refused::UnknownKey {
            kid,
            peer: "(any peer: the key names the sender)".to_owned(),
        };
        if statement.len() > MAX_STATEMENT_BYTES {
            return Err(Refused::Malformed {
                reason: format!("longer than {MAX_STATEMENT_BYTES} bytes"),
            });
        }
        let header =
            jsonwebtoken::decode_header(statement).map_err(|error| Refused::Malformed {
                reason: format!("its header does not decode ({error})"),
            })?;
        let kid = header.kid.ok_or_else(|| unowned(None))?;
        let mut owners = self
            .peers
            .iter()
            .filter(|(_, keys)| keys.by_kid(&kid).is_some())
            .map(|(name, _)| name.as_str());
        match (owners.next(), owners.next()) {
            (Some(owner), None) => Ok(owner),
            _ => Err(unowned(Some(kid))),
        }
    }

    /// [`verify`](Self::verify) at `now` (seconds since the epoch).
    pub(crate) fn verify_at(
        &self,
        peer: &str,
        statement: &str,
        expected: Expected<'_>,
        now: u64,
    ) -> Result<Verified, Refused> {
        let keys = self.peers.get(peer).ok_or_else(|| Refused::UnknownPeer {
            peer: peer.to_owned(),
        })?;
        if statement.len() > MAX_STATEMENT_BYTES {
            return Err(Refused::Malformed {
                reason: format!("longer than {MAX_STATEMENT_BYTES} bytes"),
            });
        }
        let header =
            jsonwebtoken::decode_header(statement).map_err(|error| Refused::Malformed {
                reason: format!("its header does not decode ({error})"),
            })?;
        if header.alg != Algorithm::EdDSA {
            return Err(Refused::Algorithm {
                alg: format!("{:?}", header.alg),
            });
        }
        if header.typ.as_deref() != Some(STATEMENT_TYPE) {
            return Err(Refused::Header {
                reason: format!("typ is {:?}, not {STATEMENT_TYPE:?}", header.typ),
            });
        }
        if header.crit.is_some() {
            return Err(Refused::Header {
                reason: "it has critical parameters (crit), none of which is understood here"
                    .to_owned(),
            });
        }
        let unknown_key = || Refused::UnknownKey {
            kid: header.kid.clone(),
            peer: peer.to_owned(),
        };
        let kid = header.kid.as_deref().ok_or_else(unknown_key)?;
        let key = keys.by_kid(kid).ok_or_else(unknown_key)?;
        let claims = jsonwebtoken::decode::<Claims>(statement, &key.decoding, &self.validation)
            .map_err(|error| match error.kind() {
                ErrorKind::InvalidSignature => Refused::Signature {
                    kid: kid.to_owned(),
                    peer: peer.to_owned(),
                },
                _ => Refused::Malformed {
                    reason: format!("it does not decode ({error})"),
                },
            })?
            .claims;
        self.check_claims(peer, claims, expected, now)
    }

    /// The checks after the signature's, in order.
    fn check_claims(
        &self,
        peer: &str,
        claims: Claims,
        expected: Expected<'_>,
        now: u64,
    ) -> Result<Verified, Refused> {
        let jti = claims.jti;
        if claims.iss != peer {
            return Err(Refused::Issuer {
                jti,
                iss: claims.iss,
                peer: peer.to_owned(),
            });
        }
        let audience = format!("{}/{}", self.node, expected.domain);
        if claims.aud != audience {
            return Err(Refused::Audience {
                jti,
                aud: claims.aud,
                expected: audience,
            });
        }
        let leeway = LEEWAY.as_secs();
        if claims.exp < claims.iat
            || claims.exp - claims.iat > MAX_LIFETIME.as_secs()
            || claims.nbf > claims.exp
        {
            return Err(Refused::Lifetime {
                jti,
                iat: claims.iat,
                exp: claims.exp,
            });
        }
        if now + leeway < claims.nbf {
            return Err(Refused::NotYetValid {
                jti,
                nbf: claims.nbf,
                now,
            });
        }
        if now >= claims.exp + leeway {
            return Err(Refused::Expired {
                jti,
                exp: claims.exp,
                now,
            });
        }
        if claims.tool != expected.tool {
            return Err(Refused::Tool {
                jti,
                tool: claims.tool,
                called: expected.tool.to_owned(),
            });
        }
        match switchboard_core::digest_json(expected.params) {
            Ok(digest) if digest == claims.input => {}
            _ => return Err(Refused::Input { jti }),
        }
        let action = match (claims.action_key, claims.action_id) {
            (Some(key), Some(action_id)) => Some(ActionKey {
                org_id: claims.org_id.clone(),
                key,
                action_id,
            }),
            (None, None) => None,
            _ => {
                return Err(Refused::Claims {
                    jti,
                    reason: "a mutation's action_key and action_id come together".to_owned(),
                });
            }
        };
        if !self.seen.first_time(jti, claims.exp + leeway, now) {
            return Err(Refused::Replayed { jti });
        }
        let context = CallContext {
            org_id: Some(claims.org_id),
            user_id: Some(claims.user_id),
            session_id: Some(claims.session_id),
            correlation_id: Some(claims.correlation_id),
            roles: claims.roles.into(),
            initiator: claims.initiator,
            confirmed: claims.confirmed,
            agent_type: claims.agent_type,
            thread_id: claims.thread_id,
            project_id: claims.project_id,
            idempotency_key: claims.idempotency_key,
            ..CallContext::default()
        };
        Ok(Verified {
            context,
            action,
            statement_id: jti,
        })
    }
}

#[cfg(test)]
mod tests;

//! Signing: a fresh statement for every attempt of a linked call.

use std::{fmt, time::Duration};

use jsonwebtoken::{Algorithm, Header};
use switchboard_registry::LinkedCall;
use uuid::Uuid;

use crate::{
    keys::SigningKeys,
    statement::{Claims, LEEWAY, MAX_LIFETIME, STATEMENT_TYPE},
};

/// Who may accept a statement: one node, for one of the domains it serves. Its `aud` claim is
/// `<node>/<domain>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audience {
    /// The node that serves the domain (its `[link] node`).
    pub node: String,
    /// The domain.
    pub domain: String,
}

impl Audience {
    /// The domain `domain` on `node`.
    pub fn new(node: impl Into<String>, domain: impl Into<String>) -> Self {
        Self {
            node: node.into(),
            domain: domain.into(),
        }
    }
}

impl fmt::Display for Audience {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.node, self.domain)
    }
}

/// Why a statement could not be signed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// The JWS could not be made (the key was refused by the signer, or the claims did not
    /// serialize).
    #[error("could not sign the identity statement for {tool}: {reason}")]
    Sign {
        /// The tool called.
        tool: String,
        /// What the signer said.
        reason: String,
    },
}

/// Signs this node's identity statements with the first key of its ring. Its `Debug` shows
/// the node and the keys' `kid`s, never key material.
#[derive(Debug)]
pub struct StatementSigner {
    node: String,
    keys: SigningKeys,
}

impl StatementSigner {
    /// A signer for the node `node` (the `iss` of its statements), signing with `keys`.
    pub fn new(node: impl Into<String>, keys: SigningKeys) -> Self {
        Self {
            node: node.into(),
            keys,
        }
    }

    /// The node this signer speaks for.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The ring it signs with.
    #[cfg(test)]
    pub(crate) fn keys_for_tests(&self) -> &SigningKeys {
        &self.keys
    }

    /// A fresh statement (new `jti`) for one attempt of `call` to `to`, valid from now for the
    /// tool's timeout (else until the call's deadline) plus [`LEEWAY`], at most
    /// [`MAX_LIFETIME`].
    pub fn sign(&self, to: &Audience, call: &LinkedCall<'_>) -> Result<String, SignError> {
        let now = jsonwebtoken::get_current_timestamp();
        let timeout = call.tool.timeout.unwrap_or_else(|| {
            call.deadline
                .saturating_duration_since(tokio::time::Instant::now())
        });
        let lifetime = (timeout + LEEWAY).min(MAX_LIFETIME);
        let caller = call.caller;
        let claims = Claims {
            iss: self.node.clone(),
            aud: to.to_string(),
            iat: now,
            nbf: now,
            exp: now + whole_seconds(lifetime),
            jti: Uuid::now_v7(),
            tool: call.tool.name.to_string(),
            input: call.input,
            correlation_id: caller.correlation_id.clone(),
            session_id: caller.session_id.clone(),
            org_id: caller.org_id.clone(),
            user_id: caller.user_id.clone(),
            roles: caller.roles.to_vec(),
            initiator: caller.initiator,
            confirmed: caller.confirmed,
            agent_type: caller.agent_type.clone(),
            thread_id: caller.thread_id.clone(),
            project_id: caller.project_id.clone(),
            idempotency_key: caller.idempotency_key.clone(),
            action_key: call.action.map(|action| action.key.clone()),
            action_id: call.action.map(|action| action.action_id.clone()),
        };
        let key = self.keys.signing();
        let mut header = Header::new(Algorithm::EdDSA);
        header.typ = Some(STATEMENT_TYPE.to_owned());
        header.kid = Some(key.kid.clone());
        jsonwebtoken::encode(&header, &claims, &key.encoding).map_err(|error| SignError::Sign {
            tool: claims.tool.clone(),
            reason: error.to_string(),
        })
    }
}

/// `duration` in whole seconds, rounded up.
fn whole_seconds(duration: Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}

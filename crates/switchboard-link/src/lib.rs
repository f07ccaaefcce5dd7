//! Identity crosses, unforgeably: the signed statement that tells the node serving a domain
//! who a call made on another node runs as.
//!
//! A registry that links a domain served elsewhere (`RegistryBuilder::remote_domain`) has
//! already checked the caller; the node that serves the domain must run the call as that same
//! caller, and must be able to tell that the caller is not made up by whoever reached it. The
//! front node therefore signs, for every attempt of every linked call, an **identity
//! statement**: a JWS compact (RFC 7515, RFC 7519 claims) with `alg = EdDSA` (Ed25519, RFC
//! 8037) and `typ = switchboard-identity+jwt`, whose claims name the caller (organisation,
//! user, roles, initiator, confirmation, agent, thread, project, session, correlation id), the
//! call (tool, the digest of its input, the idempotency key and action id of a mutation), who
//! signed it (`iss`, the front node), who may accept it (`aud`, `<node>/<domain>`), when
//! (`iat`, `nbf`, `exp`: at most two minutes) and a fresh id (`jti`, a UUID v7).
//!
//! - [`SigningKeys`] and [`VerifyingKeys`] are rings of Ed25519 keys read from PEM files
//!   (PKCS#8 private keys, as `openssl genpkey -algorithm ed25519` writes them, and SPKI
//!   public keys). The first signing key signs; every verifying key listed for a peer opens.
//!   A key's `kid` is its RFC 7638 thumbprint, computed, never configured. Rotation is three
//!   steps: list the new public key on the serving nodes, put the new private key first on
//!   the front node, and drop the old public key once no statement it signed can still be
//!   valid (two minutes).
//! - [`StatementSigner`] signs a [`LinkedCall`](switchboard_registry::LinkedCall) for an
//!   [`Audience`].
//! - [`StatementVerifier`] checks a statement a peer sent, in a fixed order, and answers the
//!   caller the call runs as ([`Verified`]) or why it is refused ([`Refused`]).
//!
//! A statement is a credential: it is never logged or stored, only its `jti`.

#[cfg(feature = "cluster")]
mod cluster;
mod keys;
mod seen;
mod sign;
mod statement;
mod verify;

#[cfg(feature = "cluster")]
pub use cluster::{
    ClusterDomainLink, ClusterError, ClusterNode, ClusterNodeConfig, ClusterPeer, Cookie,
    CookieError, MIN_COOKIE_BYTES, PeerIssuer, Reconnect,
};
pub use keys::{KeyError, SigningKeys, VerifyingKeys, generate_signing_key_pem};
pub use sign::{Audience, SignError, StatementSigner};
pub use statement::{LEEWAY, MAX_LIFETIME, STATEMENT_TYPE};
pub use verify::{Expected, Refused, StatementVerifier, Verified};

/// The `_meta` key of an MCP `tools/call` that carries the identity statement.
pub const IDENTITY_META_KEY: &str = "switchboard/identity";

//! Bearer-token authentication for the HTTP endpoint: the token file, and who a request acts as.
//!
//! The token file (`switchboard serve --http ADDR --tokens FILE`) is TOML, one `[[token]]`
//! table per token, holding the token's **SHA-256** (64 hex digits) and the identity it stands
//! for; the token itself is never stored:
//!
//! ```toml
//! [[token]]
//! sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//! name = "alice-laptop"   # optional: what logs call this token
//! org = "acme"
//! user = "alice"
//! roles = ["admin"]
//! initiator = "agent"     # optional: agent (default) or human
//! agent_type = "claude-code"      # optional: checked against the agent scope table
//! approve_by_elicitation = false  # optional: let the client's user approve by elicitation
//! ```
//!
//! Compute a hash with `printf %s "$TOKEN" | sha256sum` (`printf %s`, not `echo`: no newline).
//!
//! A token may instead stand for another node that links this node's domains (a **peer**):
//!
//! ```toml
//! [[token]]
//! sha256 = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
//! peer = "node-a"
//! ```
//!
//! A peer token carries no identity of its own (no `org`, `user`, `roles`, `initiator`,
//! `agent_type` or `approve_by_elicitation`; an entry with both is refused): each of its calls
//! runs as the caller its signed identity statement names (`server::peer`).
//!
//! A request's token is hashed and looked up by its hash. Nothing secret is compared byte by
//! byte: the lookup's timing can only depend on the hash of what the client sent, which tells
//! it nothing about the tokens in the file. Tokens are never logged, and error messages about
//! the file never repeat a `sha256` value (it might be a token pasted by mistake).
//!
//! A missing token is answered `401` with `WWW-Authenticate: Bearer realm="switchboard"`; a
//! token that is not in the file adds `error="invalid_token"` (RFC 6750 §3). Without a token
//! file the endpoint acts as the operator's identity from the flags, which the configuration
//! only allows on a loopback address. With OAuth instead (`--oauth FILE`), a token is an access
//! token checked by `oauth`, and refusals are its challenges.

use std::{
    collections::{HashMap, hash_map::Entry},
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
};

use axum::{
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use switchboard_core::Initiator;

use super::{
    oauth::{TokenRefusal, Verifier},
    reject::refuse,
};
use crate::identity::Identity;

/// The `realm` of our `WWW-Authenticate` challenges.
const REALM: &str = "switchboard";

/// What went wrong with a token file; the message names the file and what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("could not read the token file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML of the expected shape (the message has the line and column).
    #[error(
        "the token file {} is not valid: {source}(expected [[token]] tables with sha256, org, \
         user, and optionally name, roles, initiator, agent_type, approve_by_elicitation; or \
         with sha256, peer, and optionally name)",
        path.display()
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the TOML parser said.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// One `[[token]]` table is not usable.
    #[error("the token file {}, token #{number}: {reason}", path.display())]
    Entry {
        /// The file.
        path: PathBuf,
        /// Which `[[token]]` table, counting from 1.
        number: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Two tables hold the same hash.
    #[error(
        "the token file {} lists the same sha256 twice (tokens #{first} and #{second}); a token \
         must stand for exactly one identity",
        path.display()
    )]
    Duplicate {
        /// The file.
        path: PathBuf,
        /// The first table with the hash, counting from 1.
        first: usize,
        /// The second one.
        second: usize,
    },
    /// The file holds no token.
    #[error(
        "the token file {} defines no token: add a [[token]] table (see docs/mcp.md), or every \
         request would be refused",
        path.display()
    )]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// The file as TOML reads it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    #[serde(default, rename = "token")]
    tokens: Vec<TokenTableEntry>,
}

/// One `[[token]]` table as TOML reads it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenTableEntry {
    sha256: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    peer: Option<String>,
    #[serde(default)]
    org: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    roles: Option<Vec<String>>,
    #[serde(default)]
    initiator: Option<Initiator>,
    #[serde(default)]
    agent_type: Option<String>,
    #[serde(default)]
    approve_by_elicitation: Option<bool>,
}

/// Who a request acts as, once authenticated.
#[derive(Debug, Clone)]
pub(crate) struct Principal {
    /// Stable and unique per token (its hash), or `operator`: sessions are bound to it.
    pub(crate) key: Arc<str>,
    /// What logs call it: the token's `name`, else `org/user`. Never a secret.
    pub(crate) label: Arc<str>,
    /// The identity calls act as (for a peer, none: no organisation, user or roles).
    pub(crate) identity: Identity,
    /// The node a peer token stands for; its calls run as their identity statements say.
    pub(crate) peer: Option<Arc<str>>,
}

impl Principal {
    /// The operator's fixed identity (no token file).
    pub(crate) fn operator(identity: Identity) -> Self {
        Self {
            key: Arc::from("operator"),
            label: Arc::from(identity.describe()),
            identity,
            peer: None,
        }
    }
}

/// The tokens an HTTP endpoint accepts, by the SHA-256 of each, with the identity each stands
/// for. Its `Debug` shows how many there are, nothing else.
#[derive(Clone)]
pub struct TokenTable {
    by_hash: HashMap<[u8; 32], Arc<Principal>>,
}

impl fmt::Debug for TokenTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenTable")
            .field("tokens", &self.by_hash.len())
            .finish()
    }
}

impl TokenTable {
    /// Reads and checks a token file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TokenFileError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text, path)
    }

    /// Checks a token file's text; `path` is only used in error messages.
    pub fn from_toml(text: &str, path: impl AsRef<Path>) -> Result<Self, TokenFileError> {
        let path = path.as_ref();
        let file: TokenFile = toml::from_str(text).map_err(|source| TokenFileError::Parse {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
        if file.tokens.is_empty() {
            return Err(TokenFileError::Empty {
                path: path.to_owned(),
            });
        }
        let mut by_hash = HashMap::new();
        let mut numbers = HashMap::new();
        for (index, entry) in file.tokens.into_iter().enumerate() {
            let number = index + 1;
            let entry_error = |reason: String| TokenFileError::Entry {
                path: path.to_owned(),
                number,
                reason,
            };
            let hash = parse_sha256(&entry.sha256).ok_or_else(|| {
                entry_error(
                    "`sha256` must be the 64 hex digits of the token's SHA-256, not the token \
                     itself (compute it with: printf %s \"$TOKEN\" | sha256sum)"
                        .to_owned(),
                )
            })?;
            let principal = principal_of(entry, &hash).map_err(entry_error)?;
            match numbers.entry(hash) {
                Entry::Occupied(first) => {
                    return Err(TokenFileError::Duplicate {
                        path: path.to_owned(),
                        first: *first.get(),
                        second: number,
                    });
                }
                Entry::Vacant(slot) => {
                    slot.insert(number);
                }
            }
            by_hash.insert(hash, Arc::new(principal));
        }
        Ok(Self { by_hash })
    }

    /// How many tokens the table holds.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Whether the table holds no token (a table read from a file never is).
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    /// The identity a presented token stands for (`None` for a token not in the table, or a
    /// peer's), for another surface that signs people in with the same tokens.
    pub fn identity(&self, token: &str) -> Option<&Identity> {
        self.find(token)
            .filter(|principal| principal.peer.is_none())
            .map(|principal| &principal.identity)
    }

    /// The peers the table's tokens stand for, sorted.
    pub fn peers(&self) -> Vec<&str> {
        let mut peers: Vec<&str> = self
            .by_hash
            .values()
            .filter_map(|principal| principal.peer.as_deref())
            .collect();
        peers.sort_unstable();
        peers.dedup();
        peers
    }

    /// The principal a presented token stands for.
    fn find(&self, token: &str) -> Option<&Arc<Principal>> {
        self.by_hash.get(&sha256(token))
    }
}

/// The SHA-256 of a token, as the 64 lower-case hex digits a token file holds.
pub fn token_sha256_hex(token: &str) -> String {
    hex(&sha256(token))
}

fn sha256(token: &str) -> [u8; 32] {
    let digest = Sha256::digest(token.as_bytes());
    let mut bytes = [0_u8; 32];
    bytes.copy_from_slice(&digest);
    bytes
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// 64 hex digits (either case, surrounding blanks ignored) as bytes.
fn parse_sha256(text: &str) -> Option<[u8; 32]> {
    let text = text.trim().as_bytes();
    if text.len() != 64 {
        return None;
    }
    let mut bytes = [0_u8; 32];
    for (byte, pair) in bytes.iter_mut().zip(text.chunks_exact(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(bytes)
}

/// The principal of one checked table, keyed by its hash.
fn principal_of(entry: TokenTableEntry, hash: &[u8; 32]) -> Result<Principal, String> {
    if let Some(peer) = &entry.peer {
        return peer_principal(&entry, peer, hash);
    }
    let (Some(org), Some(user)) = (entry.org.as_deref(), entry.user.as_deref()) else {
        return Err(
            "`org` and `user` are required (or `peer`, for a token another node links with)"
                .to_owned(),
        );
    };
    let (org, user) = (org.trim(), user.trim());
    if org.is_empty() || user.is_empty() {
        return Err("`org` and `user` must not be blank".to_owned());
    }
    let mut identity = Identity::agent(org, user)
        .with_initiator(entry.initiator.unwrap_or_default())
        .with_approval_by_elicitation(entry.approve_by_elicitation.unwrap_or(false));
    if let Some(agent_type) = &entry.agent_type {
        let agent_type = agent_type.trim();
        if !crate::scope::is_id(agent_type) {
            return Err(format!(
                "`agent_type` must be an id: 1 to {} characters from A-Z a-z 0-9 . _ : -",
                crate::scope::MAX_ID_LEN
            ));
        }
        identity = identity.with_agent_type(agent_type);
    }
    for role in entry.roles.iter().flatten() {
        let role = role.trim();
        if role.is_empty() {
            return Err("a role in `roles` is blank".to_owned());
        }
        identity = identity.with_role(role);
    }
    let label = match entry.name.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => identity.describe(),
    };
    Ok(Principal {
        key: Arc::from(hex(hash)),
        label: Arc::from(label),
        identity,
        peer: None,
    })
}

/// The principal of a peer token: a node, with no identity of its own.
fn peer_principal(
    entry: &TokenTableEntry,
    peer: &str,
    hash: &[u8; 32],
) -> Result<Principal, String> {
    let named = entry
        .name
        .as_deref()
        .map(|name| format!(" ({name:?})"))
        .unwrap_or_default();
    let mixed: Vec<&str> = [
        ("org", entry.org.is_some()),
        ("user", entry.user.is_some()),
        ("roles", entry.roles.is_some()),
        ("initiator", entry.initiator.is_some()),
        ("agent_type", entry.agent_type.is_some()),
        (
            "approve_by_elicitation",
            entry.approve_by_elicitation.is_some(),
        ),
    ]
    .into_iter()
    .filter_map(|(field, present)| present.then_some(field))
    .collect();
    if !mixed.is_empty() {
        return Err(format!(
            "the peer token{named} for {peer:?} also sets {}: a peer token stands for another \
             node, whose calls run as their signed identity statements say; remove {} or `peer`",
            mixed.join(", "),
            if mixed.len() == 1 { "it" } else { "them" }
        ));
    }
    let peer = peer.trim();
    if !crate::scope::is_id(peer) {
        return Err(format!(
            "`peer` must be a node name: 1 to {} characters from A-Z a-z 0-9 . _ : -",
            crate::scope::MAX_ID_LEN
        ));
    }
    let label = match entry.name.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => format!("peer {peer}"),
    };
    Ok(Principal {
        key: Arc::from(hex(hash)),
        label: Arc::from(label),
        identity: Identity::nobody(),
        peer: Some(Arc::from(peer)),
    })
}

/// How an endpoint decides who a request acts as.
#[derive(Debug, Clone)]
pub(crate) enum Authenticator {
    /// Everyone acts as the operator (loopback only).
    Operator(Arc<Principal>),
    /// A bearer token from the table is required.
    Tokens(TokenTable),
    /// An OAuth access token of the configured issuer is required.
    OAuth(Arc<Verifier>),
}

/// Why a request was not authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthFailure {
    /// No bearer token was sent.
    Missing,
    /// A token was sent, but it is not in the table (or is malformed).
    Invalid,
    /// An OAuth access token was missing or refused, with what its challenge needs.
    OAuth(TokenRefusal, Arc<Verifier>),
}

impl Authenticator {
    /// Who the request acts as.
    pub(crate) async fn authenticate(
        &self,
        headers: &HeaderMap,
    ) -> Result<Arc<Principal>, AuthFailure> {
        match self {
            Authenticator::Operator(principal) => Ok(principal.clone()),
            Authenticator::Tokens(table) => {
                let token = bearer_token(headers)?;
                table.find(token).cloned().ok_or(AuthFailure::Invalid)
            }
            Authenticator::OAuth(verifier) => {
                let refused = |refusal| AuthFailure::OAuth(refusal, Arc::clone(verifier));
                let token = match bearer_token(headers) {
                    Ok(token) => token,
                    Err(AuthFailure::Missing) => return Err(refused(TokenRefusal::Missing)),
                    Err(_) => {
                        return Err(refused(TokenRefusal::invalid(
                            "the request must carry exactly one `Authorization: Bearer` header",
                        )));
                    }
                };
                verifier.verify(token).await.map_err(refused)
            }
        }
    }
}

/// The token of the one `Authorization: Bearer <token>` header.
fn bearer_token(headers: &HeaderMap) -> Result<&str, AuthFailure> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(AuthFailure::Missing);
    };
    if values.next().is_some() {
        return Err(AuthFailure::Invalid);
    }
    let value = value.to_str().map_err(|_| AuthFailure::Invalid)?;
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        // Another scheme (Basic, ...) is no bearer token at all.
        return Err(AuthFailure::Missing);
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(AuthFailure::Invalid);
    }
    Ok(token)
}

impl AuthFailure {
    /// The `401` answer, with its RFC 6750 challenge (OAuth: see `oauth::challenge`).
    pub(crate) fn response(self) -> Response {
        let (challenge, message) = match self {
            AuthFailure::OAuth(refusal, verifier) => {
                return refusal.response(verifier.settings());
            }
            AuthFailure::Missing => (
                format!("Bearer realm=\"{REALM}\""),
                "Unauthorized: this MCP endpoint needs an `Authorization: Bearer <token>` \
                 header; ask the server's operator for a token",
            ),
            AuthFailure::Invalid => (
                format!(
                    "Bearer realm=\"{REALM}\", error=\"invalid_token\", \
                     error_description=\"the bearer token is not recognised\""
                ),
                "Unauthorized: the bearer token is not recognised; check it, or ask the \
                 server's operator for a new one",
            ),
        };
        let mut response = refuse(StatusCode::UNAUTHORIZED, message);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
        [[token]]
        sha256 = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"
        name = "alice-laptop"
        org = "acme"
        user = "alice"
        roles = ["admin"]

        [[token]]
        sha256 = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
        org = "globex"
        user = "gina"
        initiator = "human"
        agent_type = "claude-code"
        approve_by_elicitation = true
    "#;

    fn headers(authorization: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in authorization {
            headers.append(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).expect("a header value"),
            );
        }
        headers
    }

    #[test]
    fn the_documented_recipe_matches_our_hash() {
        // printf %s test | sha256sum
        assert_eq!(
            token_sha256_hex("test"),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
    }

    #[test]
    fn tokens_map_to_their_identities_and_strangers_are_refused() {
        let table = TokenTable::from_toml(FILE, "tokens.toml").expect("a valid file");
        assert_eq!(table.len(), 2);
        assert_eq!(format!("{table:?}"), "TokenTable { tokens: 2 }");
        let auth = Authenticator::Tokens(table);

        // Token tables answer at once: the future needs no runtime.
        let authenticate =
            |values: &[&str]| futures::executor::block_on(auth.authenticate(&headers(values)));
        let alice = authenticate(&["Bearer test"]).expect("alice's token");
        assert_eq!(
            alice.identity,
            Identity::agent("acme", "alice").with_role("admin")
        );
        assert_eq!(&*alice.label, "alice-laptop");

        let gina = authenticate(&["bearer   test2 "]).expect("gina's token, scheme in any case");
        assert_eq!(gina.identity.initiator, Initiator::Human);
        assert_eq!(
            gina.identity.agent_type.as_ref().map(|t| t.as_str()),
            Some("claude-code")
        );
        assert!(gina.identity.approve_by_elicitation);
        assert!(
            !alice.identity.approve_by_elicitation && alice.identity.agent_type.is_none(),
            "both are off unless set"
        );
        assert_eq!(&*gina.label, "globex/gina");
        assert_ne!(alice.key, gina.key);

        let failure = |values: &[&str]| authenticate(values).err();
        assert_eq!(failure(&[]), Some(AuthFailure::Missing));
        assert_eq!(failure(&["Basic dGVzdA=="]), Some(AuthFailure::Missing));
        assert_eq!(failure(&["Bearer nope"]), Some(AuthFailure::Invalid));
        assert_eq!(failure(&["Bearer "]), Some(AuthFailure::Invalid));
        assert_eq!(
            failure(&["Bearer test", "Bearer test"]),
            Some(AuthFailure::Invalid)
        );
    }

    #[test]
    fn a_peer_token_stands_for_a_node_with_no_identity_of_its_own() {
        let file = format!(
            "[[token]]\nsha256 = \"{}\"\npeer = \"node-a\"\n",
            token_sha256_hex("peer-token")
        );
        let table = TokenTable::from_toml(&file, "t.toml").expect("a peer token");
        assert_eq!(table.peers(), vec!["node-a"]);
        assert!(
            table.identity("peer-token").is_none(),
            "no identity to sign in with"
        );
        let auth = Authenticator::Tokens(table);
        let peer = futures::executor::block_on(auth.authenticate(&headers(&["Bearer peer-token"])))
            .expect("the peer's token");
        assert_eq!(peer.peer.as_deref(), Some("node-a"));
        assert_eq!(peer.identity, Identity::nobody());
        assert_eq!(&*peer.label, "peer node-a");

        let error = TokenTable::from_toml(
            &format!("[[token]]\nsha256 = \"{}\"\n", token_sha256_hex("t")),
            "t.toml",
        )
        .expect_err("neither a user nor a peer")
        .to_string();
        assert!(error.contains("`peer`"), "{error}");
        let error = TokenTable::from_toml(
            &format!(
                "[[token]]\nsha256 = \"{}\"\npeer = \"node-a\"\nroles = []\n",
                token_sha256_hex("t")
            ),
            "t.toml",
        )
        .expect_err("a peer with roles")
        .to_string();
        assert!(error.contains("also sets roles"), "{error}");
    }

    #[test]
    fn challenges_follow_rfc_6750() {
        let missing = AuthFailure::Missing.response();
        assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            missing.headers()[header::WWW_AUTHENTICATE],
            "Bearer realm=\"switchboard\""
        );
        let invalid = AuthFailure::Invalid.response();
        let challenge = invalid.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .expect("ASCII");
        assert!(challenge.starts_with("Bearer realm=\"switchboard\", error=\"invalid_token\""));
    }

    #[test]
    fn bad_files_say_what_to_change_without_repeating_secrets() {
        let error = |text: &str| {
            TokenTable::from_toml(text, "t.toml")
                .expect_err("an invalid file")
                .to_string()
        };
        let message = error("[[token]]\nsha256 = \"my-secret-token\"\norg = \"a\"\nuser = \"b\"\n");
        assert!(
            message.contains("token #1") && message.contains("sha256sum"),
            "{message}"
        );
        assert!(!message.contains("my-secret-token"), "{message}");

        let message =
            error("[[token]]\nsha256 = \"x\"\norg = \"a\"\nuser = \"b\"\nrole = \"admin\"\n");
        assert!(
            message.contains("role"),
            "unknown fields are named: {message}"
        );

        let hash = token_sha256_hex("t");
        let twice = format!(
            "[[token]]\nsha256 = \"{hash}\"\norg = \"a\"\nuser = \"b\"\n\
             [[token]]\nsha256 = \"{hash}\"\norg = \"c\"\nuser = \"d\"\n"
        );
        assert!(error(&twice).contains("#1 and #2"));
        assert!(error("").contains("defines no token"));
        let blank = format!("[[token]]\nsha256 = \"{hash}\"\norg = \" \"\nuser = \"b\"\n");
        assert!(error(&blank).contains("blank"));
        let spaced = format!(
            "[[token]]\nsha256 = \"{hash}\"\norg = \"a\"\nuser = \"b\"\nagent_type = \"my agent\"\n"
        );
        assert!(error(&spaced).contains("`agent_type` must be an id"));
        assert!(error("[[token]]\nsha256 = 1").contains("t.toml"));
    }
}

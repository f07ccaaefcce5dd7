//! One access token checked, and the identity it stands for.
//!
//! The checks, in order: the token is a JWT whose header names an accepted algorithm (never
//! `none`, never HMAC); the key its `kid` names is in the issuer's key set and fits that
//! algorithm; the signature verifies; `iss` is the issuer; `aud` holds this resource (RFC
//! 8707); `exp` has not passed and `nbf` has (with the configured leeway); the token holds the
//! required scopes (`scope`, space-separated, or `scp`). Then the configured claims give the
//! org, the user and the roles; a token without the org or the user claim is refused. Nothing
//! but the token decides the identity.

use std::sync::Arc;

use jsonwebtoken::{Validation, errors::ErrorKind};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::{
    Settings,
    challenge::TokenRefusal,
    keys::{KeyCache, KeyError},
};
use crate::{http::auth::Principal, identity::Identity};

/// Checks tokens against one issuer for one resource.
pub(crate) struct Verifier {
    settings: Arc<Settings>,
    keys: KeyCache,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("issuer", &self.settings.issuer)
            .field("resource", &self.settings.resource)
            .finish_non_exhaustive()
    }
}

/// Verifiers are equal when they are the same one (a refusal names the verifier it came from).
impl PartialEq for Verifier {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Verifier {}

impl Verifier {
    /// A verifier with an empty key cache.
    pub(crate) fn new(settings: Settings) -> Result<Self, reqwest::Error> {
        let settings = Arc::new(settings);
        let keys = KeyCache::new(Arc::clone(&settings))?;
        Ok(Self { settings, keys })
    }

    /// What the verifier checks against.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Fetches the issuer's keys now, so the first request does not wait for them.
    pub(crate) async fn prefetch(&self) {
        self.keys.prefetch().await;
    }

    /// Who `token` acts as, or why it is refused.
    pub(crate) async fn verify(&self, token: &str) -> Result<Arc<Principal>, TokenRefusal> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| TokenRefusal::invalid("the bearer token is not a JWT"))?;
        let algorithm = header.alg;
        if !self.settings.algorithms.contains(&algorithm) {
            return Err(TokenRefusal::invalid(
                "the token is signed with an algorithm this server does not accept",
            ));
        }
        let key = match self.keys.key(header.kid.as_deref()).await {
            Ok(key) => key,
            Err(KeyError::Unknown) => {
                return Err(TokenRefusal::invalid(
                    "the token is signed with a key the issuer does not publish",
                ));
            }
            Err(KeyError::Unavailable) => return Err(TokenRefusal::Unavailable),
        };
        if key.algorithm.is_some_and(|only| only != algorithm)
            || key.decoding.family() != algorithm.family()
        {
            return Err(TokenRefusal::invalid(
                "the token's algorithm does not fit the key it names",
            ));
        }

        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = self.settings.leeway.as_secs();
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation)
            .map_err(|error| TokenRefusal::invalid(describe(error.kind())))?;
        let claims = data.claims;

        if !self.settings.required_scopes.is_empty() {
            let granted = scopes(&claims);
            if !self
                .settings
                .required_scopes
                .iter()
                .all(|scope| granted.contains(&scope.as_str()))
            {
                return Err(TokenRefusal::InsufficientScope);
            }
        }
        self.principal(&claims).map(Arc::new)
    }

    /// The principal the claims stand for.
    fn principal(&self, claims: &Map<String, Value>) -> Result<Principal, TokenRefusal> {
        let map = &self.settings.claims;
        let text = |name: &str| {
            claim(claims, name)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let org = text(&map.org).ok_or_else(|| {
            TokenRefusal::invalid(format!("the token has no `{}` claim (the org)", map.org))
        })?;
        let user = text(&map.user).ok_or_else(|| {
            TokenRefusal::invalid(format!("the token has no `{}` claim (the user)", map.user))
        })?;
        let mut identity = Identity::agent(&org, &user)
            .with_initiator(map.initiator)
            .with_approval_by_elicitation(map.approve_by_elicitation);
        if let Some(agent_type) = &map.agent_type {
            identity = identity.with_agent_type(agent_type.as_str());
        }
        let mut roles = roles(claim(claims, &map.roles));
        roles.sort_unstable();
        roles.dedup();
        for role in &roles {
            identity = identity.with_role(*role);
        }

        // Sessions are bound to the key: a token that maps to another identity (another user,
        // other roles) cannot use a session made by this one.
        let mut hasher = Sha256::new();
        for part in [self.settings.issuer.as_str(), &org, &user] {
            hasher.update(part.as_bytes());
            hasher.update([0]);
        }
        for role in &roles {
            hasher.update(role.as_bytes());
            hasher.update([1]);
        }
        let digest = hasher.finalize();
        let key: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        Ok(Principal {
            key: Arc::from(format!("oauth:{key}")),
            label: Arc::from(format!("{org}/{user}")),
            identity,
            peer: None,
        })
    }
}

/// A claim by name; a name with dots that is not a claim itself is a path into nested objects
/// (`realm_access.roles`).
fn claim<'c>(claims: &'c Map<String, Value>, name: &str) -> Option<&'c Value> {
    if let Some(value) = claims.get(name) {
        return Some(value);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

/// Roles from a claim: a string of space-separated roles, or an array of strings.
fn roles(value: Option<&Value>) -> Vec<&str> {
    match value {
        Some(Value::String(text)) => text.split_ascii_whitespace().collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|role| !role.is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

/// The scopes a token holds: `scope` (RFC 8693 / RFC 9068, space-separated) or `scp` (a
/// string or an array, as some issuers write it).
fn scopes(claims: &Map<String, Value>) -> Vec<&str> {
    let mut granted = roles(claims.get("scope"));
    granted.extend(roles(claims.get("scp")));
    granted
}

/// What a client is told about a token `jsonwebtoken` refused.
fn describe(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidAudience => {
            "the token is not for this resource (its aud does not hold this server)".to_owned()
        }
        ErrorKind::InvalidIssuer => "the token is from another issuer".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        _ => "the bearer token is not a valid access token".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn roles_come_from_strings_arrays_and_scope_strings() {
        assert_eq!(roles(Some(&json!("admin staff"))), ["admin", "staff"]);
        assert_eq!(
            roles(Some(&json!(["admin", " ", 3, "staff"]))),
            ["admin", "staff"]
        );
        assert!(roles(Some(&json!(7))).is_empty());
        assert!(roles(None).is_empty());
    }

    #[test]
    fn dotted_names_reach_into_nested_claims_unless_the_name_is_a_claim() {
        let claims = json!({
            "realm_access": {"roles": ["admin"]},
            "https://example.com/org": "acme"
        });
        let claims = claims.as_object().expect("an object");
        assert_eq!(claim(claims, "realm_access.roles"), Some(&json!(["admin"])));
        assert_eq!(
            claim(claims, "https://example.com/org"),
            Some(&json!("acme"))
        );
        assert_eq!(claim(claims, "realm_access.groups"), None);
    }

    #[test]
    fn scopes_are_read_from_scope_and_scp() {
        let claims = json!({"scope": "mcp read", "scp": ["write"]});
        let claims = claims.as_object().expect("an object");
        assert_eq!(scopes(claims), ["mcp", "read", "write"]);
    }
}

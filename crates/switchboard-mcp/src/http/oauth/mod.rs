//! OAuth 2.1 resource server for the HTTP endpoint, as the MCP authorization specification
//! (2025-11-25) describes: access tokens are JWTs issued by one authorization server, checked
//! against that server's published keys, and mapped to the identity a request acts as.
//!
//! The configuration (`switchboard serve --http ADDR --oauth FILE`) is TOML:
//!
//! ```toml
//! issuer = "https://auth.example.com/realms/acme"  # the `iss` of every token
//! resource = "https://mcp.example.com/mcp"         # this server's URL: tokens' `aud` must hold it
//! # jwks_uri = "https://auth.example.com/realms/acme/certs"  # optional: else discovered
//! scopes_supported = ["mcp"]      # optional: listed in the metadata
//! required_scopes = ["mcp"]       # optional: a token without them is answered 403
//!
//! [claims]
//! org = "org"                     # the claim holding the org (required in every token)
//! user = "sub"                    # the claim holding the user (default `sub`)
//! roles = "roles"                 # a string, an array, or space-separated (`scope`)
//! ```
//!
//! The parts:
//! - this module: the file, checked at start-up ([`OAuthConfig`], [`OAuthConfigError`]);
//! - `keys`: the issuer's JWKS, discovered from its metadata when `jwks_uri` is not given,
//!   cached, and fetched again when a token names a key it does not hold (at most once per
//!   `jwks_min_refresh_secs`) or when it is older than `jwks_refresh_secs`;
//! - `verify`: one token checked (signature, algorithm, `iss`, `aud`, `exp`, `nbf`, scopes)
//!   and its claims mapped to an identity;
//! - `challenge`: the Protected Resource Metadata document (RFC 9728) and the
//!   `WWW-Authenticate` challenges that point to it.
//!
//! No cryptography is written here: signatures are checked by `jsonwebtoken` on aws-lc-rs.

mod challenge;
mod keys;
mod verify;

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use jsonwebtoken::Algorithm;
use reqwest::Url;
use serde::Deserialize;
use switchboard_core::Initiator;

pub(crate) use challenge::{PROTECTED_RESOURCE_PATH, TokenRefusal, metadata_routes};
pub(crate) use verify::Verifier;

/// The algorithms accepted when the file names none: every asymmetric one `jsonwebtoken`
/// verifies. HMAC is never accepted: its key would be the issuer's shared secret.
const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Clock skew allowed on `exp` and `nbf` by default: 30 seconds.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

/// How long fetched keys are used before they are fetched again by default: 1 hour.
pub const DEFAULT_JWKS_REFRESH: Duration = Duration::from_secs(3_600);

/// The least time between two fetches of the keys by default: 30 seconds. A token naming an
/// unknown key fetches them at once, but a flood of such tokens fetches them once per interval.
pub const DEFAULT_JWKS_MIN_REFRESH: Duration = Duration::from_secs(30);

/// What is wrong with an OAuth configuration file; the message names the file and the key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthConfigError {
    /// The file could not be read.
    #[error("could not read the OAuth configuration {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML of the expected shape (the message has the line and column).
    #[error(
        "the OAuth configuration {} is not valid: {source}(expected issuer, resource, and \
         optionally jwks_uri, algorithms, scopes_supported, required_scopes, leeway_secs, \
         jwks_refresh_secs, jwks_min_refresh_secs and a [claims] table)",
        path.display()
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the TOML parser said.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A key holds a value that cannot be used.
    #[error("the OAuth configuration {}: `{key}` {reason}", path.display())]
    Value {
        /// The file.
        path: PathBuf,
        /// The key, such as `issuer` or `claims.org`.
        key: &'static str,
        /// What is wrong with its value, and what it should be.
        reason: String,
    },
    /// The HTTP client that fetches the issuer's keys could not be built.
    #[error("the OAuth configuration {}: no HTTP client to fetch the issuer's keys: {reason}", path.display())]
    Client {
        /// The file.
        path: PathBuf,
        /// What reqwest said.
        reason: String,
    },
}

/// The file as TOML reads it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuthFile {
    issuer: String,
    resource: String,
    #[serde(default)]
    jwks_uri: Option<String>,
    #[serde(default)]
    algorithms: Option<Vec<String>>,
    #[serde(default)]
    scopes_supported: Vec<String>,
    #[serde(default)]
    required_scopes: Vec<String>,
    #[serde(default)]
    leeway_secs: Option<u64>,
    #[serde(default)]
    jwks_refresh_secs: Option<u64>,
    #[serde(default)]
    jwks_min_refresh_secs: Option<u64>,
    #[serde(default)]
    claims: ClaimsTable,
}

/// The `[claims]` table as TOML reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimsTable {
    #[serde(default)]
    org: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    roles: Option<String>,
    #[serde(default)]
    initiator: Initiator,
    #[serde(default)]
    agent_type: Option<String>,
    #[serde(default)]
    approve_by_elicitation: bool,
}

/// Which claims a token's identity is read from, and what every token's identity adds.
#[derive(Debug, Clone)]
pub(crate) struct ClaimMap {
    /// The claim holding the org (a string; a token without it is refused).
    pub(crate) org: String,
    /// The claim holding the user (a string; a token without it is refused).
    pub(crate) user: String,
    /// The claim holding the roles (a string of space-separated roles, or an array); a token
    /// without it has no role.
    pub(crate) roles: String,
    /// The initiator every token acts as.
    pub(crate) initiator: Initiator,
    /// The agent type every token acts as, if any.
    pub(crate) agent_type: Option<String>,
    /// Whether a token's user may approve by elicitation.
    pub(crate) approve_by_elicitation: bool,
}

/// Everything about the issuer and this resource that checking a token needs.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The issuer exactly as configured: what `iss` must equal.
    pub(crate) issuer: String,
    /// The issuer as a URL, for discovering its metadata.
    pub(crate) issuer_url: Url,
    /// The JWKS URL, when configured (else discovered).
    pub(crate) jwks_uri: Option<Url>,
    /// This resource exactly as configured: what `aud` must hold.
    pub(crate) resource: String,
    /// The URL of this resource's metadata document.
    pub(crate) metadata_url: String,
    /// The path of `metadata_url` (served besides the root and `/mcp` forms).
    pub(crate) metadata_path: String,
    /// The algorithms a token may be signed with.
    pub(crate) algorithms: Vec<Algorithm>,
    /// The scopes listed in the metadata.
    pub(crate) scopes_supported: Vec<String>,
    /// The scopes every token must hold.
    pub(crate) required_scopes: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub(crate) leeway: Duration,
    /// How long fetched keys are used before they are fetched again.
    pub(crate) jwks_refresh: Duration,
    /// The least time between two fetches of the keys.
    pub(crate) jwks_min_refresh: Duration,
    /// How claims become the identity.
    pub(crate) claims: ClaimMap,
}

/// A checked OAuth configuration and the verifier built from it (with its cache of the
/// issuer's keys, shared by every clone).
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) verifier: Arc<Verifier>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let settings = self.verifier.settings();
        f.debug_struct("OAuthConfig")
            .field("issuer", &settings.issuer)
            .field("resource", &settings.resource)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// Reads and checks an OAuth configuration file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, OAuthConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| OAuthConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text, path)
    }

    /// Checks an OAuth configuration's text; `path` is only used in error messages.
    pub fn from_toml(text: &str, path: impl AsRef<Path>) -> Result<Self, OAuthConfigError> {
        let path = path.as_ref();
        let file: OAuthFile = toml::from_str(text).map_err(|source| OAuthConfigError::Parse {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
        let settings = settings_of(file).map_err(|(key, reason)| OAuthConfigError::Value {
            path: path.to_owned(),
            key,
            reason,
        })?;
        let verifier = Verifier::new(settings).map_err(|error| OAuthConfigError::Client {
            path: path.to_owned(),
            reason: error.to_string(),
        })?;
        Ok(Self {
            verifier: Arc::new(verifier),
        })
    }

    /// The authorization server whose tokens are accepted (`iss`).
    pub fn issuer(&self) -> &str {
        &self.verifier.settings().issuer
    }

    /// This resource's identifier, which every token's `aud` must hold (RFC 8707).
    pub fn resource(&self) -> &str {
        &self.verifier.settings().resource
    }

    /// Where this resource's Protected Resource Metadata is published (RFC 9728), as the
    /// `WWW-Authenticate` challenges name it.
    pub fn resource_metadata_url(&self) -> &str {
        &self.verifier.settings().metadata_url
    }
}

/// The settings of a parsed file, or the key that is wrong and why.
fn settings_of(file: OAuthFile) -> Result<Settings, (&'static str, String)> {
    let issuer = file.issuer.trim().to_owned();
    let issuer_url = endpoint_url(&issuer).map_err(|reason| ("issuer", reason))?;
    let jwks_uri = match &file.jwks_uri {
        Some(uri) => Some(endpoint_url(uri.trim()).map_err(|reason| ("jwks_uri", reason))?),
        None => None,
    };
    let resource = file.resource.trim().to_owned();
    let resource_url = endpoint_url(&resource).map_err(|reason| ("resource", reason))?;
    if resource_url.query().is_some() {
        return Err(("resource", "must not have a query (RFC 8707)".to_owned()));
    }
    let resource_path = resource_url.path().trim_end_matches('/');
    if !resource_path
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || b"/._~-".contains(&byte))
    {
        return Err((
            "resource",
            "must have a path of A-Z a-z 0-9 / . _ ~ - only".to_owned(),
        ));
    }
    let metadata_path = format!("{PROTECTED_RESOURCE_PATH}{resource_path}");
    let mut metadata_url = resource_url.clone();
    metadata_url.set_path(&metadata_path);

    let algorithms = match &file.algorithms {
        None => DEFAULT_ALGORITHMS.to_vec(),
        Some(names) => algorithms_of(names).map_err(|reason| ("algorithms", reason))?,
    };
    let scopes_supported =
        scopes_of(&file.scopes_supported).map_err(|r| ("scopes_supported", r))?;
    let required_scopes = scopes_of(&file.required_scopes).map_err(|r| ("required_scopes", r))?;

    let seconds =
        |value: Option<u64>, default: Duration| value.map_or(default, Duration::from_secs);
    let leeway = seconds(file.leeway_secs, DEFAULT_LEEWAY);
    if leeway > Duration::from_secs(300) {
        return Err((
            "leeway_secs",
            "must be at most 300: a larger skew keeps expired tokens alive".to_owned(),
        ));
    }
    let jwks_refresh = seconds(file.jwks_refresh_secs, DEFAULT_JWKS_REFRESH);
    let jwks_min_refresh = seconds(file.jwks_min_refresh_secs, DEFAULT_JWKS_MIN_REFRESH);
    if jwks_refresh.is_zero() {
        return Err(("jwks_refresh_secs", "must be at least 1".to_owned()));
    }
    if jwks_min_refresh > jwks_refresh {
        return Err((
            "jwks_min_refresh_secs",
            "must not be larger than jwks_refresh_secs".to_owned(),
        ));
    }

    let claims = file.claims;
    let claim_name = |key: &'static str, value: Option<String>, default: &str| {
        let name = value.unwrap_or_else(|| default.to_owned());
        let name = name.trim();
        if name.is_empty() {
            Err((key, "must name a claim, not be blank".to_owned()))
        } else {
            Ok(name.to_owned())
        }
    };
    let agent_type = match claims.agent_type {
        Some(agent_type) => {
            let agent_type = agent_type.trim();
            if !crate::scope::is_id(agent_type) {
                return Err((
                    "claims.agent_type",
                    format!(
                        "must be an id: 1 to {} characters from A-Z a-z 0-9 . _ : -",
                        crate::scope::MAX_ID_LEN
                    ),
                ));
            }
            Some(agent_type.to_owned())
        }
        None => None,
    };
    let claims = ClaimMap {
        org: claim_name("claims.org", claims.org, "org")?,
        user: claim_name("claims.user", claims.user, "sub")?,
        roles: claim_name("claims.roles", claims.roles, "roles")?,
        initiator: claims.initiator,
        agent_type,
        approve_by_elicitation: claims.approve_by_elicitation,
    };
    Ok(Settings {
        issuer,
        issuer_url,
        jwks_uri,
        resource,
        metadata_url: metadata_url.to_string(),
        metadata_path,
        algorithms,
        scopes_supported,
        required_scopes,
        leeway,
        jwks_refresh,
        jwks_min_refresh,
        claims,
    })
}

/// An `https` URL, or an `http` one on a loopback address (a local issuer or test): the
/// authorization server's endpoints must be HTTPS (MCP authorization, "Communication
/// Security").
fn endpoint_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|error| format!("must be an absolute URL ({error})"))?;
    if url.fragment().is_some() {
        return Err("must not have a fragment".to_owned());
    }
    let loopback = url.host_str().is_some_and(|host| {
        host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err("must be an https:// URL (http:// only on a loopback address)".to_owned()),
    }
}

/// Algorithm names, asymmetric ones only.
fn algorithms_of(names: &[String]) -> Result<Vec<Algorithm>, String> {
    if names.is_empty() {
        return Err("must name at least one algorithm, such as \"RS256\"".to_owned());
    }
    let mut algorithms = Vec::with_capacity(names.len());
    for name in names {
        let algorithm: Algorithm = name.trim().parse().map_err(|_| {
            format!("names an unknown algorithm {name:?} (RS256, PS256, ES256, EdDSA, ...)")
        })?;
        if !DEFAULT_ALGORITHMS.contains(&algorithm) {
            return Err(format!(
                "names {name:?}: HMAC algorithms are refused, an access token must be signed \
                 with the issuer's private key"
            ));
        }
        algorithms.push(algorithm);
    }
    Ok(algorithms)
}

/// Scope names: non-blank, no space inside (a scope string separates them by spaces).
fn scopes_of(scopes: &[String]) -> Result<Vec<String>, String> {
    scopes
        .iter()
        .map(|scope| {
            let scope = scope.trim();
            if scope.is_empty()
                || !scope
                    .bytes()
                    .all(|byte| byte.is_ascii_graphic() && byte != b'"' && byte != b'\\')
            {
                Err(format!(
                    "holds {scope:?}: a scope is printable ASCII without spaces, quotes or \
                     backslashes"
                ))
            } else {
                Ok(scope.to_owned())
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        OAuthConfig::from_toml(text, "oauth.toml")
            .expect_err("an invalid file")
            .to_string()
    }

    const GOOD: &str = r#"
        issuer = "https://auth.example.com/tenant"
        resource = "https://mcp.example.com/mcp"
        scopes_supported = ["mcp", "mcp:admin"]
        required_scopes = ["mcp"]
    "#;

    #[test]
    fn a_good_file_names_its_metadata_url_after_the_resource() {
        let config = OAuthConfig::from_toml(GOOD, "oauth.toml").expect("a valid file");
        assert_eq!(config.issuer(), "https://auth.example.com/tenant");
        assert_eq!(config.resource(), "https://mcp.example.com/mcp");
        assert_eq!(
            config.resource_metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let settings = config.verifier.settings();
        assert_eq!(settings.claims.org, "org");
        assert_eq!(settings.claims.user, "sub");
        assert_eq!(settings.algorithms, DEFAULT_ALGORITHMS.to_vec());
    }

    #[test]
    fn bad_values_name_their_key() {
        let message = error("issuer = \"http://auth.example.com\"\nresource = \"https://a/mcp\"\n");
        assert!(
            message.contains("`issuer`") && message.contains("https"),
            "{message}"
        );
        // http is fine on loopback, for a local issuer.
        let local =
            "issuer = \"http://127.0.0.1:9000\"\nresource = \"http://localhost:8080/mcp\"\n";
        assert!(OAuthConfig::from_toml(local, "o.toml").is_ok());

        let base = "issuer = \"https://a\"\nresource = \"https://b/mcp\"\n";
        let message = error(&format!("{base}algorithms = [\"HS256\"]\n"));
        assert!(
            message.contains("`algorithms`") && message.contains("HMAC"),
            "{message}"
        );
        let message = error(&format!("{base}algorithms = [\"XX1\"]\n"));
        assert!(message.contains("unknown algorithm"), "{message}");
        let message = error(&format!("{base}[claims]\norg = \" \"\n"));
        assert!(message.contains("`claims.org`"), "{message}");
        let message = error(&format!("{base}required_scopes = [\"a b\"]\n"));
        assert!(message.contains("`required_scopes`"), "{message}");
        let message = error(&format!("{base}leeway_secs = 3600\n"));
        assert!(message.contains("`leeway_secs`"), "{message}");
        let message = error(&format!(
            "{base}jwks_min_refresh_secs = 10\njwks_refresh_secs = 5\n"
        ));
        assert!(message.contains("`jwks_min_refresh_secs`"), "{message}");
        let message = error("issuer = \"https://a\"\nresource = \"https://b/mcp?x=1\"\n");
        assert!(
            message.contains("`resource`") && message.contains("query"),
            "{message}"
        );
        let message = error(&format!("{base}audience = \"x\"\n"));
        assert!(
            message.contains("audience") && message.contains("oauth.toml"),
            "{message}"
        );
        let message = error("resource = \"https://b/mcp\"\n");
        assert!(message.contains("issuer"), "{message}");
    }
}

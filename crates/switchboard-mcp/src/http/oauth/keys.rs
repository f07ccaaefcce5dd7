//! The issuer's signing keys (its JWKS), fetched over HTTP and cached, so that checking a token
//! costs no request to the issuer but the first one, a rotation, or the periodic refresh.
//!
//! The JWKS URL is the configured `jwks_uri`, or the `jwks_uri` of the issuer's metadata, tried
//! in the order the MCP authorization specification gives clients: RFC 8414 metadata with path
//! insertion, OpenID Connect discovery with path insertion, then with the path appended (for an
//! issuer without a path, the first two only). The metadata's `issuer` must be the configured
//! one (RFC 8414 §3.3).
//!
//! Redirects are not followed. Keys are fetched again when they are older than
//! `jwks_refresh_secs` (by the first request that finds them so; the requests meanwhile use them
//! as they are, and a failure keeps them), or when a token names a `kid` the set does not hold: a rotation. Fetches are one
//! at a time and at least `jwks_min_refresh_secs` apart, so tokens with made-up key ids cannot
//! make the server hammer the issuer. Keys that cannot verify a token (encryption keys, HMAC
//! secrets, unknown key types) are left out of the set.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use jsonwebtoken::{Algorithm, DecodingKey, jwk::Jwk, jwk::PublicKeyUse};
use reqwest::Url;
use serde::Deserialize;

use super::Settings;

/// How long one request to the issuer may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest metadata or JWKS document read: 1 MiB.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// One verification key of the set.
#[derive(Clone)]
pub(crate) struct Key {
    /// The key, ready for `jsonwebtoken`.
    pub(crate) decoding: DecodingKey,
    /// The algorithm the JWK is restricted to (`alg`), if it names one.
    pub(crate) algorithm: Option<Algorithm>,
}

/// The keys of one fetch.
#[derive(Default)]
struct KeySet {
    /// By `kid`.
    by_id: HashMap<String, Arc<Key>>,
    /// The one key, when the set holds exactly one (for a token without `kid`).
    only: Option<Arc<Key>>,
    /// When they were fetched; `None`: never.
    fetched: Option<Instant>,
    /// Counts successful fetches, so a waiting fetch sees that another one just happened.
    generation: u64,
}

impl KeySet {
    fn find(&self, kid: Option<&str>) -> Option<Arc<Key>> {
        match kid {
            Some(kid) => self.by_id.get(kid).cloned(),
            None => self.only.clone(),
        }
    }
}

/// Why no key was found for a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyError {
    /// The keys are known, and none has the token's `kid`.
    Unknown,
    /// The keys could not be fetched yet.
    Unavailable,
}

/// What a fetch remembers between fetches.
#[derive(Default)]
struct FetchState {
    /// The JWKS URL, once configured or discovered.
    jwks_uri: Option<Url>,
    /// When the last fetch started (successful or not).
    last_attempt: Option<Instant>,
}

/// The cache of the issuer's keys.
pub(crate) struct KeyCache {
    client: reqwest::Client,
    settings: Arc<Settings>,
    current: RwLock<Arc<KeySet>>,
    fetch: tokio::sync::Mutex<FetchState>,
}

/// Why a fetch failed (logged, never shown to a client).
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("GET {url}: {source}")]
    Request {
        url: Url,
        #[source]
        source: reqwest::Error,
    },
    #[error("GET {url}: status {status}")]
    Status { url: Url, status: u16 },
    #[error("GET {url}: larger than {MAX_DOCUMENT_BYTES} bytes")]
    TooLarge { url: Url },
    #[error("GET {url}: not the expected JSON: {source}")]
    Json {
        url: Url,
        #[source]
        source: serde_json::Error,
    },
    #[error("the metadata at {url} is for issuer {found:?}, not {expected:?}")]
    WrongIssuer {
        url: Url,
        found: String,
        expected: String,
    },
    #[error("the metadata at {url} has an unusable jwks_uri: {reason}")]
    BadJwksUri { url: Url, reason: String },
    #[error("no metadata of the issuer found (tried {tried})")]
    NoMetadata { tried: String },
}

/// The part of authorization server metadata (RFC 8414, OpenID Connect discovery) used here.
#[derive(Deserialize)]
struct IssuerMetadata {
    issuer: String,
    #[serde(default)]
    jwks_uri: Option<String>,
}

/// A JWKS document, each key read on its own so that one unusable key spoils nothing.
#[derive(Deserialize)]
struct RawKeySet {
    keys: Vec<serde_json::Value>,
}

impl KeyCache {
    /// An empty cache for `settings`, with its own HTTP client.
    pub(crate) fn new(settings: Arc<Settings>) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            // A redirect could lead from https to plain http: the configured URLs are the ones.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let fetch = FetchState {
            jwks_uri: settings.jwks_uri.clone(),
            last_attempt: None,
        };
        Ok(Self {
            client,
            settings,
            current: RwLock::new(Arc::new(KeySet::default())),
            fetch: tokio::sync::Mutex::new(fetch),
        })
    }

    fn current(&self) -> Arc<KeySet> {
        match self.current.read() {
            Ok(set) => Arc::clone(&set),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The key a token names (`kid`; `None`: the set's only key), fetching the set when it is
    /// stale or lacks that key.
    pub(crate) async fn key(&self, kid: Option<&str>) -> Result<Arc<Key>, KeyError> {
        let set = self.current();
        if let Some(key) = set.find(kid) {
            let fresh = set
                .fetched
                .is_some_and(|fetched| fetched.elapsed() < self.settings.jwks_refresh);
            if !fresh && let Ok(fetch) = self.fetch.try_lock() {
                // Stale: this request fetches the set again; the requests arriving meanwhile
                // use the key they found rather than wait for the issuer.
                self.refresh_holding(fetch, set.generation).await;
            }
            return Ok(self.current().find(kid).unwrap_or(key));
        }
        self.refresh(set.generation).await;
        let set = self.current();
        match set.find(kid) {
            Some(key) => Ok(key),
            None if set.fetched.is_none() => Err(KeyError::Unavailable),
            None => Err(KeyError::Unknown),
        }
    }

    /// Fetches the keys now (at start-up), unless a fetch happened within the floor.
    pub(crate) async fn prefetch(&self) {
        let generation = self.current().generation;
        self.refresh(generation).await;
    }

    /// Fetches the set, unless another fetch succeeded since generation `seen` or one started
    /// within the floor. A failure keeps the keys there are.
    async fn refresh(&self, seen: u64) {
        let fetch = self.fetch.lock().await;
        self.refresh_holding(fetch, seen).await;
    }

    /// [`KeyCache::refresh`], the fetch lock already held.
    async fn refresh_holding(&self, mut fetch: tokio::sync::MutexGuard<'_, FetchState>, seen: u64) {
        if self.current().generation != seen {
            return;
        }
        if fetch
            .last_attempt
            .is_some_and(|last| last.elapsed() < self.settings.jwks_min_refresh)
        {
            return;
        }
        fetch.last_attempt = Some(Instant::now());
        match self.fetch_set(&mut fetch).await {
            Ok((by_id, only)) => {
                tracing::info!(
                    issuer = %self.settings.issuer,
                    keys = by_id.len(),
                    "fetched the OAuth issuer's signing keys"
                );
                let set = KeySet {
                    by_id,
                    only,
                    fetched: Some(Instant::now()),
                    generation: seen.wrapping_add(1),
                };
                match self.current.write() {
                    Ok(mut current) => *current = Arc::new(set),
                    Err(poisoned) => *poisoned.into_inner() = Arc::new(set),
                }
            }
            Err(error) => {
                tracing::warn!(
                    issuer = %self.settings.issuer,
                    %error,
                    "could not fetch the OAuth issuer's signing keys; tokens signed with a key \
                     not yet known are refused until a fetch succeeds"
                );
            }
        }
    }

    /// One fetch of the set (discovering the JWKS URL first if needed).
    async fn fetch_set(
        &self,
        fetch: &mut FetchState,
    ) -> Result<(HashMap<String, Arc<Key>>, Option<Arc<Key>>), FetchError> {
        let jwks_uri = match &fetch.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover().await?;
                fetch.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let raw: RawKeySet = self.get_json(&jwks_uri).await?;
        let mut by_id = HashMap::new();
        let mut usable = Vec::new();
        for value in raw.keys {
            let Some((kid, key)) = usable_key(value) else {
                continue;
            };
            let key = Arc::new(key);
            if let Some(kid) = kid {
                by_id.insert(kid, Arc::clone(&key));
            }
            usable.push(key);
        }
        let only = if usable.len() == 1 {
            usable.pop()
        } else {
            None
        };
        Ok((by_id, only))
    }

    /// The JWKS URL from the issuer's metadata.
    async fn discover(&self) -> Result<Url, FetchError> {
        let mut tried = Vec::new();
        for url in metadata_urls(&self.settings.issuer_url) {
            let metadata: IssuerMetadata = match self.get_json(&url).await {
                Ok(metadata) => metadata,
                Err(error) => {
                    tracing::debug!(%error, "no OAuth issuer metadata here");
                    tried.push(url.to_string());
                    continue;
                }
            };
            if metadata.issuer != self.settings.issuer {
                return Err(FetchError::WrongIssuer {
                    url,
                    found: metadata.issuer,
                    expected: self.settings.issuer.clone(),
                });
            }
            let Some(jwks_uri) = metadata.jwks_uri else {
                return Err(FetchError::BadJwksUri {
                    url,
                    reason: "there is none".to_owned(),
                });
            };
            return super::endpoint_url(&jwks_uri)
                .map_err(|reason| FetchError::BadJwksUri { url, reason });
        }
        Err(FetchError::NoMetadata {
            tried: tried.join(", "),
        })
    }

    /// GETs `url` and reads its body, at most [`MAX_DOCUMENT_BYTES`], as JSON.
    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &Url) -> Result<T, FetchError> {
        let request = |source| FetchError::Request {
            url: url.clone(),
            source,
        };
        let mut response = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(request)?;
        if !response.status().is_success() {
            return Err(FetchError::Status {
                url: url.clone(),
                status: response.status().as_u16(),
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(request)? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(FetchError::TooLarge { url: url.clone() });
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|source| FetchError::Json {
            url: url.clone(),
            source,
        })
    }
}

/// A JWK that can verify a signature, with its `kid`; `None` for any other key.
fn usable_key(value: serde_json::Value) -> Option<(Option<String>, Key)> {
    let jwk: Jwk = match serde_json::from_value(value) {
        Ok(jwk) => jwk,
        Err(error) => {
            tracing::debug!(%error, "left out a JWK that cannot be read");
            return None;
        }
    };
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let algorithm = match jwk.common.key_algorithm {
        Some(algorithm) => Some(algorithm.to_string().parse::<Algorithm>().ok()?),
        None => None,
    };
    let decoding = DecodingKey::from_jwk(&jwk).ok()?;
    if decoding.family() == jsonwebtoken::AlgorithmFamily::Hmac {
        // A shared secret in a public key set is a misconfigured issuer: never trust it.
        return None;
    }
    Some((
        jwk.common.key_id,
        Key {
            decoding,
            algorithm,
        },
    ))
}

/// Where the issuer's metadata may be, in the order to try (MCP authorization, "Authorization
/// Server Metadata Discovery").
fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |well_known: &str| {
        let mut url = issuer.clone();
        url.set_path(well_known);
        url.set_query(None);
        url
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server"),
            at("/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            at(&format!("/.well-known/oauth-authorization-server{path}")),
            at(&format!("/.well-known/openid-configuration{path}")),
            at(&format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(issuer: &str) -> Vec<String> {
        metadata_urls(&Url::parse(issuer).expect("a URL"))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn metadata_is_looked_for_where_the_mcp_spec_says() {
        assert_eq!(
            urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls("https://auth.example.com/tenant1/"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn only_signature_keys_are_kept() {
        let ec = serde_json::json!({
            "kty": "EC", "crv": "P-256", "kid": "a", "alg": "ES256", "use": "sig",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
        });
        let (kid, key) = usable_key(ec.clone()).expect("a usable key");
        assert_eq!(kid.as_deref(), Some("a"));
        assert_eq!(key.algorithm, Some(Algorithm::ES256));

        let mut encryption = ec;
        encryption["use"] = serde_json::json!("enc");
        assert!(usable_key(encryption).is_none());
        let secret = serde_json::json!({"kty": "oct", "kid": "s", "k": "c2VjcmV0"});
        assert!(usable_key(secret).is_none());
        assert!(usable_key(serde_json::json!({"kty": "XYZ", "kid": "x"})).is_none());
    }
}

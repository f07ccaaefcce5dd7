//! A local OAuth authorization server for the OAuth tests: its own signing keys (fixed test
//! keys in `tests/fixtures/oauth`, made with `openssl genpkey`), RFC 8414 metadata and a JWKS
//! endpoint on loopback, which counts its fetches and can publish a new key while it runs. It
//! mints the tokens the tests send (it has no authorization endpoint: the tests are the
//! client).

use std::{
    net::{SocketAddr, TcpListener as StdListener},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use jsonwebtoken::{
    Algorithm, EncodingKey, Header,
    jwk::{Jwk, JwkSet, PublicKeyUse},
};
use serde_json::{Value, json};
use switchboard_mcp::{HttpAuth, HttpConfig, OAuthConfig};
use tokio::task::JoinHandle;

/// A signing key of the tests.
pub(crate) struct TestKey {
    encoding: EncodingKey,
    algorithm: Algorithm,
}

impl TestKey {
    /// The issuer's ES256 key (published from the start as [`ISSUER_KID`]).
    pub(crate) fn issuer() -> Self {
        Self::ec(include_bytes!("../fixtures/oauth/issuer-es256.pem"))
    }

    /// An ES256 key the issuer never publishes.
    pub(crate) fn stranger() -> Self {
        Self::ec(include_bytes!("../fixtures/oauth/stranger-es256.pem"))
    }

    /// The RS256 key the issuer rotates to ([`ROTATED_KID`]), published only when a test says.
    pub(crate) fn rotated() -> Self {
        Self {
            encoding: EncodingKey::from_rsa_pem(include_bytes!(
                "../fixtures/oauth/rotated-rs256.pem"
            ))
            .expect("an RSA test key"),
            algorithm: Algorithm::RS256,
        }
    }

    fn ec(pem: &[u8]) -> Self {
        Self {
            encoding: EncodingKey::from_ec_pem(pem).expect("an EC test key"),
            algorithm: Algorithm::ES256,
        }
    }

    /// The public half as a JWK with `kid`.
    pub(crate) fn jwk(&self, kid: &str) -> Jwk {
        let mut jwk = Jwk::from_encoding_key(&self.encoding, self.algorithm).expect("a JWK");
        jwk.common.key_id = Some(kid.to_owned());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        jwk
    }

    /// A JWT of `claims` signed with this key, its header naming `kid`.
    pub(crate) fn sign(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(self.algorithm);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("a signed token")
    }
}

/// The `kid` of the issuer's first key.
pub(crate) const ISSUER_KID: &str = "issuer-2026-1";

/// The `kid` of the key the issuer rotates to.
pub(crate) const ROTATED_KID: &str = "issuer-2026-2";

/// The running issuer.
pub(crate) struct Issuer {
    /// `http://127.0.0.1:PORT`: the issuer identifier and the base of its endpoints.
    pub(crate) url: String,
    keys: Arc<Mutex<JwkSet>>,
    fetches: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Issuer {
    /// Starts an issuer on a free loopback port, publishing the [`TestKey::issuer`] key.
    pub(crate) async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        let keys = Arc::new(Mutex::new(JwkSet {
            keys: vec![TestKey::issuer().jwk(ISSUER_KID)],
        }));
        let fetches = Arc::new(AtomicUsize::new(0));
        let metadata = json!({
            "issuer": url,
            "authorization_endpoint": format!("{url}/authorize"),
            "token_endpoint": format!("{url}/token"),
            "jwks_uri": format!("{url}/jwks"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
        })
        .to_string();
        let served_keys = Arc::clone(&keys);
        let counted = Arc::clone(&fetches);
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || {
                    let metadata = metadata.clone();
                    async move { ([("content-type", "application/json")], metadata) }
                }),
            )
            .route(
                "/jwks",
                axum::routing::get(move || {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let body = serde_json::to_string(&*served_keys.lock().expect("the keys"))
                        .expect("a JWKS");
                    async move { ([("content-type", "application/json")], body) }
                }),
            );
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            keys,
            fetches,
            task,
        }
    }

    /// Publishes `jwk` besides the keys there are (a rotation).
    pub(crate) fn publish(&self, jwk: Jwk) {
        self.keys.lock().expect("the keys").keys.push(jwk);
    }

    /// How many times the JWKS was fetched.
    pub(crate) fn jwks_fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// The claims of a token of this issuer for `resource`, as `org`/`user` with `roles`,
    /// valid for an hour.
    pub(crate) fn claims(&self, resource: &str, org: &str, user: &str, roles: &[&str]) -> Value {
        let now = jsonwebtoken::get_current_timestamp();
        json!({
            "iss": self.url,
            "aud": resource,
            "sub": user,
            "org": org,
            "roles": roles,
            "iat": now,
            "exp": now + 3_600,
        })
    }

    /// Stops the issuer.
    pub(crate) fn stop(self) {
        self.task.abort();
    }
}

/// A free loopback address, and the resource URL of an MCP endpoint there: the resource must
/// be known before the server binds it.
pub(crate) fn free_endpoint() -> (SocketAddr, String) {
    let addr = StdListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port");
    (addr, format!("http://{addr}/mcp"))
}

/// An endpoint on `addr` requiring the issuer's tokens for `resource`, with `extra` lines in
/// its OAuth file.
pub(crate) fn oauth_config(
    issuer: &Issuer,
    addr: SocketAddr,
    resource: &str,
    extra: &str,
) -> HttpConfig {
    let text = format!(
        "issuer = \"{}\"\nresource = \"{resource}\"\n{extra}",
        issuer.url
    );
    let oauth = OAuthConfig::from_toml(&text, "oauth.toml").expect("a valid OAuth file");
    HttpConfig::new(addr, HttpAuth::OAuth(oauth)).expect("a valid configuration")
}

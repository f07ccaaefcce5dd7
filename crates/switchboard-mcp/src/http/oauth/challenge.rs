//! What a client learns about OAuth from the server: the Protected Resource Metadata document
//! (RFC 9728) and the `WWW-Authenticate` challenges of refused requests, which name that
//! document's URL (`resource_metadata`), so a client finds the authorization server from a
//! `401` alone.
//!
//! - no token: `401`, `Bearer resource_metadata="…"` (and `scope="…"` when scopes are
//!   required);
//! - a token that is not valid: `401`, `Bearer error="invalid_token", error_description="…",
//!   resource_metadata="…"`;
//! - a valid token without a required scope: `403`, `Bearer error="insufficient_scope",
//!   scope="…", resource_metadata="…"` (MCP authorization, "Scope Challenge Handling");
//! - the issuer's keys not fetched yet: `503` with `Retry-After` (the token may be good).
//!
//! The document is served at `/.well-known/oauth-protected-resource`, at that path followed by
//! `/mcp`, and at that path followed by the configured resource's path, outside every other
//! check (it is public), with `Access-Control-Allow-Origin: *` for browser-based clients.

use std::sync::Arc;

use axum::{
    body::Body,
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use serde_json::json;

use super::{Settings, Verifier};
use crate::http::reject::Refusal;

/// Where RFC 9728 puts the metadata document (a resource with a path adds it after this).
pub(crate) const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

/// How long a client waits before trying again when the issuer's keys are not fetched yet.
const KEYS_RETRY_AFTER_SECS: u64 = 5;

/// Why a token was refused, before the answer is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenRefusal {
    /// No bearer token.
    Missing,
    /// A token that is not valid, and why (for `error_description`; never the token).
    Invalid(String),
    /// A valid token without a required scope.
    InsufficientScope,
    /// The issuer's keys could not be fetched yet.
    Unavailable,
}

impl TokenRefusal {
    /// An invalid token, described by `description`.
    pub(crate) fn invalid(description: impl Into<String>) -> Self {
        TokenRefusal::Invalid(description.into())
    }

    /// The answer: status, challenge and JSON-RPC error body.
    pub(crate) fn response(&self, settings: &Settings) -> Response {
        let metadata = &settings.metadata_url;
        let scope = settings.required_scopes.join(" ");
        let with_scope = |mut challenge: String| {
            if !scope.is_empty() {
                challenge.push_str(&format!(", scope=\"{scope}\""));
            }
            challenge
        };
        let (status, challenge, message) = match self {
            TokenRefusal::Missing => (
                StatusCode::UNAUTHORIZED,
                Some(with_scope(format!(
                    "Bearer resource_metadata=\"{metadata}\""
                ))),
                format!(
                    "Unauthorized: this MCP endpoint needs an OAuth access token \
                     (`Authorization: Bearer <token>`) from {}; see {metadata}",
                    settings.issuer
                ),
            ),
            TokenRefusal::Invalid(description) => {
                let description = quotable(description);
                (
                    StatusCode::UNAUTHORIZED,
                    Some(with_scope(format!(
                        "Bearer error=\"invalid_token\", error_description=\"{description}\", \
                         resource_metadata=\"{metadata}\""
                    ))),
                    format!(
                        "Unauthorized: {description}; get a new token from {}",
                        settings.issuer
                    ),
                )
            }
            TokenRefusal::InsufficientScope => (
                StatusCode::FORBIDDEN,
                Some(format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{scope}\", \
                     resource_metadata=\"{metadata}\", error_description=\"the token lacks a \
                     scope this server requires\""
                )),
                format!("Forbidden: the access token must hold the scopes {scope}"),
            ),
            TokenRefusal::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                format!(
                    "the server cannot check access tokens yet: the signing keys of {} could \
                     not be fetched; try again shortly",
                    settings.issuer
                ),
            ),
        };
        let mut refusal = Refusal::new(status, message);
        if *self == TokenRefusal::Unavailable {
            refusal = refusal.retry_after(KEYS_RETRY_AFTER_SECS);
        }
        let mut response = refusal.into_response();
        if let Some(value) = challenge.and_then(|text| HeaderValue::from_str(&text).ok()) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// `text` as an RFC 6750 quoted value may hold it: printable ASCII without `"` or `\`.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

/// The metadata document of `settings`.
fn document(settings: &Settings) -> serde_json::Value {
    let mut document = json!({
        "resource": settings.resource,
        "authorization_servers": [settings.issuer],
        "bearer_methods_supported": ["header"],
    });
    if !settings.scopes_supported.is_empty() {
        document["scopes_supported"] = json!(settings.scopes_supported);
    }
    document
}

/// The routes serving the metadata document, to merge outside the endpoint's checks.
pub(crate) fn metadata_routes(verifier: &Arc<Verifier>) -> axum::Router {
    let settings = verifier.settings();
    let body = Arc::new(document(settings).to_string());
    let serve = move || {
        let body = Arc::clone(&body);
        async move {
            let mut response = Response::new(Body::from(body.as_str().to_owned()));
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
            headers.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            );
            response
        }
    };
    // A browser-based client sends `MCP-Protocol-Version` with its GET, so it asks first.
    let preflight = || async {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NO_CONTENT;
        let headers = response.headers_mut();
        for (name, value) in [
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
            (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, OPTIONS"),
            (header::ACCESS_CONTROL_ALLOW_HEADERS, "*"),
        ] {
            headers.insert(name, HeaderValue::from_static(value));
        }
        response
    };
    let route = axum::routing::get(serve).options(preflight);
    let mut paths = vec![
        PROTECTED_RESOURCE_PATH.to_owned(),
        format!("{PROTECTED_RESOURCE_PATH}{}", crate::http::MCP_PATH),
        settings.metadata_path.clone(),
    ];
    paths.sort_unstable();
    paths.dedup();
    let mut router = axum::Router::new();
    for path in paths {
        router = router.route(&path, route.clone());
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::oauth::OAuthConfig;

    fn settings(extra: &str) -> Arc<Verifier> {
        let text = format!(
            "issuer = \"https://auth.example.com\"\nresource = \"https://mcp.example.com/mcp\"\n{extra}"
        );
        OAuthConfig::from_toml(&text, "o.toml")
            .expect("a valid file")
            .verifier
    }

    fn challenge(response: &Response) -> &str {
        response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .expect("ASCII")
    }

    #[test]
    fn challenges_point_to_the_metadata_and_name_the_scopes() {
        let verifier = settings("required_scopes = [\"mcp\", \"tools\"]\n");
        let settings = verifier.settings();
        let missing = TokenRefusal::Missing.response(settings);
        assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            challenge(&missing),
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/\
             oauth-protected-resource/mcp\", scope=\"mcp tools\""
        );
        let invalid = TokenRefusal::invalid("a \"quoted\" reason").response(settings);
        assert_eq!(invalid.status(), StatusCode::UNAUTHORIZED);
        assert!(
            challenge(&invalid).starts_with(
                "Bearer error=\"invalid_token\", error_description=\"a 'quoted' reason\", \
                 resource_metadata=\"https://mcp.example.com/"
            ),
            "{}",
            challenge(&invalid)
        );
        let scope = TokenRefusal::InsufficientScope.response(settings);
        assert_eq!(scope.status(), StatusCode::FORBIDDEN);
        assert!(
            challenge(&scope)
                .starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp tools\"")
        );
        let unavailable = TokenRefusal::Unavailable.response(settings);
        assert_eq!(unavailable.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(unavailable.headers()[header::RETRY_AFTER], "5");
    }

    #[test]
    fn the_document_lists_what_rfc_9728_asks() {
        let verifier = settings("scopes_supported = [\"mcp\"]\n");
        assert_eq!(
            document(verifier.settings()),
            json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://auth.example.com"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["mcp"],
            })
        );
        let verifier = settings("");
        assert!(
            document(verifier.settings())
                .get("scopes_supported")
                .is_none()
        );
    }
}

//! The endpoint as an OAuth 2.1 resource server, against a local issuer the tests start
//! (`oauth_support`): real rmcp clients and raw HTTP, tokens signed with the issuer's keys or
//! not. A good token acts as the org, user and roles its claims map to; an expired one, one for
//! another audience, one signed by another key or naming an unknown key are `401`
//! `invalid_token`; no token is `401` with a challenge naming the metadata document, which is
//! served; a key published after start-up is picked up, and made-up key ids do not make the
//! server hammer the issuer; a token of another org sees nothing of the first org's, nor uses
//! its sessions.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use switchboard_mcp::HttpServer;
use switchboard_registry::ToolRegistry;

use crate::common::{Client, bounded, registry};
use crate::http_support::{
    audit_count, call as raw_call, connect, http, in_session, initialize, open_session, post, start,
};
use crate::oauth_support::{ISSUER_KID, Issuer, ROTATED_KID, TestKey, free_endpoint, oauth_config};

async fn stop(server: HttpServer, registry: ToolRegistry, issuer: Issuer) {
    bounded("stopping the server", server.shutdown())
        .await
        .expect("stops");
    registry.shutdown().await;
    issuer.stop();
}

async fn close(client: Client) {
    bounded("closing a client", client.cancel())
        .await
        .expect("closes");
}

/// Calls `tool` with `arguments` and returns its structured result.
async fn call(client: &Client, tool: &'static str, arguments: Value) -> Value {
    let mut params = CallToolRequestParams::new(tool);
    if let Value::Object(arguments) = arguments {
        params = params.with_arguments(arguments);
    }
    let result = bounded("tools/call", client.call_tool(params))
        .await
        .expect("a result");
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    result.structured_content.expect("structuredContent")
}

/// A raw `initialize` with `token`: its status and `WWW-Authenticate` header.
async fn attempt(server: &HttpServer, token: Option<&str>) -> (u16, String) {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|bearer| vec![("authorization", bearer)])
        .unwrap_or_default();
    let response = post(&http(), &server.url(), &headers, &initialize()).await;
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (response.status().as_u16(), challenge)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_token_acts_as_the_org_user_and_roles_its_claims_map_to() {
    let issuer = Issuer::start().await;
    let registry = registry().await;
    let (addr, resource) = free_endpoint();
    let server = start(&registry, oauth_config(&issuer, addr, &resource, "")).await;
    let key = TestKey::issuer();

    let token = key.sign(
        ISSUER_KID,
        &issuer.claims(&resource, "acme", "alice", &["admin"]),
    );
    let alice = connect(&server, Some(&token))
        .await
        .expect("alice connects");
    let me = call(&alice, "core_get_current_user", json!({})).await;
    assert_eq!(me["org_id"], json!("acme"), "{me}");
    assert_eq!(me["user_id"], json!("alice"), "{me}");
    assert_eq!(me["roles"], json!(["admin"]), "{me}");
    // Roles are the token's: an admin sees the admin tools.
    let tools = bounded("tools/list", alice.list_all_tools())
        .await
        .expect("list");
    assert!(
        tools.iter().any(|tool| tool.name == "roster_clear_roster"),
        "{tools:?}"
    );

    // The roles claim may be a space-separated string too, and the user claim configurable.
    let mut claims = issuer.claims(&resource, "acme", "ignored", &[]);
    claims["roles"] = json!("staff");
    claims["preferred_username"] = json!("sam");
    let server_b = start(
        &registry,
        oauth_config(
            &issuer,
            free_endpoint().0,
            &resource,
            "[claims]\nuser = \"preferred_username\"\n",
        ),
    )
    .await;
    let sam = connect(&server_b, Some(&key.sign(ISSUER_KID, &claims)))
        .await
        .expect("sam connects");
    let me = call(&sam, "core_get_current_user", json!({})).await;
    assert_eq!(
        (&me["user_id"], &me["roles"]),
        (&json!("sam"), &json!(["staff"])),
        "{me}"
    );

    close(alice).await;
    close(sam).await;
    bounded("stopping", server_b.shutdown())
        .await
        .expect("stops");
    stop(server, registry, issuer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_is_401_with_a_challenge_naming_metadata_that_is_served() {
    let issuer = Issuer::start().await;
    let registry = registry().await;
    let (addr, resource) = free_endpoint();
    let config = oauth_config(
        &issuer,
        addr,
        &resource,
        "scopes_supported = [\"mcp\"]\nrequired_scopes = [\"mcp\"]\n",
    );
    let server = start(&registry, config).await;

    let (status, challenge) = attempt(&server, None).await;
    assert_eq!(status, 401);
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"mcp\"")
    );

    let expected = json!({
        "resource": resource,
        "authorization_servers": [issuer.url],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp"],
    });
    for url in [
        metadata_url.clone(),
        format!("http://{addr}/.well-known/oauth-protected-resource"),
    ] {
        let response = bounded("GET metadata", http().get(&url).send())
            .await
            .expect("the server answers");
        assert_eq!(response.status(), 200, "{url}");
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        let document: Value = response.json().await.expect("JSON");
        assert_eq!(document, expected, "{url}");
    }

    // A valid token without the required scope is 403 insufficient_scope; with it, it works.
    let key = TestKey::issuer();
    let mut claims = issuer.claims(&resource, "acme", "alice", &["admin"]);
    let (status, challenge) = attempt(&server, Some(&key.sign(ISSUER_KID, &claims))).await;
    assert_eq!(status, 403);
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp\""),
        "{challenge}"
    );
    claims["scope"] = json!("openid mcp");
    let (status, _) = attempt(&server, Some(&key.sign(ISSUER_KID, &claims))).await;
    assert_eq!(status, 200);

    stop(server, registry, issuer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_foreign_audience_foreign_key_and_unknown_kid_tokens_are_401_invalid_token() {
    let issuer = Issuer::start().await;
    let registry = registry().await;
    let (addr, resource) = free_endpoint();
    let server = start(&registry, oauth_config(&issuer, addr, &resource, "")).await;
    let key = TestKey::issuer();
    let good = issuer.claims(&resource, "acme", "alice", &["admin"]);

    let mut expired = good.clone();
    let now = jsonwebtoken::get_current_timestamp();
    expired["iat"] = json!(now - 7_200);
    expired["exp"] = json!(now - 3_600);
    let mut other_audience = good.clone();
    other_audience["aud"] = json!("http://127.0.0.1:1/other-mcp");
    let mut other_issuer = good.clone();
    other_issuer["iss"] = json!("http://127.0.0.1:1");
    let mut no_org = good.clone();
    no_org.as_object_mut().expect("an object").remove("org");
    let mut not_yet = good.clone();
    not_yet["nbf"] = json!(now + 3_600);

    let cases = [
        ("expired", key.sign(ISSUER_KID, &expired), "expired"),
        (
            "another audience",
            key.sign(ISSUER_KID, &other_audience),
            "not for this resource",
        ),
        (
            "another issuer",
            key.sign(ISSUER_KID, &other_issuer),
            "another issuer",
        ),
        (
            "another key under the issuer's kid",
            TestKey::stranger().sign(ISSUER_KID, &good),
            "signature does not verify",
        ),
        (
            "an unknown kid",
            TestKey::stranger().sign("made-up", &good),
            "key the issuer does not publish",
        ),
        ("no org claim", key.sign(ISSUER_KID, &no_org), "`org`"),
        (
            "not valid yet",
            key.sign(ISSUER_KID, &not_yet),
            "not valid yet",
        ),
        ("not a JWT", "opaque-token".to_owned(), "not a JWT"),
    ];
    for (what, token, description) in cases {
        let (status, challenge) = attempt(&server, Some(&token)).await;
        assert_eq!(status, 401, "{what}");
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\", error_description=\"")
                && challenge.contains(description)
                && challenge.contains("resource_metadata=\""),
            "{what}: {challenge}"
        );
        assert!(connect(&server, Some(&token)).await.is_err(), "{what}");
    }
    // The good token works on the same server, and nothing else ran.
    let (status, _) = attempt(&server, Some(&key.sign(ISSUER_KID, &good))).await;
    assert_eq!(status, 200);
    assert_eq!(audit_count(&registry).await, 0);

    stop(server, registry, issuer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_is_picked_up_and_unknown_kids_fetch_the_keys_once_per_interval() {
    let issuer = Issuer::start().await;
    let registry = registry().await;
    let (addr, resource) = free_endpoint();
    let config = oauth_config(&issuer, addr, &resource, "jwks_min_refresh_secs = 3\n");
    let server = start(&registry, config).await;
    let claims = issuer.claims(&resource, "acme", "alice", &["admin"]);

    let (status, _) = attempt(&server, Some(&TestKey::issuer().sign(ISSUER_KID, &claims))).await;
    assert_eq!(status, 200);
    assert_eq!(issuer.jwks_fetches(), 1, "fetched once, at start-up");

    // A flood of made-up key ids within the interval fetches nothing more.
    let rotated = TestKey::rotated();
    let client = http();
    let flood = (0..20).map(|n| {
        let bearer = format!("Bearer {}", rotated.sign(&format!("made-up-{n}"), &claims));
        let (client, url) = (&client, server.url());
        async move {
            post(client, &url, &[("authorization", &bearer)], &initialize())
                .await
                .status()
        }
    });
    for status in bounded("the flood", futures::future::join_all(flood)).await {
        assert_eq!(status, 401);
    }
    assert_eq!(issuer.jwks_fetches(), 1, "the floor holds the fetches back");

    // The issuer rotates to a new key; once the interval has passed, its first token fetches
    // the keys and is accepted.
    issuer.publish(rotated.jwk(ROTATED_KID));
    tokio::time::sleep(Duration::from_millis(3_100)).await;
    let client = connect(&server, Some(&rotated.sign(ROTATED_KID, &claims)))
        .await
        .expect("a token signed with the rotated key connects");
    let me = call(&client, "core_get_current_user", json!({})).await;
    assert_eq!(me["user_id"], json!("alice"), "{me}");
    assert_eq!(issuer.jwks_fetches(), 2);

    close(client).await;
    stop(server, registry, issuer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_another_org_acts_only_in_that_org() {
    let issuer = Issuer::start().await;
    let registry = registry().await;
    let (addr, resource) = free_endpoint();
    // Posting a notice is an execute tool: these tokens stand for people in a session.
    let config = oauth_config(
        &issuer,
        addr,
        &resource,
        "[claims]\ninitiator = \"human\"\n",
    );
    let server = start(&registry, config).await;
    let key = TestKey::issuer();

    let alice_token = key.sign(
        ISSUER_KID,
        &issuer.claims(&resource, "acme", "alice", &["admin"]),
    );
    let gina_token = key.sign(
        ISSUER_KID,
        &issuer.claims(&resource, "globex", "gina", &["admin"]),
    );
    let alice = connect(&server, Some(&alice_token))
        .await
        .expect("alice connects");
    let gina = connect(&server, Some(&gina_token))
        .await
        .expect("gina connects");

    call(
        &alice,
        "roster_post_notice",
        json!({"text": "acme only: the rota changes on Monday"}),
    )
    .await;
    let acme = call(&alice, "roster_list_notices", json!({})).await;
    assert_eq!(acme["notices"].as_array().map(Vec::len), Some(1), "{acme}");
    let globex = call(&gina, "roster_list_notices", json!({})).await;
    assert_eq!(globex["notices"], json!([]), "{globex}");
    let me = call(&gina, "core_get_current_user", json!({})).await;
    assert_eq!(me["org_id"], json!("globex"), "{me}");

    // A session is its identity's: gina's token cannot use a session alice's token opened,
    // and a second token of alice's (a refresh) can.
    let client = http();
    let session = open_session(&client, &server.url(), &alice_token).await;
    let whoami = raw_call(1, "core_get_current_user");
    let (status, _) = in_session(&client, &server.url(), &gina_token, &session, &whoami).await;
    assert_eq!(status, 404);
    let mut refreshed = issuer.claims(&resource, "acme", "alice", &["admin"]);
    refreshed["jti"] = json!("refreshed");
    let refreshed = key.sign(ISSUER_KID, &refreshed);
    let (status, answer) = in_session(&client, &server.url(), &refreshed, &session, &whoami).await;
    assert_eq!(status, 200, "{answer:?}");

    close(alice).await;
    close(gina).await;
    stop(server, registry, issuer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_issuers_keys_a_token_is_answered_503_not_accepted() {
    let issuer = Issuer::start().await;
    let registry = registry().await;
    let (addr, resource) = free_endpoint();
    // A JWKS URL where nothing listens: the keys cannot be fetched.
    let (closed, _) = free_endpoint();
    let config = oauth_config(
        &issuer,
        addr,
        &resource,
        &format!("jwks_uri = \"http://{closed}/jwks\"\n"),
    );
    let server = start(&registry, config).await;
    let token = TestKey::issuer().sign(
        ISSUER_KID,
        &issuer.claims(&resource, "acme", "alice", &["admin"]),
    );
    let response = post(
        &http(),
        &server.url(),
        &[("authorization", &format!("Bearer {token}"))],
        &initialize(),
    )
    .await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    assert_eq!(audit_count(&registry).await, 0);
    stop(server, registry, issuer).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_older_than_the_refresh_interval_are_fetched_again_by_the_next_request() {
    let issuer = Issuer::start().await;
    let registry = registry().await;
    let (addr, resource) = free_endpoint();
    let config = oauth_config(
        &issuer,
        addr,
        &resource,
        "jwks_refresh_secs = 1\njwks_min_refresh_secs = 1\n",
    );
    let server = start(&registry, config).await;
    let claims = issuer.claims(&resource, "acme", "alice", &["admin"]);
    let good = TestKey::issuer().sign(ISSUER_KID, &claims);
    assert_eq!(attempt(&server, Some(&good)).await.0, 200);
    assert_eq!(issuer.jwks_fetches(), 1);

    // The issuer publishes a key; once the set is stale, a token of a known key fetches it
    // again, and a token of the new key then needs no fetch of its own.
    let rotated = TestKey::rotated();
    issuer.publish(rotated.jwk(ROTATED_KID));
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(attempt(&server, Some(&good)).await.0, 200);
    assert_eq!(issuer.jwks_fetches(), 2);
    let (status, _) = attempt(&server, Some(&rotated.sign(ROTATED_KID, &claims))).await;
    assert_eq!(status, 200);
    assert_eq!(issuer.jwks_fetches(), 2);

    stop(server, registry, issuer).await;
}

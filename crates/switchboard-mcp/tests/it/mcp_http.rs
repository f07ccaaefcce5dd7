//! The streamable-HTTP endpoint's own rules, seen from a real rmcp client and from raw HTTP:
//! bearer tokens (401), DNS-rebinding protection (403, before 401), the body limit (413),
//! sessions (ownership, DELETE, 404, the grace window) and 2026-07-28 stateless calls. Every
//! server started here listens on `127.0.0.1:0` and is stopped before its test ends; every wait
//! is bounded.

use std::time::Duration;

use rmcp::{
    ClientLifecycleMode, ClientServiceExt as _,
    model::{CallToolRequestParams, ProtocolVersion},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use switchboard_audit::{AuditQuery, AuditRecord};
use switchboard_mcp::{
    AllowedOrigin, HttpAuth, HttpConfig, HttpConfigError, HttpServer, McpError, serve_http,
};
use switchboard_registry::ToolRegistry;

use crate::common::{Client, admin, bounded, registry};
use crate::http_support::{
    ALICE_TOKEN, GINA_TOKEN, SAM_TOKEN, audit_count, audit_count_reaching, call, connect, delete,
    http, in_session, initialize, loopback, message_of, open_session, post, post_chunked, start,
    token_config,
};

async fn stop(server: HttpServer, registry: ToolRegistry) {
    bounded("stopping the server", server.shutdown())
        .await
        .expect("stops");
    registry.shutdown().await;
}

async fn close(client: Client) {
    bounded("closing a client", client.cancel())
        .await
        .expect("closes");
}

async fn whoami(client: &Client) -> Value {
    let result = bounded(
        "tools/call",
        client.call_tool(CallToolRequestParams::new("core_get_current_user")),
    )
    .await
    .expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.expect("structuredContent")
}

async fn audit(registry: &ToolRegistry) -> Vec<AuditRecord> {
    bounded("an audit query", registry.audit().query(&AuditQuery::all()))
        .await
        .expect("the audit store answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_token_acts_as_its_own_identity_whatever_the_arguments_say() {
    let registry = registry().await;
    let server = start(&registry, token_config()).await;

    let alice = connect(&server, Some(ALICE_TOKEN))
        .await
        .expect("alice connects");
    let gina = connect(&server, Some(GINA_TOKEN))
        .await
        .expect("gina connects");
    let sam = connect(&server, Some(SAM_TOKEN))
        .await
        .expect("sam connects");

    let me = whoami(&alice).await;
    assert_eq!(
        (&me["org_id"], &me["user_id"]),
        (&json!("acme"), &json!("alice"))
    );
    let me = whoami(&gina).await;
    assert_eq!(
        (&me["org_id"], &me["user_id"]),
        (&json!("globex"), &json!("gina"))
    );

    // The list is the token's roles' list: staff may not clear a roster.
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect()
    };
    let sam_tools = names(
        bounded("tools/list", sam.list_all_tools())
            .await
            .expect("list"),
    );
    let alice_tools = names(
        bounded("tools/list", alice.list_all_tools())
            .await
            .expect("list"),
    );
    assert!(
        !sam_tools.contains(&"roster_clear_roster".to_owned()),
        "{sam_tools:?}"
    );
    assert!(
        alice_tools.contains(&"roster_clear_roster".to_owned()),
        "{alice_tools:?}"
    );

    // An org_id in the arguments is refused, never used.
    let refused = bounded(
        "tools/call with org_id",
        alice.call_tool(
            CallToolRequestParams::new("core_get_current_user").with_arguments(
                json!({"org_id": "globex"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        ),
    )
    .await
    .expect("a tool error");
    assert_eq!(refused.is_error, Some(true), "{refused:?}");

    let records = audit(&registry).await;
    assert_eq!(records.len(), 3, "one record per call: {records:#?}");
    for record in &records {
        let org = record.org_id.as_ref().map(|org| org.as_str());
        let user = record.user_id.as_ref().map(|user| user.as_str());
        match user {
            Some("alice") => assert_eq!(org, Some("acme"), "{record:?}"),
            Some("gina") => assert_eq!(org, Some("globex"), "{record:?}"),
            other => panic!("unexpected user {other:?}: {record:?}"),
        }
    }

    for client in [alice, gina, sam] {
        close(client).await;
    }
    stop(server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_unknown_token_is_401_with_a_bearer_challenge() {
    let registry = registry().await;
    let server = start(&registry, token_config()).await;
    let client = http();

    let missing = post(&client, &server.url(), &[], &initialize()).await;
    assert_eq!(missing.status(), 401);
    assert_eq!(
        missing.headers()["www-authenticate"],
        "Bearer realm=\"switchboard\""
    );
    let body: Value = missing.json().await.expect("a JSON-RPC error body");
    assert_eq!(body["error"]["code"], json!(-32600), "{body}");
    assert_eq!(body["id"], Value::Null, "{body}");

    let wrong = post(
        &client,
        &server.url(),
        &[("authorization", "Bearer not-a-token")],
        &initialize(),
    )
    .await;
    assert_eq!(wrong.status(), 401);
    let challenge = wrong.headers()["www-authenticate"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");

    // The real client fails to connect, and nothing was called or audited.
    assert!(connect(&server, Some("not-a-token")).await.is_err());
    assert!(connect(&server, None).await.is_err());
    assert_eq!(audit_count(&registry).await, 0);
    assert_eq!(server.session_count(), 0);

    stop(server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_or_origin_is_403_even_before_authentication() {
    let registry = registry().await;
    let config = token_config()
        .allow_origin(AllowedOrigin::parse("http://localhost:6274").expect("an origin"));
    let server = start(&registry, config).await;
    let client = http();
    let url = server.url();
    let port = server.local_addr().port();
    let bearer = format!("Bearer {ALICE_TOKEN}");

    // No token, and a rebinding page's Origin: 403, not 401.
    let evil_origin = post(
        &client,
        &url,
        &[("origin", "http://evil.example.com")],
        &initialize(),
    )
    .await;
    assert_eq!(evil_origin.status(), 403);
    let body: Value = evil_origin.json().await.expect("a JSON-RPC error body");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("--allow-origin"), "{body}");

    let evil_host = post(
        &client,
        &url,
        &[("host", "evil.example.com"), ("authorization", &bearer)],
        &initialize(),
    )
    .await;
    assert_eq!(evil_host.status(), 403);

    // The bound port's own loopback origin and the allowed one pass (with a token).
    for origin in [
        format!("http://127.0.0.1:{port}"),
        "http://localhost:6274".to_owned(),
    ] {
        let response = post(
            &client,
            &url,
            &[("origin", &origin), ("authorization", &bearer)],
            &initialize(),
        )
        .await;
        assert_eq!(response.status(), 200, "{origin}");
    }
    // Another port of the same host is another origin.
    let other_port = post(
        &client,
        &url,
        &[("origin", "http://127.0.0.1:1"), ("authorization", &bearer)],
        &initialize(),
    )
    .await;
    assert_eq!(other_port.status(), 403);

    stop(server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_body_is_413_with_a_json_rpc_error_declared_or_streamed() {
    let registry = registry().await;
    let server = start(&registry, token_config().max_body_bytes(16 * 1024)).await;
    let client = http();
    let bearer = format!("Bearer {ALICE_TOKEN}");

    let mut big = initialize();
    big["params"]["padding"] = json!("x".repeat(20 * 1024));
    let declared = post(&client, &server.url(), &[("authorization", &bearer)], &big).await;
    assert_eq!(declared.status(), 413);
    let body: Value = declared.json().await.expect("a JSON-RPC error body");
    assert_eq!(body["error"]["code"], json!(-32600), "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("16384") && message.contains("--max-body-bytes"),
        "{body}"
    );

    // Chunked, with no Content-Length: rmcp counts while streaming, we answer the same JSON.
    let (status_line, rest) = post_chunked(server.local_addr(), ALICE_TOKEN, 64 * 1024).await;
    assert!(status_line.contains("413"), "{status_line}\n{rest}");
    assert!(rest.contains("--max-body-bytes"), "{rest}");

    // A body under the limit still works.
    let small = post(
        &client,
        &server.url(),
        &[("authorization", &bearer)],
        &initialize(),
    )
    .await;
    assert_eq!(small.status(), 200);

    stop(server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_ends_a_session_and_unknown_or_foreign_sessions_are_404() {
    let registry = registry().await;
    let server = start(&registry, token_config()).await;
    let client = http();
    let url = server.url();

    let session = open_session(&client, &url, ALICE_TOKEN).await;
    let (status, answer) = in_session(
        &client,
        &url,
        ALICE_TOKEN,
        &session,
        &call(2, "core_get_current_user"),
    )
    .await;
    assert_eq!(status, 200);
    let answer = answer.expect("a JSON-RPC answer");
    assert_eq!(
        answer["result"]["structuredContent"]["user_id"],
        json!("alice"),
        "{answer}"
    );
    assert_eq!(server.session_count(), 1);

    // Someone else's token cannot use (or even see) alice's session.
    let (status, _) = in_session(
        &client,
        &url,
        GINA_TOKEN,
        &session,
        &call(3, "core_get_current_user"),
    )
    .await;
    assert_eq!(status, 404);
    let foreign_delete = delete(&client, &url, GINA_TOKEN, &session).await;
    assert_eq!(foreign_delete.status(), 404);

    let deleted = delete(&client, &url, ALICE_TOKEN, &session).await;
    assert!(deleted.status().is_success(), "{deleted:?}");
    let (status, answer) = in_session(
        &client,
        &url,
        ALICE_TOKEN,
        &session,
        &call(4, "core_get_current_user"),
    )
    .await;
    assert_eq!(status, 404, "{answer:?}");
    let answer = answer.expect("a JSON-RPC error body");
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    let again = delete(&client, &url, ALICE_TOKEN, &session).await;
    assert_eq!(again.status(), 404, "rmcp alone would answer 202");
    let never = delete(&client, &url, ALICE_TOKEN, "no-such-session").await;
    assert_eq!(never.status(), 404);
    assert_eq!(server.session_count(), 0);

    // One call ran: the one in the live session.
    assert_eq!(audit_count_reaching(&registry, 1).await, 1);
    stop(server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_live_through_reconnects_within_the_grace_window_and_expire_after_it() {
    let registry = registry().await;
    let grace = Duration::from_millis(800);
    let server = start(&registry, token_config().session_grace(grace)).await;
    let client = http();
    let url = server.url();
    let whoami = |id| call(id, "core_get_current_user");

    // Idle for less than the window between exchanges: the session stays.
    let session = open_session(&client, &url, ALICE_TOKEN).await;
    for id in 2..5 {
        tokio::time::sleep(grace / 2).await;
        let (status, _) = in_session(&client, &url, ALICE_TOKEN, &session, &whoami(id)).await;
        assert_eq!(status, 200, "within the grace window");
    }
    // Idle for longer: swept.
    tokio::time::sleep(grace * 3).await;
    let (status, _) = in_session(&client, &url, ALICE_TOKEN, &session, &whoami(5)).await;
    assert_eq!(status, 404, "after the grace window");
    assert_eq!(server.session_count(), 0);

    // An open event stream (GET) keeps a session open however long it is quiet.
    let session = open_session(&client, &url, ALICE_TOKEN).await;
    let mut events = bounded(
        "opening the event stream",
        client
            .get(&url)
            .header("authorization", format!("Bearer {ALICE_TOKEN}"))
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", crate::http_support::PROTOCOL)
            .send(),
    )
    .await
    .expect("the GET is answered");
    assert_eq!(events.status(), 200);
    let _priming = bounded("the priming event", events.chunk()).await;
    tokio::time::sleep(grace * 3).await;
    let (status, _) = in_session(&client, &url, ALICE_TOKEN, &session, &whoami(6)).await;
    assert_eq!(status, 200, "the open stream kept the session");
    drop(events);
    tokio::time::sleep(grace * 3).await;
    let (status, _) = in_session(&client, &url, ALICE_TOKEN, &session, &whoami(7)).await;
    assert_eq!(status, 404, "closed stream, then the grace window passed");

    stop(server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_2026_07_28_calls_are_stateless_with_a_connection_handle_as_session() {
    let registry = registry().await;
    let server = start(&registry, token_config()).await;

    let config =
        StreamableHttpClientTransportConfig::with_uri(server.url()).auth_header(GINA_TOKEN);
    let transport = StreamableHttpClientTransport::from_config(config);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = bounded("discovering", ().serve_with_lifecycle(transport, lifecycle))
        .await
        .expect("the 2026-07-28 client connects");
    let negotiated = client.peer_info().map(|info| info.protocol_version.clone());
    assert_eq!(negotiated, Some(ProtocolVersion::V_2026_07_28));

    for _ in 0..2 {
        let me = whoami(&client).await;
        assert_eq!(me["user_id"], json!("gina"), "{me}");
    }
    assert_eq!(server.session_count(), 0, "no session in 2026-07-28");

    let records = audit(&registry).await;
    assert_eq!(records.len(), 2, "{records:#?}");
    for record in &records {
        let session = record.session_id.as_ref().map_or("", |id| id.as_str());
        assert!(session.starts_with("mcp-conn-"), "{record:?}");
    }

    // A client-chosen session id never reaches the audit record.
    let raw = http();
    let bearer = format!("Bearer {GINA_TOKEN}");
    let mut request = call(9, "core_get_current_user");
    request["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let response = post(
        &raw,
        &server.url(),
        &[
            ("authorization", &bearer),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "core_get_current_user"),
            ("mcp-session-id", "chosen-by-the-client"),
        ],
        &request,
    )
    .await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.expect("a body");
    let answer = message_of(&text).expect("a JSON-RPC answer");
    assert_eq!(
        answer["result"]["structuredContent"]["user_id"],
        json!("gina"),
        "{answer}"
    );
    let records = audit(&registry).await;
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|record| {
        record
            .session_id
            .as_ref()
            .is_some_and(|id| id.as_str().starts_with("mcp-conn-"))
    }));

    close(client).await;
    stop(server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tokens_only_a_loopback_address_may_be_served() {
    let registry = registry().await;
    let refused = serve_http(
        registry.clone(),
        admin(),
        "0.0.0.0:0".parse().expect("an address"),
    )
    .await;
    match refused {
        Err(McpError::Config(HttpConfigError::UnauthenticatedNonLoopback { .. })) => {}
        other => panic!("expected a refusal, got {other:?}"),
    }
    let config =
        HttpConfig::new(loopback(), HttpAuth::Operator(admin())).expect("loopback is fine");
    let server = start(&registry, config).await;
    // No token needed on loopback without a token file; a token sent anyway is ignored.
    let client = connect(&server, Some("anything")).await.expect("connects");
    assert_eq!(whoami(&client).await["user_id"], json!("alice"));
    close(client).await;
    stop(server, registry).await;
}

//! The stdio edge of `switchboard serve --stdio` under input a well-behaved client never sends,
//! seen from outside: the test spawns the built binary and writes raw JSON-RPC lines to it. Each
//! test is one of the ways bad input could end the server or get a wrong answer: a notification
//! or a response before `initialize`, a request reusing the id of one in flight, an id too large
//! to echo. A last test checks that a 2026-07-28 client (no `initialize`) still gets served.
//! Every wait is bounded by `common::LIMIT`; the child is killed on drop if anything goes wrong.

use std::process::Stdio;

use crate::{
    common::{bounded, exit_of, switchboard},
    stdio_client::{INITIALIZED, StdioServer},
};
use rmcp::{
    ClientServiceExt as _,
    model::{CallToolRequestParams, ProtocolVersion},
    service::ClientLifecycleMode,
};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_or_a_response_before_initialize_never_ends_the_server() {
    let mut server = StdioServer::start(&[]);
    // The issue's sequence: a ping answered, a notification, another ping.
    server.ping("p1").await;
    server.send(INITIALIZED).await;
    server.ping("p2").await;
    // A client's response and error response, and a cancellation, before initialize.
    server
        .send(r#"{"jsonrpc":"2.0","id":"r1","result":{}}"#)
        .await;
    server
        .send(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no"}}"#)
        .await;
    server
        .send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"p2"}}"#)
        .await;
    server.ping("p3").await;
    server.initialize().await;
    server.whoami().await;
    server.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_reusing_an_id_in_flight_is_refused_at_once_and_the_first_gets_its_answer() {
    let mut server = StdioServer::start(&["--approve-by-elicitation"]);
    server.initialize().await;
    let id = json!(42);
    let question = server.call_needing_approval(&id).await;

    // The call waits for the user's answer: its id is in flight.
    server
        .send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string())
        .await;
    let refusal = server.answer(&id).await;
    assert_eq!(refusal["error"]["code"], json!(-32600), "{refusal}");

    // The user declines: the first call gets its own answer (the proposal stays pending).
    server
        .send(
            &json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}})
                .to_string(),
        )
        .await;
    let answer = server.answer(&id).await;
    assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["switchboard/error"]["kind"],
        json!("approval_required"),
        "{answer}"
    );

    // Answered, the id is free again.
    server
        .send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string())
        .await;
    assert_eq!(server.answer(&id).await["result"], json!({}));
    server.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_request_frees_its_id() {
    let mut server = StdioServer::start(&["--approve-by-elicitation"]);
    server.initialize().await;
    server.call_needing_approval(&json!("c")).await;
    server
        .send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"test"}}"#)
        .await;
    // rmcp never answers a cancelled request, so the edge frees its id at once: reusing it is
    // not refused as a duplicate. MCP forbids reusing ids, and the one answer such a client
    // gets for "c" is the ping's, or the cancelled call's late error when that call had not yet
    // returned (`stdio::in_flight` explains why that case is left to the client).
    server.ping("sync").await;
    server
        .send(r#"{"jsonrpc":"2.0","id":"c","method":"ping"}"#)
        .await;
    let answer = server.answer(&json!("c")).await;
    let late_error = answer["error"]["message"] == json!("the request was cancelled");
    assert!(answer["result"] == json!({}) || late_error, "{answer}");
    server.whoami().await;
    server.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_is_echoed_exactly_or_as_null() {
    let mut server = StdioServer::start(&[]);
    server.initialize().await;
    server
        .send(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#)
        .await;
    let line = server.next_line().await;
    let refusal: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(refusal["error"]["code"], json!(-32600), "{line}");
    assert_eq!(refusal.get("id"), Some(&Value::Null), "{line}");

    // Beyond i64 but within u64: rmcp cannot take it, the refusal echoes it digit for digit.
    server
        .send(r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#)
        .await;
    let line = server.next_line().await;
    assert!(line.contains(r#""id":18446744073709551615"#), "{line}");
    server.whoami().await;
    server.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_client_without_initialize_is_served() {
    let mut child = switchboard(&[
        "serve", "--stdio", "--org", "acme", "--user", "alice", "--role", "admin",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("the binary starts");
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = bounded(
        "server/discover",
        ().serve_with_lifecycle((stdout, stdin), lifecycle),
    )
    .await
    .expect("the client connects");
    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    assert!(!tools.is_empty());
    let me = bounded(
        "tools/call",
        client.call_tool(CallToolRequestParams::new("core_get_current_user")),
    )
    .await
    .expect("a result");
    let structured = me.structured_content.expect("structuredContent");
    assert_eq!(structured["user_id"], json!("alice"), "{structured}");
    bounded("closing the client", client.cancel())
        .await
        .expect("the client closes");
    let status = exit_of("the server exiting", &mut child).await;
    assert!(status.success(), "{status:?}");
}

//! A method the server knows, sent with params missing or of the wrong type, is answered
//! `-32602` (invalid params) naming the method and what was wrong, over stdio and streamable
//! HTTP; a method it does not know stays `-32601` (method not found). rmcp decodes a request
//! whose params do not fit its method as a custom request, which would otherwise be answered
//! as an unknown method.

use serde_json::{Value, json};
use switchboard_mcp::McpServer;
use switchboard_registry::ToolRegistry;

use crate::{
    common::{admin, registry, serve_http_as_admin},
    http_support::{PROTOCOL, http, initialize, open_session, post},
    stdio_support::StdioClient,
};

/// Every method the server answers that takes params, with params that are missing (`None`)
/// or mistyped, and a word the answer's message must contain (what was wrong). The list
/// methods are not here: their params are optional, and rmcp reads a mistyped `cursor` as no
/// params at all (the first page), so they never reach the check.
fn cases() -> Vec<(&'static str, Option<Value>, &'static str)> {
    vec![
        ("ping", Some(json!(1)), "ping"),
        ("tools/call", None, "missing"),
        ("tools/call", Some(json!({"name": 1})), "string"),
        (
            "tools/call",
            Some(json!({"name": "x", "arguments": 1})),
            "arguments",
        ),
        ("resources/read", None, "missing"),
        ("resources/read", Some(json!({"uri": 1})), "string"),
        ("resources/subscribe", None, "missing"),
        ("resources/subscribe", Some(json!({"uri": 1})), "string"),
        ("resources/unsubscribe", None, "missing"),
        ("resources/unsubscribe", Some(json!({"uri": []})), "string"),
        ("tasks/get", None, "missing"),
        ("tasks/get", Some(json!({"taskId": 1})), "string"),
        ("tasks/cancel", None, "missing"),
        ("tasks/cancel", Some(json!({"taskId": 1})), "string"),
        ("logging/setLevel", None, "missing"),
        ("logging/setLevel", Some(json!({"level": "loud"})), "loud"),
        ("completion/complete", None, "missing"),
        ("completion/complete", Some(json!({"ref": 1})), "ref"),
    ]
}

/// The request `method` with `params` (none: no `params` member) and `id`.
fn request(id: u64, method: &str, params: Option<&Value>) -> Value {
    let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if let Some(params) = params {
        request["params"] = params.clone();
    }
    request
}

/// Checks that `answer` to `method` with `params` is `-32602` naming the method and `what`.
fn assert_invalid_params(answer: &Value, method: &str, params: Option<&Value>, what: &str) {
    let error = &answer["error"];
    assert_eq!(
        error["code"],
        json!(-32602),
        "{method} {params:?}: {answer}"
    );
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("`{method}`")) && message.contains(what),
        "{method} {params:?}: the message names the method and `{what}`: {message}"
    );
}

/// An unknown method, and the answer it must keep.
fn unknown_method() -> Value {
    request(900, "no/such_method", Some(&json!({"x": 1})))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_known_methods_with_bad_params_are_invalid_params() {
    let registry = registry().await;

    // `initialize` itself, before the session: refused, and the session still opens.
    let mut client = StdioClient::serve(McpServer::new(registry.clone(), admin()));
    for (id, params) in [(1, None), (2, Some(json!({"protocolVersion": 1})))] {
        let answer = client
            .request(&request(id, "initialize", params.as_ref()))
            .await;
        assert_invalid_params(&answer, "initialize", params.as_ref(), "protocolVersion");
    }
    let answer = client.request(&initialize()).await;
    assert!(answer["result"].is_object(), "{answer}");
    client
        .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    for (index, (method, params, what)) in cases().into_iter().enumerate() {
        let id = 10 + index as u64;
        let answer = client.request(&request(id, method, params.as_ref())).await;
        assert_invalid_params(&answer, method, params.as_ref(), what);
    }
    let answer = client.request(&unknown_method()).await;
    assert_eq!(answer["error"]["code"], json!(-32601), "{answer}");

    client.finish().await;
    registry.shutdown().await;
}

/// The JSON-RPC answer to `body` posted in `session_id` (none: outside a session).
async fn posted(
    client: &reqwest::Client,
    url: &str,
    session_id: Option<&str>,
    body: &Value,
) -> (u16, Value) {
    let mut headers = vec![("mcp-protocol-version", PROTOCOL)];
    if let Some(session_id) = session_id {
        headers.push(("mcp-session-id", session_id));
    }
    let response = post(client, url, &headers, body).await;
    let status = response.status().as_u16();
    let text = crate::common::bounded("the answer", response.text())
        .await
        .expect("a body");
    let answer = crate::http_support::message_of(&text)
        .unwrap_or_else(|| panic!("no JSON-RPC answer ({status}): {text}"));
    (status, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_known_methods_with_bad_params_are_invalid_params() {
    let registry: ToolRegistry = registry().await;
    let server = serve_http_as_admin(&registry).await;
    let client = http();
    let url = server.url();

    for (id, params) in [(1, None), (2, Some(json!({"protocolVersion": 1})))] {
        let (_, answer) = posted(
            &client,
            &url,
            None,
            &request(id, "initialize", params.as_ref()),
        )
        .await;
        assert_invalid_params(&answer, "initialize", params.as_ref(), "protocolVersion");
    }

    // The operator endpoint takes no token: any bearer is ignored.
    let session_id = open_session(&client, &url, "unused").await;
    for (index, (method, params, what)) in cases().into_iter().enumerate() {
        let id = 10 + index as u64;
        let (_, answer) = posted(
            &client,
            &url,
            Some(&session_id),
            &request(id, method, params.as_ref()),
        )
        .await;
        assert_invalid_params(&answer, method, params.as_ref(), what);
    }
    let (_, answer) = posted(&client, &url, Some(&session_id), &unknown_method()).await;
    assert_eq!(answer["error"]["code"], json!(-32601), "{answer}");

    crate::common::close_http(Vec::<crate::common::Client>::new(), server, registry).await;
}

//! A method the server knows, sent with params missing or of the wrong type, is answered
//! `-32602` (invalid params) naming the method and what was wrong, over stdio and streamable
//! HTTP; a method it does not know stays `-32601` (method not found). rmcp decodes a request
//! whose params do not fit its method as a custom request, which would otherwise be answered
//! as an unknown method. Over HTTP the error is an ordinary answer (`200`), given after the
//! checks a valid request gets (its token, its session), which answer it as they answer the
//! valid one.

use serde_json::{Value, json};
use switchboard_mcp::McpServer;
use switchboard_registry::ToolRegistry;

use crate::{
    common::{admin, bounded, registry},
    http_support::{
        ALICE_TOKEN, PROTOCOL, SAM_TOKEN, http, initialize, open_session, post, start, token_config,
    },
    stdio_support::StdioClient,
};

/// Every method the server answers that takes params, with params that are missing (`None`)
/// or mistyped, and a word the answer's message must contain (what was wrong). The list
/// methods' params are optional, and rmcp reads a mistyped `cursor` as no params at all (the
/// first page), so theirs are checked raw.
fn cases() -> Vec<(&'static str, Option<Value>, &'static str)> {
    vec![
        ("tools/list", Some(json!({"cursor": 1})), "cursor"),
        ("tools/list", Some(json!("offset:1")), "tools/list"),
        ("resources/list", Some(json!({"cursor": true})), "cursor"),
        (
            "resources/templates/list",
            Some(json!({"cursor": {}, "_meta": {"progressToken": 1}})),
            "cursor",
        ),
        ("prompts/list", Some(json!({"cursor": ["a"]})), "cursor"),
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
        ("tasks/update", None, "missing"),
        (
            "tasks/update",
            Some(json!({"taskId": "t", "inputResponses": 1})),
            "map",
        ),
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

/// List requests whose params fit, which must be answered with a page: no params, a cursor
/// (for `tools/list`, the server's cursor for the page from the second tool on, as a previous
/// page of one tool would have given it), and `_meta`.
fn fitting_list_requests() -> Vec<Value> {
    let cursor = json!({"cursor": "offset:1", "_meta": {"progressToken": "p"}});
    vec![
        request(800, "tools/list", None),
        request(801, "tools/list", Some(&cursor)),
        request(
            802,
            "tools/list",
            Some(&json!({"_meta": {"progressToken": 2}})),
        ),
        request(803, "resources/list", Some(&cursor)),
        request(804, "resources/templates/list", None),
        request(805, "prompts/list", Some(&json!({}))),
    ]
}

/// Checks that `answer` to `request` is a page of its list.
fn assert_page(answer: &Value, request: &Value) {
    let list = match request["method"].as_str() {
        Some("tools/list") => "tools",
        Some("resources/list") => "resources",
        Some("resources/templates/list") => "resourceTemplates",
        _ => "prompts",
    };
    assert!(answer["result"][list].is_array(), "{request}: {answer}");
    if request["method"] == "tools/list" {
        // The page from the second tool on is not empty: the caller sees several tools.
        let tools = answer["result"]["tools"].as_array().map_or(0, Vec::len);
        assert!(tools > 0, "{request}: {answer}");
    }
}

/// Unknown methods, and the answer they must keep: `tasks/list` among them, which rmcp does
/// not answer.
fn unknown_methods() -> Vec<Value> {
    vec![
        request(900, "no/such_method", Some(&json!({"x": 1}))),
        request(901, "tasks/list", Some(&json!({"cursor": 1}))),
    ]
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
    for valid in fitting_list_requests() {
        let answer = client.request(&valid).await;
        assert_page(&answer, &valid);
    }
    for unknown in unknown_methods() {
        let answer = client.request(&unknown).await;
        assert_eq!(answer["error"]["code"], json!(-32601), "{answer}");
    }

    client.finish().await;
    registry.shutdown().await;
}

/// One POST's answer over HTTP: its status, whether it named a session, and its JSON-RPC
/// message.
#[derive(Debug)]
struct Answered {
    status: u16,
    session_header: bool,
    answer: Value,
}

/// The answer to `body` posted as `token` (none: no `Authorization`), in `session_id` (none:
/// outside a session).
async fn posted(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    session_id: Option<&str>,
    body: &Value,
) -> Answered {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let mut headers = vec![("mcp-protocol-version", PROTOCOL)];
    if let Some(bearer) = &bearer {
        headers.push(("authorization", bearer));
    }
    if let Some(session_id) = session_id {
        headers.push(("mcp-session-id", session_id));
    }
    let response = post(client, url, &headers, body).await;
    let status = response.status().as_u16();
    let session_header = response.headers().contains_key("mcp-session-id");
    let text = crate::common::bounded("the answer", response.text())
        .await
        .expect("a body");
    let answer = crate::http_support::message_of(&text)
        .unwrap_or_else(|| panic!("no JSON-RPC answer ({status}): {text}"));
    Answered {
        status,
        session_header,
        answer,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_bad_params_are_an_ordinary_answer_after_the_session_checks() {
    let registry: ToolRegistry = registry().await;
    let server = start(&registry, token_config()).await;
    let client = http();
    let url = server.url();

    // `initialize` needs no session: answered 200, and it opens none.
    for (id, params) in [(1, None), (2, Some(json!({"protocolVersion": 1})))] {
        let posted = posted(
            &client,
            &url,
            Some(ALICE_TOKEN),
            None,
            &request(id, "initialize", params.as_ref()),
        )
        .await;
        assert_eq!(posted.status, 200, "initialize {params:?}: {posted:?}");
        assert!(!posted.session_header, "no session is opened: {posted:?}");
        assert_invalid_params(
            &posted.answer,
            "initialize",
            params.as_ref(),
            "protocolVersion",
        );
    }

    // In the session, every known method with bad params: 200 and -32602.
    let session_id = open_session(&client, &url, ALICE_TOKEN).await;
    for (index, (method, params, what)) in cases().into_iter().enumerate() {
        let id = 10 + index as u64;
        let posted = posted(
            &client,
            &url,
            Some(ALICE_TOKEN),
            Some(&session_id),
            &request(id, method, params.as_ref()),
        )
        .await;
        assert_eq!(posted.status, 200, "{method} {params:?}: {posted:?}");
        assert_invalid_params(&posted.answer, method, params.as_ref(), what);
    }
    for valid in fitting_list_requests() {
        let posted = posted(&client, &url, Some(ALICE_TOKEN), Some(&session_id), &valid).await;
        assert_eq!(posted.status, 200, "{valid}: {posted:?}");
        assert_page(&posted.answer, &valid);
    }
    for unknown in unknown_methods() {
        let posted = posted(
            &client,
            &url,
            Some(ALICE_TOKEN),
            Some(&session_id),
            &unknown,
        )
        .await;
        assert_eq!(posted.answer["error"]["code"], json!(-32601), "{posted:?}");
    }

    // Before the params are looked at, the request is checked as the valid one is: no token,
    // no session, an unknown session and another token's session get the valid request's
    // answer (rmcp reads some of these bad requests, and the edge answers the others).
    let valid = request(
        50,
        "tools/call",
        Some(&json!({"name": "core_get_current_user"})),
    );
    let bad = [
        request(50, "tasks/get", Some(&json!({"taskId": 1}))),
        request(50, "tools/call", Some(&json!("not an object"))),
        request(50, "ping", Some(&json!(1))),
        request(50, "tools/list", Some(&json!({"cursor": 1}))),
    ];
    for (token, session, what) in [
        (None, Some(session_id.as_str()), "no token"),
        (Some(ALICE_TOKEN), None, "no session"),
        (
            Some(ALICE_TOKEN),
            Some("mcp-no-such-session"),
            "an unknown session",
        ),
        (
            Some(SAM_TOKEN),
            Some(session_id.as_str()),
            "another token's session",
        ),
    ] {
        let expected = posted(&client, &url, token, session, &valid).await;
        assert!(expected.status >= 400, "{what}: {expected:?}");
        for body in &bad {
            let got = posted(&client, &url, token, session, body).await;
            assert_eq!(
                (got.status, &got.answer),
                (expected.status, &expected.answer),
                "{what}: {body}"
            );
        }
    }

    bounded("stopping the server", server.shutdown())
        .await
        .expect("stops");
    registry.shutdown().await;
}

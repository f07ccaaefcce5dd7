//! Streamable HTTP on protocol 2026-07-28, request by request as a client or a gateway would
//! send them: a tool's header parameter (`x-mcp-header`) must come as its `Mcp-Param-*` header
//! with the body's value (plain or `=?base64?…?=`), and the methods that revision removed are
//! `404` and `-32601` whatever their params.

use serde_json::{Value, json};

use crate::{
    common::{bounded, registry},
    http_support::{ALICE_TOKEN, call, http, message_of, post, start, token_config},
};

/// A `tools/call` of `test_header_parameter` with `value`, on 2026-07-28, with `headers` besides
/// the standard ones; the HTTP status and the JSON-RPC answer.
async fn call_with(url: &str, value: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = call(3, "test_header_parameter");
    request["params"]["arguments"] = json!({"value": value});
    request["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let bearer = format!("Bearer {ALICE_TOKEN}");
    let mut all = vec![
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "test_header_parameter"),
    ];
    all.extend_from_slice(headers);
    let response = post(&http(), url, &all, &request).await;
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    (status, message_of(&text).expect("a JSON-RPC answer"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_parameter_must_come_as_its_header_with_the_bodys_value() {
    let registry = registry().await;
    let server = start(&registry, token_config()).await;
    let url = server.url();

    let listed = registry.find("test_header_parameter").expect("linked");
    assert_eq!(
        listed.input_schema["properties"]["value"]["x-mcp-header"],
        json!("Value")
    );

    for header in ["Hello", "=?base64?SGVsbG8=?="] {
        let (status, answer) = call_with(&url, "Hello", &[("mcp-param-value", header)]).await;
        assert_eq!(status, 200, "{header}: {answer}");
        assert_eq!(
            answer["result"]["content"][0]["text"],
            json!("value: Hello"),
            "{answer}"
        );
    }
    for headers in [
        &[][..],
        &[("mcp-param-value", "Goodbye")][..],
        &[("mcp-param-value", "=?base64?SGVsbG8?=")][..],
    ] {
        let (status, answer) = call_with(&url, "Hello", headers).await;
        assert_eq!(status, 400, "{headers:?}: {answer}");
        assert_eq!(answer["error"]["code"], json!(-32020), "{answer}");
    }
    bounded("stopping", server.shutdown()).await.expect("stops");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn methods_2026_07_28_removed_are_not_found_whatever_their_params() {
    let registry = registry().await;
    let server = start(&registry, token_config()).await;
    let bearer = format!("Bearer {ALICE_TOKEN}");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    for (method, params) in [
        ("initialize", json!({"_meta": meta})),
        ("logging/setLevel", json!({"_meta": meta})),
        ("logging/setLevel", json!({"level": "info", "_meta": meta})),
        ("resources/unsubscribe", json!({"_meta": meta})),
    ] {
        let request = json!({"jsonrpc": "2.0", "id": 500, "method": method, "params": params});
        let response = post(
            &http(),
            &server.url(),
            &[
                ("authorization", &bearer),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
            ],
            &request,
        )
        .await;
        let status = response.status().as_u16();
        let answer = message_of(&response.text().await.expect("a body")).expect("JSON-RPC");
        assert_eq!(status, 404, "{method}: {answer}");
        assert_eq!(answer["error"]["code"], json!(-32601), "{method}: {answer}");
        assert_eq!(answer["id"], json!(500), "{method}: {answer}");
    }
    bounded("stopping", server.shutdown()).await.expect("stops");
    registry.shutdown().await;
}

//! A property test of the HTTP edge: random methods, headers, bodies, framings and ids sent to
//! the built binary, each followed by a well-behaved client's call on a keep-alive connection.
//! The server must keep serving that client throughout, and every answer it gives is either
//! empty (`202`, `204`) or JSON-RPC: a JSON body (an error with an `id` member for every error
//! status) or an event stream of JSON-RPC messages.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::http_client::{Client, Server, assert_whoami, tcp_from};

/// One request no client would send as such.
#[derive(Debug, Clone)]
struct Hostile {
    method: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    chunked: Option<String>,
}

fn ids() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        "[a-z0-9]{0,8}".prop_map(Value::from),
        Just(json!(123_456_789_012_345_678_901_234_567_890_u128 as f64)),
        Just(json!(1.5)),
        Just(Value::Null),
        Just(json!({"id": 1})),
        Just(json!([1])),
    ]
}

fn bodies() -> impl Strategy<Value = Vec<u8>> {
    let methods = prop_oneof![
        Just("initialize"),
        Just("ping"),
        Just("tools/list"),
        Just("tools/call"),
        Just("notifications/initialized"),
        Just("nope"),
    ];
    let message = (ids(), methods, any::<bool>(), any::<bool>())
        .prop_map(|(id, method, is_notification, two)| {
            let mut message = json!({
                "jsonrpc": if two { "2.0" } else { "1.0" },
                "method": method,
                "params": {"name": "core_get_current_user", "arguments": {},
                           "protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "fuzz", "version": "1"}},
            });
            if !is_notification {
                message["id"] = id;
            }
            message.to_string().into_bytes()
        })
        .boxed();
    prop_oneof![
        message.clone(),
        message.prop_map(|body| [b"[".as_slice(), &body, b"]"].concat()),
        ids().prop_map(|id| json!({"jsonrpc": "2.0", "id": id, "result": {}})
            .to_string()
            .into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..64),
        Just(b"{\"jsonrpc\": \"2.0\", \"id\": ".to_vec()),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(&'static str, String)>> {
    let one = prop_oneof![
        prop_oneof![
            Just("application/json, text/event-stream"),
            Just("application/json"),
            Just("text/html"),
            Just("*/*"),
        ]
        .prop_map(|value| ("accept", value.to_owned())),
        prop_oneof![
            Just("application/json"),
            Just("text/plain"),
            Just("application/json; x")
        ]
        .prop_map(|value| ("content-type", value.to_owned())),
        prop_oneof![
            Just("2025-11-25"),
            Just("2026-07-28"),
            Just("1999-01-01"),
            Just("\u{7f}")
        ]
        .prop_map(|value| ("mcp-protocol-version", value.to_owned())),
        "[a-z0-9-]{0,40}".prop_map(|value| ("mcp-session-id", value)),
        prop_oneof![Just("tools/call"), Just("ping"), Just("")]
            .prop_map(|value| ("mcp-method", value.to_owned())),
        "[a-z_]{0,20}".prop_map(|value| ("mcp-name", value)),
        prop_oneof![Just("http://evil.example.com"), Just("null")]
            .prop_map(|value| ("origin", value.to_owned())),
        "[ -~]{0,30}".prop_map(|value| ("authorization", value)),
        "[ -~]{0,60}".prop_map(|value| ("traceparent", value)),
    ];
    proptest::collection::vec(one, 0..6)
}

fn hostile() -> impl Strategy<Value = Hostile> {
    let method = prop_oneof![
        4 => Just("POST"),
        1 => Just("GET"),
        1 => Just("DELETE"),
        1 => Just("PUT"),
    ];
    let chunked = proptest::option::weighted(0.2, "[0-9a-fA-F]{1,20}|zz|-1");
    (method, headers(), bodies(), chunked).prop_map(|(method, headers, body, chunked)| Hostile {
        method,
        headers,
        body,
        chunked,
    })
}

/// The request as bytes on the wire (`Connection: close`, so the answer ends with the stream).
fn wire(case: &Hostile, host: &str) -> Vec<u8> {
    let mut head = format!(
        "{} /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n",
        case.method
    );
    for (name, value) in &case.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let mut bytes = match &case.chunked {
        Some(size) => {
            head.push_str("Transfer-Encoding: chunked\r\n\r\n");
            let mut bytes = head.into_bytes();
            bytes.extend_from_slice(format!("{size}\r\n").as_bytes());
            bytes.extend_from_slice(&case.body);
            bytes.extend_from_slice(b"\r\n0\r\n\r\n");
            bytes
        }
        None => {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", case.body.len()));
            head.into_bytes()
        }
    };
    if case.chunked.is_none() {
        bytes.extend_from_slice(&case.body);
    }
    bytes
}

/// Checks that a raw answer is empty or JSON-RPC, as the module docs say.
fn check_answer(answer: &str) -> Result<(), TestCaseError> {
    if answer.is_empty() {
        // The server closed the connection without an answer: only for framing hyper rejects
        // before a request exists (then it sends 400 itself, checked below).
        return Ok(());
    }
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| TestCaseError::fail(format!("no status line: {answer}")))?;
    let head = head.to_ascii_lowercase();
    if matches!(status, 202 | 204)
        || (status >= 400 && body.is_empty() && !head.contains("content-type"))
    {
        // hyper's own 400 for a head it cannot parse has no body: not a JSON-RPC exchange.
        prop_assert!(status < 500, "{answer}");
        return Ok(());
    }
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_owned()
    };
    if head.contains("content-type: text/event-stream") {
        prop_assert!(status == 200, "{answer}");
        for data in body.lines().filter_map(|line| line.strip_prefix("data:")) {
            let data = data.trim();
            if data.is_empty() {
                continue;
            }
            let message: Value = serde_json::from_str(data)
                .map_err(|error| TestCaseError::fail(format!("{error}: {answer}")))?;
            prop_assert_eq!(&message["jsonrpc"], &json!("2.0"), "{}", answer);
        }
        return Ok(());
    }
    let message: Value = serde_json::from_str(&body)
        .map_err(|error| TestCaseError::fail(format!("not JSON ({error}): {answer}")))?;
    prop_assert_eq!(&message["jsonrpc"], &json!("2.0"), "{}", answer);
    prop_assert!(
        message
            .as_object()
            .is_some_and(|object| object.contains_key("id")),
        "no id member: {}",
        answer
    );
    if status >= 400 {
        prop_assert!(message["error"]["code"].is_i64(), "{}", answer);
    }
    prop_assert!(
        status < 500,
        "a server error for a client's mistake: {}",
        answer
    );
    Ok(())
}

/// The payload of a chunked body (lenient: what the test needs to read it).
fn dechunk(body: &str) -> String {
    let mut payload = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        payload.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    payload
}

#[test]
fn the_http_edge_keeps_serving_and_answers_only_json_rpc() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (server, client) = runtime.block_on(async {
        let server = Server::start(&[]).await;
        let client = Client::connect(server.addr).await;
        (server, client)
    });
    let addr = server.addr;
    let config = ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    // The runner takes an `Fn`: what the cases change lives in cells.
    let server = std::cell::RefCell::new(server);
    let client = std::cell::RefCell::new(Some(client));
    let round = std::cell::Cell::new(0_u64);
    proptest!(config, |(case in hostile())| {
        round.set(round.get() + 1);
        let answer = runtime.block_on(async {
            let mut stream = tcp_from("127.0.0.1", addr).await;
            let _ = stream.write_all(&wire(&case, &addr.to_string())).await;
            let mut answer = Vec::new();
            // An event stream the case opened would not end by itself: two seconds is enough
            // for everything else.
            let _ = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut answer)).await;
            String::from_utf8_lossy(&answer).into_owned()
        });
        check_answer(&answer)?;
        prop_assert!(server.borrow_mut().is_running(), "the server exited after {:?}", case);
        let served = runtime.block_on(async {
            let body = json!({
                "jsonrpc": "2.0", "id": round.get(), "method": "tools/call",
                "params": {"name": "core_get_current_user", "arguments": {}, "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {}}},
            });
            let mut taken = client.borrow_mut().take().expect("the client is back");
            let answer = taken
                .post(
                    &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"),
                      ("mcp-name", "core_get_current_user")],
                    &body.to_string(),
                )
                .await;
            client.replace(Some(taken));
            answer
        });
        assert_whoami(&served);
    });
}

//! Helpers for the HTTP tests: servers with bearer tokens, raw HTTP requests (for the
//! status codes an MCP client hides), rmcp clients with a token, and the audit count.

use std::{net::SocketAddr, time::Duration};

use rmcp::{
    ServiceExt as _,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use switchboard_mcp::{HttpAuth, HttpConfig, HttpServer, TokenTable, serve_http_with};
use switchboard_registry::ToolRegistry;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::common::{Client, bounded};

/// Alice's token: acme, admin, agent.
pub(crate) const ALICE_TOKEN: &str = "alice-secret-token";

/// Sam's token: acme, staff, agent.
pub(crate) const SAM_TOKEN: &str = "sam-secret-token";

/// Gina's token: globex, admin, human.
pub(crate) const GINA_TOKEN: &str = "gina-secret-token";

/// The protocol revision raw requests speak.
pub(crate) const PROTOCOL: &str = "2025-11-25";

/// A token file for the three tokens above.
pub(crate) fn token_file() -> String {
    let hash = switchboard_mcp::token_sha256_hex;
    format!(
        r#"
        [[token]]
        sha256 = "{alice}"
        name = "alice-laptop"
        org = "acme"
        user = "alice"
        roles = ["admin"]

        [[token]]
        sha256 = "{sam}"
        org = "acme"
        user = "sam"
        roles = ["staff"]

        [[token]]
        sha256 = "{gina}"
        org = "globex"
        user = "gina"
        roles = ["admin"]
        initiator = "human"
        "#,
        alice = hash(ALICE_TOKEN),
        sam = hash(SAM_TOKEN),
        gina = hash(GINA_TOKEN),
    )
}

/// The configuration of a loopback endpoint (port 0) that requires the three tokens.
pub(crate) fn token_config() -> HttpConfig {
    let table = TokenTable::from_toml(&token_file(), "tokens.toml").expect("a valid token file");
    HttpConfig::new(loopback(), HttpAuth::Tokens(table)).expect("a valid configuration")
}

/// `127.0.0.1:0`.
pub(crate) fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Starts an endpoint.
pub(crate) async fn start(registry: &ToolRegistry, config: HttpConfig) -> HttpServer {
    bounded("binding", serve_http_with(registry.clone(), config))
        .await
        .expect("the HTTP server starts")
}

/// An rmcp client of `server` sending `token` (none: no `Authorization` header).
pub(crate) async fn connect(
    server: &HttpServer,
    token: Option<&str>,
) -> Result<Client, rmcp::service::ClientInitializeError> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(server.url());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    bounded("connecting", ().serve(transport)).await
}

/// A plain HTTP client, for requests an MCP client would not make.
pub(crate) fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("an HTTP client")
}

/// A POST of `body` to `url` with the headers streamable HTTP requires, plus `headers`.
pub(crate) async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> reqwest::Response {
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    bounded("a POST", request.send())
        .await
        .expect("the server answers")
}

/// A `DELETE` of `session_id` at `url`.
pub(crate) async fn delete(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    session_id: &str,
) -> reqwest::Response {
    let request = client
        .delete(url)
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-session-id", session_id)
        .header("mcp-protocol-version", PROTOCOL);
    bounded("a DELETE", request.send())
        .await
        .expect("the server answers")
}

/// An `initialize` request.
pub(crate) fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "raw-http-test", "version": "1"}
        }
    })
}

/// A `tools/call` request of `tool` with no arguments.
pub(crate) fn call(id: u64, tool: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}
    })
}

/// Opens a session as `token` (initialize, then `notifications/initialized`) and returns its
/// id.
pub(crate) async fn open_session(client: &reqwest::Client, url: &str, token: &str) -> String {
    let bearer = format!("Bearer {token}");
    let response = post(client, url, &[("authorization", &bearer)], &initialize()).await;
    assert_eq!(response.status(), 200, "initialize: {response:?}");
    let session_id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .expect("initialize answers a session id")
        .to_owned();
    let _ = bounded("the initialize answer", response.text()).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = post(
        client,
        url,
        &[
            ("authorization", &bearer),
            ("mcp-session-id", &session_id),
            ("mcp-protocol-version", PROTOCOL),
        ],
        &initialized,
    )
    .await;
    assert!(response.status().is_success(), "initialized: {response:?}");
    session_id
}

/// A request in `session_id` as `token`; returns the status and the JSON-RPC message of the
/// answer (from the SSE `data:` line or the JSON body), if any.
pub(crate) async fn in_session(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    session_id: &str,
    body: &Value,
) -> (u16, Option<Value>) {
    let bearer = format!("Bearer {token}");
    let response = post(
        client,
        url,
        &[
            ("authorization", &bearer),
            ("mcp-session-id", session_id),
            ("mcp-protocol-version", PROTOCOL),
        ],
        body,
    )
    .await;
    let status = response.status().as_u16();
    let text = bounded("the answer's body", response.text())
        .await
        .expect("a body");
    (status, message_of(&text))
}

/// The JSON-RPC message in a body: the body itself if it is JSON, else the last SSE `data:`
/// line holding JSON.
pub(crate) fn message_of(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Some(value);
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .next_back()
}

/// Sends `head` and a chunked body of `size` bytes over a raw TCP connection (no
/// `Content-Length`), and returns the status line and the rest of the answer.
pub(crate) async fn post_chunked(addr: SocketAddr, token: &str, size: usize) -> (String, String) {
    let mut stream = bounded("connecting", tokio::net::TcpStream::connect(addr))
        .await
        .expect("connects");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    let mut request = head.into_bytes();
    let chunk = vec![b' '; 64 * 1024];
    let mut left = size;
    while left > 0 {
        let length = left.min(chunk.len());
        request.extend_from_slice(format!("{length:x}\r\n").as_bytes());
        request.extend_from_slice(&chunk[..length]);
        request.extend_from_slice(b"\r\n");
        left -= length;
    }
    request.extend_from_slice(b"0\r\n\r\n");
    // The server may answer and close before reading everything: a write error is expected.
    let _ = bounded("sending", stream.write_all(&request)).await;
    let mut answer = Vec::new();
    let _ = bounded("reading the answer", stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (status_line, rest) = answer.split_once("\r\n").unwrap_or((&answer, ""));
    (status_line.to_owned(), rest.to_owned())
}

/// How many audit records the registry's store has taken: the one place that knows how to
/// count them (adapt it when the audit API changes).
pub(crate) async fn audit_count(registry: &ToolRegistry) -> u64 {
    registry.audit().settled_stats().await.store.appended
}

/// Waits (bounded) until the audit count reaches `expected`, then returns the count.
pub(crate) async fn audit_count_reaching(registry: &ToolRegistry, expected: u64) -> u64 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let count = audit_count(registry).await;
        if count >= expected || tokio::time::Instant::now() >= deadline {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

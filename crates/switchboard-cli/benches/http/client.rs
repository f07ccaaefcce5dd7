//! The client side: one plain hyper HTTP/1.1 keep-alive connection per client, speaking MCP by
//! hand on either protocol revision.
//!
//! Deliberately untuned: the socket is a fresh `tokio::net::TcpStream` with the kernel's
//! defaults (Nagle on), handed to `hyper::client::conn::http1::handshake`, as a client library
//! that never heard of `TCP_NODELAY` would do. Each call reads its whole response body (one
//! JSON document or an event stream that ends after the answer) before the next call is sent.
//! Every network wait is bounded by [`TIMEOUT`].

use std::{future::Future, net::SocketAddr, time::Duration};

use anyhow::{Context as _, bail};
use http_body_util::{BodyExt as _, Full};
use hyper::{
    Method, Request, StatusCode,
    body::Bytes,
    client::conn::http1::{self, SendRequest},
    header::{ACCEPT, CONTENT_TYPE, HOST, HeaderValue},
};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

use crate::TOOL;

/// The longest any single network step may take before the row is reported as failed.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const V2025: &str = "2025-11-25";
const V2026: &str = "2026-07-28";

/// The protocol revision a client speaks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Revision {
    /// 2025-11-25: `initialize` and `notifications/initialized` first, then every call in the
    /// session the server named, or with no session when the server names none (a stateless
    /// server).
    Session,
    /// 2026-07-28: no handshake and no session; each call names its revision in the
    /// `MCP-Protocol-Version` header and in `_meta`, and its method in `Mcp-Method`.
    Stateless,
}

impl Revision {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Revision::Session => V2025,
            Revision::Stateless => V2026,
        }
    }
}

/// `future`, or an error naming `what` after [`TIMEOUT`].
pub(crate) async fn bounded<T>(
    what: &str,
    future: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    match tokio::time::timeout(TIMEOUT, future).await {
        Ok(result) => result.with_context(|| what.to_owned()),
        Err(_) => bail!("{what}: no answer within {TIMEOUT:?}"),
    }
}

/// One client: a keep-alive connection, and its session once it has one.
#[derive(Debug)]
pub(crate) struct Connection {
    sender: SendRequest<Full<Bytes>>,
    host: HeaderValue,
    revision: Revision,
    /// Whether `initialize` is done: later 2025-11-25 requests name the revision in a header.
    initialized: bool,
    session: Option<HeaderValue>,
    next_id: u64,
}

impl Connection {
    /// Connects to `addr` and, for [`Revision::Session`], opens a session.
    pub(crate) async fn open(addr: SocketAddr, revision: Revision) -> anyhow::Result<Self> {
        let stream = bounded("connecting", async { Ok(TcpStream::connect(addr).await?) }).await?;
        let (sender, connection) = bounded("the HTTP/1.1 handshake", async {
            Ok(http1::handshake(TokioIo::new(stream)).await?)
        })
        .await?;
        // Drives the connection until the sender is dropped.
        tokio::spawn(connection);
        let mut client = Connection {
            sender,
            host: HeaderValue::from_str(&addr.to_string()).context("a Host header")?,
            revision,
            initialized: false,
            session: None,
            next_id: 1,
        };
        if revision == Revision::Session {
            client.initialize().await?;
        }
        Ok(client)
    }

    async fn initialize(&mut self) -> anyhow::Result<()> {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": V2025,
                "capabilities": {},
                "clientInfo": {"name": "http-bench", "version": "0"},
            },
        });
        let request = self.request(Method::POST, &body, &[])?;
        let (status, headers, answer) = bounded("initialize", self.exchange(request)).await?;
        if status != StatusCode::OK {
            bail!("initialize: {status}: {}", String::from_utf8_lossy(&answer));
        }
        self.session = headers.get(SESSION_HEADER).cloned();
        self.initialized = true;
        let body = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let request = self.request(Method::POST, &body, &[])?;
        let (status, _, answer) =
            bounded("notifications/initialized", self.exchange(request)).await?;
        if !status.is_success() {
            bail!(
                "notifications/initialized: {status}: {}",
                String::from_utf8_lossy(&answer)
            );
        }
        Ok(())
    }

    /// The next `tools/call` request, built before the clock starts.
    pub(crate) fn call_request(&mut self) -> anyhow::Result<Request<Full<Bytes>>> {
        let id = self.next_id;
        self.next_id += 1;
        let mut body = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": TOOL, "arguments": {}},
        });
        match self.revision {
            Revision::Session => self.request(Method::POST, &body, &[]),
            Revision::Stateless => {
                body["params"]["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": V2026,
                    "io.modelcontextprotocol/clientInfo": {"name": "http-bench", "version": "0"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                });
                self.request(
                    Method::POST,
                    &body,
                    &[("mcp-method", "tools/call"), ("mcp-name", TOOL)],
                )
            }
        }
    }

    /// Sends `request` and reads the whole answer: one round trip, the part that is timed.
    pub(crate) async fn exchange(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> anyhow::Result<(StatusCode, hyper::HeaderMap, Bytes)> {
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await?.to_bytes();
        Ok((parts.status, parts.headers, body))
    }

    /// Ends the session, if any (the answer is not checked: it is not what is measured).
    pub(crate) async fn close(mut self) {
        if self.session.is_none() {
            return;
        }
        if let Ok(request) = self.request(Method::DELETE, &Value::Null, &[]) {
            let _ = tokio::time::timeout(TIMEOUT, self.exchange(request)).await;
        }
    }

    fn request(
        &self,
        method: Method,
        body: &Value,
        extra: &[(&'static str, &'static str)],
    ) -> anyhow::Result<Request<Full<Bytes>>> {
        let mut builder = Request::builder()
            .method(method.clone())
            .uri("/mcp")
            .header(HOST, self.host.clone())
            .header(ACCEPT, "application/json, text/event-stream");
        if let Some(session) = &self.session {
            builder = builder.header(SESSION_HEADER, session.clone());
        }
        match self.revision {
            Revision::Session if self.initialized => {
                builder = builder.header(VERSION_HEADER, V2025);
            }
            Revision::Session => {}
            Revision::Stateless => builder = builder.header(VERSION_HEADER, V2026),
        }
        for (name, value) in extra {
            builder = builder.header(*name, *value);
        }
        let body = if method == Method::DELETE {
            Bytes::new()
        } else {
            builder = builder.header(CONTENT_TYPE, "application/json");
            Bytes::from(serde_json::to_vec(body)?)
        };
        Ok(builder.body(Full::new(body))?)
    }
}

/// Whether `body` (JSON or an event stream) holds a successful tool result.
pub(crate) fn is_tool_result(body: &[u8]) -> bool {
    let contains = |needle: &[u8]| body.windows(needle.len()).any(|window| window == needle);
    contains(b"\"structuredContent\"") && !contains(b"\"isError\":true")
}

/// The JSON-RPC message of an answer: the body itself, or the event of a stream that holds the
/// result.
fn message_of(body: &[u8]) -> anyhow::Result<Bytes> {
    let text = std::str::from_utf8(body).context("a UTF-8 answer")?;
    if text.trim_start().starts_with('{') {
        return Ok(Bytes::copy_from_slice(text.trim().as_bytes()));
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| data.starts_with('{') && data.contains("\"result\""))
        .map(|data| Bytes::copy_from_slice(data.as_bytes()))
        .with_context(|| format!("no JSON-RPC result in the answer: {text}"))
}

/// One real answer of Switchboard to the call every row makes.
#[derive(Debug)]
pub(crate) struct CapturedAnswer {
    /// The JSON-RPC response, as sent (without any event-stream framing).
    pub(crate) body: Bytes,
    /// Its `result.structuredContent`, for the plain rmcp tool to return.
    pub(crate) structured: Value,
}

/// Calls the tool once on 2026-07-28 and keeps the answer.
pub(crate) async fn capture_answer(addr: SocketAddr) -> anyhow::Result<CapturedAnswer> {
    let mut client = Connection::open(addr, Revision::Stateless).await?;
    let request = client.call_request()?;
    let (status, _, answer) = bounded("the captured call", client.exchange(request)).await?;
    if status != StatusCode::OK || !is_tool_result(&answer) {
        bail!(
            "the captured call failed: {status}: {}",
            String::from_utf8_lossy(&answer)
        );
    }
    let body = message_of(&answer)?;
    let message: Value = serde_json::from_slice(&body).context("a JSON-RPC answer")?;
    let structured = message["result"]["structuredContent"].clone();
    if structured.is_null() {
        bail!("the captured answer has no structuredContent: {message}");
    }
    Ok(CapturedAnswer { body, structured })
}

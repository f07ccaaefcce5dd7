//! What the HTTP edge tests need to drive `switchboard serve --http` from outside: the server
//! child and its address, a keep-alive HTTP/1.1 client (hyper's, untuned), and a raw socket for
//! what no well-behaved client sends. Every wait is bounded by `common::LIMIT`.

use std::{net::SocketAddr, process::Stdio};

use http_body_util::{BodyExt as _, Full};
use hyper::{Request, Response, body::Bytes, client::conn::http1::SendRequest};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpSocket, TcpStream},
    process::Child,
};

use crate::common::{
    ACME_ADMIN, bounded, mcp_address, stderr_lines, switchboard, switchboard_under,
};

/// The `initialize` of a 2025-11-25 client.
pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"edge-http-test","version":"1"}}}"#;

/// `switchboard serve --http 127.0.0.1:0` as alice, an acme admin, killed on drop.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl Server {
    /// Starts the server with `extra` flags.
    pub(crate) async fn start(extra: &[&str]) -> Self {
        Self::start_under(&[], extra).await
    }

    /// Starts the server with `extra` flags under the program `prefix` (e.g. `prlimit ...`).
    pub(crate) async fn start_under(prefix: &[&str], extra: &[&str]) -> Self {
        let mut args = vec!["serve", "--http", "127.0.0.1:0"];
        args.extend_from_slice(&ACME_ADMIN);
        args.extend_from_slice(extra);
        let mut command = if prefix.is_empty() {
            switchboard(&args)
        } else {
            switchboard_under(prefix, &args)
        };
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut stderr = stderr_lines(&mut child);
        let addr = loop {
            let line = bounded("the start-up line", stderr.next_line())
                .await
                .expect("stderr is readable")
                .expect("the server printed its address before exiting");
            if let Some(addr) = mcp_address(&line) {
                break addr.parse().expect("a socket address");
            }
        };
        // Keep draining the server's log so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
        Self { child, addr }
    }

    /// The server's resident memory in KiB (Linux).
    pub(crate) fn rss_kib(&self) -> u64 {
        let pid = self.child.id().expect("the server is running");
        let status =
            std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("a VmRSS line")
    }

    /// Whether the server process is still running.
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// An answer, its body read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: hyper::HeaderMap,
    pub(crate) body: String,
}

impl Answer {
    /// A header's value, or `""`.
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }

    /// The JSON-RPC message of the body: the body itself, or the last `data:` event that is a
    /// JSON-RPC answer (an event stream).
    pub(crate) fn message(&self) -> Value {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return value;
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .rfind(|message| message.get("result").is_some() || message.get("error").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {self:?}"))
    }

    /// Whether the server said it closes the connection after this answer.
    pub(crate) fn closes(&self) -> bool {
        self.header("connection").eq_ignore_ascii_case("close")
    }
}

/// One keep-alive HTTP/1.1 connection, with hyper's client and no tuning.
pub(crate) struct Client {
    sender: SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    /// The session this client opened, if any.
    pub(crate) session: Option<String>,
}

impl Client {
    /// A connection to `addr` from 127.0.0.1.
    pub(crate) async fn connect(addr: SocketAddr) -> Self {
        Self::connect_from("127.0.0.1", addr).await
    }

    /// A connection to `addr` from the loopback address `local` (e.g. `127.0.0.2`).
    pub(crate) async fn connect_from(local: &str, addr: SocketAddr) -> Self {
        let stream = tcp_from(local, addr).await;
        let (sender, connection) = bounded(
            "the HTTP handshake",
            hyper::client::conn::http1::handshake(TokioIo::new(stream)),
        )
        .await
        .expect("an HTTP/1.1 connection");
        tokio::spawn(connection);
        Self {
            sender,
            addr,
            session: None,
        }
    }

    /// Whether the connection can still take a request.
    pub(crate) async fn is_usable(&mut self) -> bool {
        bounded("the connection's readiness", self.sender.ready())
            .await
            .is_ok()
    }

    /// POSTs `body` to `/mcp` with the usual headers (and this client's session), plus
    /// `headers`; reads the whole answer.
    pub(crate) async fn post(&mut self, headers: &[(&str, &str)], body: &str) -> Answer {
        let request = self.post_request(headers, body);
        self.send(request).await
    }

    /// A POST of `body` to `/mcp` with the usual headers, this client's session and `headers`.
    fn post_request(&self, headers: &[(&str, &str)], body: &str) -> Request<Full<Bytes>> {
        let mut request = Request::post("/mcp")
            .header("host", self.addr.to_string())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
            .body(Full::new(Bytes::from(body.to_owned())))
            .expect("a request")
    }

    /// POSTs `body` like [`Client::post`] but returns once the answer's head arrived, with its
    /// body unread (a stream the server keeps open).
    pub(crate) async fn post_head(
        &mut self,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Response<hyper::body::Incoming> {
        let request = self.post_request(headers, body);
        bounded("the connection's readiness", self.sender.ready())
            .await
            .expect("the connection is usable");
        bounded("the answer's head", self.sender.send_request(request))
            .await
            .expect("an answer")
    }

    /// Sends `request` and reads the whole answer.
    pub(crate) async fn send(&mut self, request: Request<Full<Bytes>>) -> Answer {
        bounded("the connection's readiness", self.sender.ready())
            .await
            .expect("the connection is usable");
        let response: Response<hyper::body::Incoming> =
            bounded("the answer's head", self.sender.send_request(request))
                .await
                .expect("an answer");
        let (parts, body) = response.into_parts();
        let body = bounded("the answer's body", body.collect())
            .await
            .expect("a whole body")
            .to_bytes();
        Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    /// Opens a 2025-11-25 session (`initialize`, then `notifications/initialized`) and keeps
    /// its id; returns the `initialize` answer.
    pub(crate) async fn initialize(&mut self) -> Answer {
        self.session = None;
        let answer = self.post(&[], INITIALIZE).await;
        if answer.status == 200 {
            self.session = Some(answer.header("mcp-session-id").to_owned());
            let initialized = self
                .post(
                    &[("mcp-protocol-version", "2025-11-25")],
                    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                )
                .await;
            assert_eq!(initialized.status, 202, "{initialized:?}");
        }
        answer
    }

    /// `tools/call core_get_current_user` with `id` in this client's session.
    pub(crate) async fn whoami(&mut self, id: u64) -> Answer {
        let call = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "core_get_current_user", "arguments": {}},
        });
        self.post(&[("mcp-protocol-version", "2025-11-25")], &call.to_string())
            .await
    }
}

/// Checks that `answer` is a successful `core_get_current_user` result for alice.
pub(crate) fn assert_whoami(answer: &Answer) {
    assert_eq!(answer.status, 200, "{answer:?}");
    let message = answer.message();
    assert_eq!(
        message["result"]["structuredContent"]["user_id"],
        json!("alice"),
        "{answer:?}"
    );
}

/// Checks that `answer` is a JSON-RPC error with `status`, `code` and an `id` member.
pub(crate) fn assert_json_rpc_error(answer: &Answer, status: u16, code: i64) -> Value {
    let message = assert_error_with_id(answer);
    assert_eq!(answer.status, status, "{answer:?}");
    assert_eq!(message["error"]["code"], json!(code), "{message}");
    message
}

/// Checks that `answer` has an error status and a JSON-RPC error body with an `id` member.
pub(crate) fn assert_error_with_id(answer: &Answer) -> Value {
    assert!(answer.status >= 400, "{answer:?}");
    assert!(
        answer
            .header("content-type")
            .starts_with("application/json"),
        "{answer:?}"
    );
    let message: Value = serde_json::from_str(&answer.body).expect("a JSON body");
    assert_eq!(message["jsonrpc"], json!("2.0"), "{message}");
    assert!(message["error"]["code"].is_i64(), "{message}");
    assert!(
        message
            .as_object()
            .is_some_and(|object| object.contains_key("id")),
        "{message}"
    );
    message
}

/// A TCP connection to `addr` from the loopback address `local`.
pub(crate) async fn tcp_from(local: &str, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("a socket");
    socket
        .bind(format!("{local}:0").parse().expect("a local address"))
        .expect("binds the local address");
    bounded("connecting", socket.connect(addr))
        .await
        .expect("connects")
}

/// Writes `request` as raw bytes on a new connection and reads until the server closes it or
/// `LIMIT` passes; returns what came back.
pub(crate) async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = tcp_from("127.0.0.1", addr).await;
    bounded("sending", stream.write_all(request))
        .await
        .expect("sent");
    let mut answer = Vec::new();
    let _ = bounded("reading", stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// The JSON body of a raw HTTP answer (after the blank line; `Content-Length` framed).
pub(crate) fn raw_body(answer: &str) -> Value {
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body)
        .unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {answer}"))
}

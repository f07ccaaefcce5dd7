//! `switchboard serve --http` as a platform runs it: the probes answer outside the token check
//! and fast, SIGTERM under load drains (every answered call has its one audit record, no call
//! is cut off, exit 0), and `--log-format json` writes JSON lines. Each test runs the built
//! binary on a loopback port; every loop is bounded in count, every wait in time.

use std::{
    net::SocketAddr,
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use http_body_util::{BodyExt as _, Full};
use hyper::{Request, body::Bytes, client::conn::http1::SendRequest};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::{net::TcpStream, process::Child};

use crate::common::{StateDir, TempFile, bounded, exit_of, mcp_address, stderr_lines, switchboard};

/// SHA-256 of the bearer token `test`.
const TOKEN_SHA256: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/// `switchboard serve --http 127.0.0.1:0 ARGS`, its address, and its log lines as they come.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) log: Arc<Mutex<Vec<String>>>,
}

impl Served {
    /// Starts the server with `args` after `--http 127.0.0.1:0`, and `env`.
    pub(crate) async fn start(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut all = vec!["serve", "--http", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut command = switchboard(&all);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let mut stderr = stderr_lines(&mut child);
        let log = Arc::new(Mutex::new(Vec::new()));
        let addr = loop {
            let line = bounded("the start-up line", stderr.next_line())
                .await
                .expect("stderr is readable")
                .unwrap_or_else(|| panic!("the server exited: {:?}", log.lock()));
            let found = mcp_address(&line).map(|addr| addr.parse().expect("a socket address"));
            log.lock().expect("the log").push(line);
            if let Some(addr) = found {
                break addr;
            }
        };
        let kept = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok(Some(line)) = stderr.next_line().await {
                kept.lock().expect("the log").push(line);
            }
        });
        Self { child, addr, log }
    }

    /// Sends `signal` to the server.
    pub(crate) fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = self.child.id().expect("the server runs");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("a pid"));
        nix::sys::signal::kill(pid, signal).expect("the signal is sent");
    }

    /// The log so far, one line each.
    pub(crate) fn log(&self) -> String {
        self.log.lock().expect("the log").join("\n")
    }
}

/// A keep-alive HTTP/1.1 connection to `addr`, or the connection error.
pub(crate) async fn connect(addr: SocketAddr) -> std::io::Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(addr).await?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    Ok(sender)
}

/// An answer read whole: status, `Retry-After`, whether the server closes the connection, body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) retry_after: Option<String>,
    pub(crate) closes: bool,
    pub(crate) body: String,
}

/// Where an exchange failed.
#[derive(Debug)]
pub(crate) enum Failed {
    /// Before any answer arrived: the request never reached the server, or was cut off there.
    BeforeAnswer,
    /// After the answer's head: the answer was cut off.
    MidAnswer(hyper::Error),
}

/// Sends `request` on `sender` and reads the whole answer.
pub(crate) async fn exchange(
    sender: &mut SendRequest<Full<Bytes>>,
    request: Request<Full<Bytes>>,
) -> Result<Reply, Failed> {
    sender.ready().await.map_err(|_| Failed::BeforeAnswer)?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|_| Failed::BeforeAnswer)?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(Failed::MidAnswer)?.to_bytes();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    Ok(Reply {
        status: parts.status.as_u16(),
        retry_after: header("retry-after"),
        closes: header("connection").is_some_and(|value| value.eq_ignore_ascii_case("close")),
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// `GET path` on `addr`'s connection.
pub(crate) fn get(addr: SocketAddr, path: &str) -> Request<Full<Bytes>> {
    Request::get(path)
        .header("host", addr.to_string())
        .body(Full::default())
        .expect("a request")
}

/// A 2026-07-28 (stateless) `tools/call` of `tool` with no arguments.
pub(crate) fn tools_call(addr: SocketAddr, id: u64, tool: &str) -> Request<Full<Bytes>> {
    tools_call_with(addr, id, tool, json!({}))
}

/// The same with `arguments`.
pub(crate) fn tools_call_with(
    addr: SocketAddr,
    id: u64,
    tool: &str,
    arguments: serde_json::Value,
) -> Request<Full<Bytes>> {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": tool, "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    });
    Request::post("/mcp")
        .header("host", addr.to_string())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a request")
}

/// The first line of `served`'s log that says where audit records are kept.
async fn stores_line(served: &Served) -> String {
    bounded("the stores line", async {
        loop {
            let found = served
                .log
                .lock()
                .expect("the log")
                .iter()
                .find(|line| line.contains("audit records are kept in"))
                .cloned();
            if let Some(line) = found {
                return line;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// Every record of the audit store `store`, newest first, read by a new process.
pub(crate) async fn audit_records(store: &str) -> Vec<Value> {
    let output = bounded(
        "switchboard audit",
        switchboard(&["audit", "--audit", store, "--limit", "1000000", "--json"]).output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let records: Value = serde_json::from_slice(&output.stdout).expect("JSON records");
    records.as_array().expect("an array of records").clone()
}

const IDENTITY: [&str; 6] = ["--org", "acme", "--user", "alice", "--role", "admin"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr, reason = "the figures docs/deploy.md quotes")]
async fn the_probes_answer_outside_the_token_check_in_well_under_a_millisecond() {
    let tokens = TempFile::new(&format!(
        "[[token]]\nsha256 = \"{TOKEN_SHA256}\"\norg = \"acme\"\nuser = \"alice\"\nroles = [\"admin\"]\n"
    ));
    let dir = StateDir::new();
    let server = Served::start(&["--tokens", tokens.path(), "--state-dir", dir.path()], &[]).await;
    let mut refused = bounded("connecting", connect(server.addr))
        .await
        .expect("connects");
    let call = bounded(
        "a call",
        exchange(
            &mut refused,
            tools_call(server.addr, 1, "core_get_current_user"),
        ),
    )
    .await
    .expect("an answer");
    assert_eq!(call.status, 401, "the MCP endpoint wants a token: {call:?}");
    let mut sender = bounded("connecting", connect(server.addr))
        .await
        .expect("connects");

    let healthz = bounded(
        "healthz",
        exchange(&mut sender, get(server.addr, "/healthz")),
    )
    .await
    .expect("an answer");
    assert_eq!(
        (healthz.status, healthz.body.as_str()),
        (200, r#"{"status":"ok"}"#)
    );
    let readyz = bounded("readyz", exchange(&mut sender, get(server.addr, "/readyz")))
        .await
        .expect("an answer");
    assert_eq!(
        (readyz.status, readyz.body.as_str()),
        (200, r#"{"status":"ready"}"#),
        "the audit, proposals and workflow run stores answer"
    );
    // A probe from a page of another site is answered too: it tells nothing secret.
    let foreign = Request::get("/readyz")
        .header("host", server.addr.to_string())
        .header("origin", "https://evil.example")
        .body(Full::default())
        .expect("a request");
    let foreign = bounded("readyz", exchange(&mut sender, foreign))
        .await
        .expect("an answer");
    assert_eq!(foreign.status, 200, "{foreign:?}");

    let metrics = bounded(
        "metrics",
        exchange(&mut sender, get(server.addr, "/metrics")),
    )
    .await
    .expect("an answer");
    assert!(
        !metrics.body.contains("switchboard_tool_calls_total"),
        "no metrics without --metrics: {metrics:?}"
    );

    for path in ["/healthz", "/readyz"] {
        let mut took = Vec::new();
        for _ in 0..2_000 {
            let started = Instant::now();
            let answer = bounded(path, exchange(&mut sender, get(server.addr, path)))
                .await
                .expect("an answer");
            took.push(started.elapsed());
            assert_eq!(answer.status, 200);
        }
        took.sort();
        let median = took[took.len() / 2];
        let p99 = took[took.len() * 99 / 100];
        eprintln!("{path}: median {median:?}, p99 {p99:?} (2,000 requests, one connection)");
        assert!(
            median < Duration::from_millis(1),
            "{path} took {median:?} at the median"
        );
    }
}

/// What the load of the drain test saw.
#[derive(Debug, Default)]
struct Seen {
    /// Calls answered with a result.
    answered: AtomicUsize,
    /// Requests refused with `503` and `Retry-After`.
    refused: AtomicUsize,
    /// Requests that met a closed port, or a connection closed or reset before any answer.
    not_connected: AtomicUsize,
    /// Anything else, with what it was.
    wrong: Mutex<Vec<String>>,
}

/// Calls `tool` on `addr` in a loop until refused (`503`, or the port closed), at most `max`
/// times, counting what it sees in `seen`.
async fn load(addr: SocketAddr, tool: &'static str, max: u64, seen: Arc<Seen>) {
    let mut sender = None;
    for id in 0..max {
        let connection = match sender.as_mut() {
            Some(connection) => connection,
            None => match connect(addr).await {
                Ok(connection) => sender.insert(connection),
                Err(_) => {
                    seen.not_connected.fetch_add(1, Ordering::SeqCst);
                    return;
                }
            },
        };
        match exchange(connection, tools_call(addr, id, tool)).await {
            Ok(reply) if reply.status == 200 => {
                let message: Value = serde_json::from_str(&reply.body).unwrap_or_default();
                if message["result"]["isError"] == json!(false) {
                    seen.answered.fetch_add(1, Ordering::SeqCst);
                } else {
                    seen.wrong.lock().expect("seen").push(format!("{reply:?}"));
                }
                if reply.closes {
                    sender = None;
                }
            }
            Ok(reply) if reply.status == 503 && reply.retry_after.is_some() => {
                seen.refused.fetch_add(1, Ordering::SeqCst);
                return;
            }
            Ok(reply) => {
                seen.wrong.lock().expect("seen").push(format!("{reply:?}"));
                return;
            }
            Err(Failed::BeforeAnswer) => {
                // The connection closed or was reset before any answer (a connection the
                // kernel accepted as the listener closed, or an idle one closed at shutdown):
                // the request never reached a tool, or it was cut off; the audit records tell
                // which.
                seen.not_connected.fetch_add(1, Ordering::SeqCst);
                return;
            }
            Err(Failed::MidAnswer(error)) => {
                seen.wrong
                    .lock()
                    .expect("seen")
                    .push(format!("an answer cut off: {error:?}"));
                return;
            }
        }
    }
}

/// Probes `/readyz` and `/healthz` on `addr` until the connection ends; whether it saw the
/// server alive but draining.
async fn probe(addr: SocketAddr, stop: Arc<AtomicBool>) -> bool {
    let Ok(mut sender) = connect(addr).await else {
        return false;
    };
    let mut saw_draining = false;
    for _ in 0..200_000 {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(readyz) = exchange(&mut sender, get(addr, "/readyz")).await else {
            break;
        };
        if readyz.status == 503 && readyz.body == r#"{"status":"draining"}"# {
            let Ok(healthz) = exchange(&mut sender, get(addr, "/healthz")).await else {
                break;
            };
            saw_draining |= healthz.status == 200;
        }
    }
    saw_draining
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr, reason = "the figures a report quotes")]
async fn sigterm_under_load_drains_every_call_in_flight_and_audits_each_answered_one() {
    const WORKERS: usize = 16;
    let dir = StateDir::new();
    let audit = dir.store("audit.db");
    let mut args = vec![
        "--conformance",
        "--state-dir",
        dir.path(),
        "--audit",
        &audit,
    ];
    args.extend_from_slice(&IDENTITY);
    args.extend_from_slice(&["--drain-timeout", "30s"]);
    let mut server = Served::start(&args, &[]).await;
    let seen = Arc::new(Seen::default());
    // `test_reconnection` takes 100 ms: at any moment, most workers have a call in flight.
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            tokio::spawn(load(
                server.addr,
                "test_reconnection",
                2_000,
                Arc::clone(&seen),
            ))
        })
        .collect();
    let stop_probing = Arc::new(AtomicBool::new(false));
    let prober = tokio::spawn(probe(server.addr, Arc::clone(&stop_probing)));
    bounded("some calls answered", async {
        while seen.answered.load(Ordering::SeqCst) < 3 * WORKERS {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    server.signal(nix::sys::signal::Signal::SIGTERM);

    let status = exit_of("the server's exit", &mut server.child).await;
    for worker in workers {
        bounded("a worker", worker).await.expect("the worker ends");
    }
    stop_probing.store(true, Ordering::SeqCst);
    let saw_draining = bounded("the prober", prober)
        .await
        .expect("the prober ends");
    let log = server.log();
    assert_eq!(status.code(), Some(0), "a clean drain exits 0:\n{log}");
    assert!(log.contains("SIGTERM: draining"), "{log}");
    assert!(
        seen.wrong.lock().expect("seen").is_empty(),
        "{:?}\n{log}",
        seen.wrong
    );
    assert!(
        saw_draining,
        "while draining, /readyz said draining and /healthz 200"
    );
    assert!(
        seen.refused.load(Ordering::SeqCst) + seen.not_connected.load(Ordering::SeqCst) >= WORKERS,
        "every worker was stopped by a refusal: {seen:?}"
    );

    let records = audit_records(&audit).await;
    let answered = seen.answered.load(Ordering::SeqCst);
    let calls: Vec<&Value> = records
        .iter()
        .filter(|record| record["tool"] == json!("test_reconnection"))
        .collect();
    let outcomes: Vec<&Value> = calls.iter().map(|record| &record["outcome"]).collect();
    assert!(
        outcomes.iter().all(|outcome| **outcome == json!("ok")),
        "no call was cut off or cancelled: {outcomes:?}"
    );
    assert_eq!(
        calls.len(),
        answered,
        "one audit record per answered call, and none for a call without an answer ({seen:?})\n{log}"
    );
    eprintln!(
        "drained: {answered} calls answered, {} refused with 503, {} met a closed connection",
        seen.refused.load(Ordering::SeqCst),
        seen.not_connected.load(Ordering::SeqCst)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_cut_short_by_its_deadline_says_so_and_exits_1() {
    const WORKERS: usize = 16;
    let dir = StateDir::new();
    let mut args = vec!["--conformance", "--state-dir", dir.path()];
    args.extend_from_slice(&IDENTITY);
    args.extend_from_slice(&["--drain-timeout", "5ms"]);
    let mut server = Served::start(&args, &[]).await;
    let seen = Arc::new(Seen::default());
    // Calls of 100 ms, started at different times: some are always in flight.
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            tokio::spawn(load(
                server.addr,
                "test_reconnection",
                2_000,
                Arc::clone(&seen),
            ))
        })
        .collect();
    bounded("some calls answered", async {
        while seen.answered.load(Ordering::SeqCst) < 3 * WORKERS {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    server.signal(nix::sys::signal::Signal::SIGTERM);
    let status = exit_of("the server's exit", &mut server.child).await;
    for worker in workers {
        bounded("a worker", worker).await.expect("the worker ends");
    }
    let log = server.log();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains("were still in flight when the drain ended (--drain-timeout)"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_format_json_writes_one_json_object_per_log_line() {
    let dir = StateDir::new();
    let mut args = vec!["--state-dir", dir.path()];
    args.extend_from_slice(&IDENTITY);
    let text = Served::start(&args, &[]).await;
    args.extend_from_slice(&["--log-format", "json"]);
    let json = Served::start(&args, &[]).await;
    let plain = stores_line(&text).await;
    assert!(
        serde_json::from_str::<Value>(&plain).is_err(),
        "text by default: {plain}"
    );
    let line = stores_line(&json).await;
    let object: Value =
        serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line}"));
    assert_eq!(object["level"], json!("INFO"), "{object}");
    assert_eq!(object["target"], json!("switchboard::stores"), "{object}");
    assert!(
        object["fields"]["message"]
            .as_str()
            .is_some_and(|message| message.starts_with("audit records are kept in")),
        "{object}"
    );
    assert!(object["timestamp"].is_string(), "{object}");
}

//! A domain served by another node, with two real processes: node B is
//! `switchboard serve --http --domains roster --tokens F --config B.toml` on SQLite stores in a
//! directory of the test (so that a restart keeps them), and node A is a `switchboard` command
//! (`call`, `tools`, or `serve --stdio` with an MCP client) whose config file lists
//! `[[remote_domain]] roster` at B's address. The keys are made with `switchboard link-key new`.
//!
//! Covered: the calls run on B as A's caller, with the same results as on one node and audit
//! records that share tool, correlation id, action id and digests; B killed between a
//! mutation's write and its answer (a test-only layer of `serve --conformance` holds the
//! answer, `SWITCHBOARD_TEST_PAUSE_AFTER_MUTATION`), A's call answered in doubt, B restarted,
//! and the retry with the same key answered as the replay or `outcome_unknown` with the row
//! written once (the layer holds the answer after B recorded it, so here it is the replay); B stopped (SIGSTOP) answered
//! `domain_unavailable` within a ping interval plus its deadline and fast from then on, and
//! served again after SIGCONT; a key B does not list answered `domain_unavailable` naming B,
//! with nothing run there; and `tools` showing the roster's placement and health.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use rmcp::{
    RoleClient, ServiceExt as _,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::common::{
    ACME_ADMIN, assert_one_call_on_two_nodes, bounded, killed, mcp_address, switchboard,
};

/// The peer token A sends (its SHA-256 is in B's token file).
pub(crate) const PEER_TOKEN: &str = "test";
const PEER_TOKEN_SHA256: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/// The variable A's config names for the peer token.
pub(crate) const TOKEN_VARIABLE: &str = "ROSTER_PEER_TOKEN";

/// The week every listing asks for.
pub(crate) const WEEK: &str = r#"{"from": "2026-11-23", "to": "2026-11-29"}"#;

/// A directory of the test, removed on drop.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    pub(crate) fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("switchboard-remote-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir)
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub(crate) fn store(&self, name: &str) -> String {
        format!("sqlite:{}", self.path(name).display())
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `switchboard link-key new PATH`: a fresh key and PATH.pub.
async fn new_key(path: &Path) {
    let path = path.to_str().expect("UTF-8");
    let output = bounded(
        "link-key new",
        switchboard(&["link-key", "new", path]).output(),
    )
    .await
    .expect("the binary runs");
    assert!(output.status.success(), "{output:?}");
}

/// A free local port (bound, then released for node B to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// The two nodes' files: B's stores, token file and config, A's key and config.
pub(crate) struct Fleet {
    pub(crate) dir: Scratch,
    port: u16,
    b_config: PathBuf,
    tokens: PathBuf,
    pub(crate) a_config: PathBuf,
}

impl Fleet {
    /// Node A pinging B every `every` with `deadline`.
    pub(crate) async fn new(every: &str, deadline: &str) -> Self {
        let dir = Scratch::new();
        new_key(&dir.path("node-a.pem")).await;
        let port = free_port();
        let tokens = dir.write(
            "tokens.toml",
            &format!("[[token]]\nsha256 = \"{PEER_TOKEN_SHA256}\"\npeer = \"node-a\"\n"),
        );
        let b_config = dir.write(
            "b.toml",
            &format!(
                "[link]\nnode = \"node-b\"\n\n[[link.peer]]\nname = \"node-a\"\n\
                 public_key_files = [\"{}\"]\n",
                dir.path("node-a.pem.pub").display()
            ),
        );
        let a_config = dir.write(
            "a.toml",
            &a_config_text(&dir.path("node-a.pem"), port, every, deadline),
        );
        Self {
            dir,
            port,
            b_config,
            tokens,
            a_config,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Starts node B; `pause`: how long it holds each mutation's answer after the write.
    pub(crate) async fn start_b(&self, pause: Option<&str>) -> NodeB {
        let address = format!("127.0.0.1:{}", self.port);
        let args = [
            "serve",
            "--http",
            &address,
            "--domains",
            "roster",
            "--tokens",
            self.tokens.to_str().expect("UTF-8"),
            "--config",
            self.b_config.to_str().expect("UTF-8"),
            "--approvals",
            &self.dir.store("b-approvals.db"),
            "--audit",
            &self.dir.store("b-audit.db"),
            "--workflows",
            &self.dir.store("b-workflows.db"),
        ];
        let mut command = switchboard(&args);
        if let Some(pause) = pause {
            // The test-only layer of `--conformance` (src/conformance_hooks.rs).
            command
                .arg("--conformance")
                .env("SWITCHBOARD_TEST_PAUSE_AFTER_MUTATION", pause);
        }
        NodeB::spawn(command).await
    }

    /// `switchboard ARGS` as node A (its config, the peer token, acme's admin, its audit
    /// store): the exit code and standard output as JSON.
    pub(crate) async fn on_a(&self, args: &[&str]) -> (Option<i32>, Value) {
        self.run_as_a(&self.a_config, args).await
    }

    async fn run_as_a(&self, config: &Path, args: &[&str]) -> (Option<i32>, Value) {
        let mut all = args.to_vec();
        all.extend(["--config", config.to_str().expect("UTF-8")]);
        let audit = self.dir.store("a-audit.db");
        all.extend(["--audit", &audit]);
        all.extend(ACME_ADMIN);
        run_json(switchboard(&all).env(TOKEN_VARIABLE, PEER_TOKEN)).await
    }

    /// `switchboard tools --json` as node A.
    async fn tools_on_a(&self) -> (Option<i32>, Value) {
        let config = self.a_config.to_str().expect("UTF-8");
        run_json(
            switchboard(&["tools", "--json", "--config", config]).env(TOKEN_VARIABLE, PEER_TOKEN),
        )
        .await
    }

    /// The audit records of node B's store (`switchboard audit --json`), newest first.
    pub(crate) async fn b_audit(&self) -> Vec<Value> {
        audit_records(&self.dir.store("b-audit.db")).await
    }

    pub(crate) async fn a_audit(&self) -> Vec<Value> {
        audit_records(&self.dir.store("a-audit.db")).await
    }
}

/// A's config file: signs with `key`, links the roster at B's `port`.
fn a_config_text(key: &Path, port: u16, every: &str, deadline: &str) -> String {
    format!(
        "[link]\nnode = \"node-a\"\nsigning_key_files = [\"{}\"]\n\n\
         [[remote_domain]]\nname = \"roster\"\nlink = \"mcp\"\n\
         url = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env = \"{TOKEN_VARIABLE}\"\n\
         node = \"node-b\"\nhealth_every = \"{every}\"\nhealth_deadline = \"{deadline}\"\n",
        key.display()
    )
}

/// Runs `command` to its end: the exit code, and standard output as JSON (`Null` if empty).
pub(crate) async fn run_json(command: &mut tokio::process::Command) -> (Option<i32>, Value) {
    let output = bounded("switchboard", command.output())
        .await
        .expect("the binary runs");
    let stdout = if output.stdout.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
            panic!(
                "stdout is not JSON ({error}): {}\nstderr: {}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        })
    };
    (output.status.code(), stdout)
}

/// Every record of the audit store `store`, newest first.
pub(crate) async fn audit_records(store: &str) -> Vec<Value> {
    let (code, listed) = run_json(&mut switchboard(&["audit", "--audit", store, "--json"])).await;
    assert_eq!(code, Some(0), "{listed}");
    listed.as_array().expect("an array").clone()
}

/// The record of `records` with `correlation` and `tool`.
fn record_of<'a>(records: &'a [Value], correlation: &str, tool: &str) -> &'a Value {
    records
        .iter()
        .find(|record| record["correlation_id"] == correlation && record["tool"] == tool)
        .unwrap_or_else(|| panic!("no record of {tool} with {correlation}: {records:?}"))
}

/// Node B, running; killed on drop. Its standard error's lines arrive on `lines`.
pub(crate) struct NodeB {
    child: tokio::process::Child,
    lines: mpsc::UnboundedReceiver<String>,
}

impl NodeB {
    async fn spawn(mut command: tokio::process::Command) -> Self {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (sender, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            use tokio::io::AsyncBufReadExt as _;
            let mut reader = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if sender.send(line).is_err() {
                    // Nobody reads any more: keep draining so the node never blocks.
                    while let Ok(Some(_)) = reader.next_line().await {}
                    return;
                }
            }
        });
        let mut node = Self { child, lines };
        node.line_with("B's start-up line", "/mcp").await;
        node
    }

    /// Waits for a line of B's standard error that contains `needle`, and returns it.
    async fn line_with(&mut self, what: &str, needle: &str) -> String {
        let mut seen = Vec::new();
        bounded(what, async {
            while let Some(line) = self.lines.recv().await {
                if line.contains(needle) && (needle != "/mcp" || mcp_address(&line).is_some()) {
                    return line;
                }
                seen.push(line);
            }
            panic!("{what}: B ended before `{needle}`:\n{}", seen.join("\n"));
        })
        .await
    }

    fn pid(&self) -> nix::unistd::Pid {
        let id = self.child.id().expect("running");
        nix::unistd::Pid::from_raw(i32::try_from(id).expect("a pid"))
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(self.pid(), signal).expect("signalled");
    }
}

/// The error kind of a failed `call --json`.
fn kind(report: &Value) -> &str {
    report["error"]["kind"].as_str().unwrap_or("?")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_on_a_run_on_b_as_a_s_caller_with_one_audit_story() {
    let fleet = Fleet::new("2s", "1s").await;
    let _b = fleet.start_b(None).await;

    // A read: the same shifts as one node serving its own roster.
    let (code, remote) = fleet
        .on_a(&["call", "roster_list_shifts", WEEK, "--json"])
        .await;
    assert_eq!(code, Some(0), "{remote}");
    let (code, local) =
        run_json(switchboard(&["call", "roster_list_shifts", WEEK, "--json"]).args(ACME_ADMIN))
            .await;
    assert_eq!(code, Some(0), "{local}");
    assert_eq!(remote["result"], local["result"]);
    assert!(
        !remote["result"]["shifts"]
            .as_array()
            .expect("shifts")
            .is_empty(),
        "{remote}"
    );

    // A mutation, as alice of acme, under a key and correlation id of A's caller; A keeps its
    // proposals and keys in SQLite, and opens no roster beside them.
    let notice = r#"{"text": "Welcome to the team, Nina!"}"#;
    std::fs::create_dir_all(fleet.dir.path("a")).expect("A's directory");
    let a_approvals = format!(
        "sqlite:{}",
        fleet.dir.path("a").join("approvals.db").display()
    );
    let (code, posted) = fleet
        .on_a(&[
            "call",
            "roster_post_notice",
            notice,
            "--json",
            "--approvals",
            &a_approvals,
            "--correlation",
            "corr-remote-1",
            "--idempotency-key",
            "key-remote-1",
        ])
        .await;
    assert_eq!(code, Some(0), "{posted}");
    assert!(fleet.dir.path("a").join("approvals.db").exists());
    assert!(
        !fleet.dir.path("a").join("roster.db").exists(),
        "no roster on A"
    );
    let (code, single) =
        run_json(switchboard(&["call", "roster_post_notice", notice, "--json"]).args(ACME_ADMIN))
            .await;
    assert_eq!(code, Some(0), "{single}");
    // The same answer as one node, but for when it was posted.
    let without_time = |report: &Value| {
        let mut result = report["result"].clone();
        result
            .as_object_mut()
            .expect("a notice")
            .remove("posted_at");
        result
    };
    assert_eq!(without_time(&posted), without_time(&single));
    assert_eq!(posted["result"]["author"], "alice", "it ran as A's caller");

    let front = fleet.a_audit().await;
    let served = fleet.b_audit().await;
    let a = record_of(&front, "corr-remote-1", "roster_post_notice");
    let b = record_of(&served, "corr-remote-1", "roster_post_notice");
    assert_one_call_on_two_nodes(a, b);
    assert_eq!(a["action"]["id"], b["action"]["id"], "{a} / {b}");
    assert!(a["action"]["id"].is_string(), "{a}");
    // The read's records share their correlation id too.
    let reads_a = front
        .iter()
        .filter(|record| record["tool"] == "roster_list_shifts")
        .count();
    let reads_b = served
        .iter()
        .filter(|record| record["tool"] == "roster_list_shifts")
        .count();
    assert_eq!((reads_a, reads_b), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b_killed_between_a_write_and_its_answer_never_runs_the_retry_twice() {
    let fleet = Fleet::new("2s", "1s").await;
    let mut b = fleet.start_b(Some("30s")).await;
    let text = format!("once-{}", uuid::Uuid::new_v4());
    let params = json!({"text": text}).to_string();
    let call = [
        "call",
        "roster_post_notice",
        &params,
        "--json",
        "--idempotency-key",
        "key-kill-1",
    ];
    let mut all = call.to_vec();
    all.extend(["--config", fleet.a_config.to_str().expect("UTF-8")]);
    all.extend(ACME_ADMIN);
    let mut command = switchboard(&all);
    command.env(TOKEN_VARIABLE, PEER_TOKEN);
    let first = tokio::spawn(async move { run_json(&mut command).await });
    // The notice is written on B, and B holds the answer: kill it there.
    b.line_with("B holding the mutation's answer", "holding the answer")
        .await;
    killed(&mut b.child).await;
    let (code, report) = bounded("A's first call", first)
        .await
        .expect("the call's task");
    assert_eq!(code, Some(1), "the answer was lost with B: {report}");
    assert!(
        report["error"]
            .to_string()
            .contains("remote_outcome_unknown"),
        "in doubt: {report}"
    );

    let _b = fleet.start_b(None).await;
    let (code, retried) = fleet.on_a(&call).await;
    // B replays the stored result (its audit says so; A, a new process, ran the call afresh).
    let replayed = code == Some(0)
        && fleet.b_audit().await.iter().any(|record| {
            record["tool"] == "roster_post_notice" && record["action"]["event"] == "replayed"
        });
    // B's store answers a claim nobody completed in doubt, as `tool_failed` with the code
    // `outcome_unknown`.
    let unknown = code == Some(1) && retried["error"].to_string().contains("outcome_unknown");
    assert!(
        replayed || unknown,
        "the retry is the replay or outcome_unknown, never a second run: {retried}"
    );
    let (code, notices) = fleet
        .on_a(&["call", "roster_list_notices", "{}", "--json"])
        .await;
    assert_eq!(code, Some(0), "{notices}");
    let written = notices["result"]["notices"]
        .as_array()
        .expect("notices")
        .iter()
        .filter(|notice| notice["text"] == text.as_str())
        .count();
    assert_eq!(written, 1, "the notice was written exactly once: {notices}");
}

/// Node A as `serve --stdio` with its config, and an MCP client acting as acme's admin.
struct FrontA {
    _child: tokio::process::Child,
    client: RunningService<RoleClient, ()>,
}

impl FrontA {
    async fn start(fleet: &Fleet) -> Self {
        let mut args = vec![
            "serve",
            "--stdio",
            "--config",
            fleet.a_config.to_str().expect("UTF-8"),
            "--audit",
            "memory",
            "--approvals",
            "memory",
            "--workflows",
            "memory",
        ];
        args.extend(ACME_ADMIN);
        let mut child = switchboard(&args)
            .env(TOKEN_VARIABLE, PEER_TOKEN)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(fleet.dir.path("a.log")).expect("A's log"))
            .spawn()
            .expect("the binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take().expect("piped stdin");
        let client = bounded("the handshake", ().serve((stdout, stdin)))
            .await
            .expect("A starts and answers initialize");
        Self {
            _child: child,
            client,
        }
    }
}

/// Lists the week's shifts through node A's MCP session `peer`: the result.
async fn list_shifts(peer: &rmcp::service::Peer<RoleClient>) -> CallToolResult {
    let Value::Object(arguments) = serde_json::from_str(WEEK).expect("JSON") else {
        panic!("an object");
    };
    let params = CallToolRequestParams::new("roster_list_shifts").with_arguments(arguments);
    bounded("tools/call", peer.call_tool(params))
        .await
        .expect("a result")
}

/// The error kind of a result with `isError`, or `ok`.
fn result_kind(result: &CallToolResult) -> String {
    if result.is_error != Some(true) {
        return "ok".to_owned();
    }
    result
        .meta
        .as_ref()
        .and_then(|meta| meta.get("switchboard/error"))
        .and_then(|error| error["kind"].as_str())
        .unwrap_or("?")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::print_stderr,
    reason = "the figures the report and docs/deploy.md quote"
)]
async fn a_stopped_b_is_unavailable_at_once_and_serves_again_when_it_continues() {
    use nix::sys::signal::Signal;

    // Pinged every 2 s, a ping may take 1 s: a loss is noticed within 3 s.
    let noticed = Duration::from_secs(3);
    // A loaded machine (2 CPUs, parallel tests) may be slow to run the timers.
    let slack = Duration::from_millis(1500);
    let fleet = Fleet::new("2s", "1s").await;
    let b = fleet.start_b(None).await;
    let a = FrontA::start(&fleet).await;
    assert_eq!(result_kind(&list_shifts(a.client.peer()).await), "ok");
    // A keeps no roster: it says where the roster is kept.
    let log = std::fs::read_to_string(fleet.dir.path("a.log")).expect("A's log");
    assert!(log.contains("the roster is kept by node-b"), "{log}");

    b.signal(Signal::SIGSTOP);
    let stopped = Instant::now();
    // A new call every 250 ms for 6 s, each on its own: (sent, answered, kind) after SIGSTOP.
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..24 {
        let peer = a.client.peer().clone();
        calls.spawn(async move {
            let sent = stopped.elapsed();
            let kind = result_kind(&list_shifts(&peer).await);
            (sent, stopped.elapsed(), kind)
        });
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut outcomes = Vec::new();
    while let Some(outcome) = bounded("the calls while B is stopped", calls.join_next()).await {
        outcomes.push(outcome.expect("a call's task"));
    }
    outcomes.sort_by_key(|(sent, _, _)| *sent);
    let detected = outcomes
        .iter()
        .filter(|(_, _, kind)| kind == "domain_unavailable")
        .map(|(_, answered, _)| *answered)
        .min()
        .unwrap_or_else(|| panic!("never domain_unavailable: {outcomes:?}"));
    eprintln!("SIGSTOP noticed: the first domain_unavailable {detected:?} after it");
    assert!(detected <= noticed + slack, "{outcomes:?}");
    for (sent, answered, kind) in &outcomes {
        let took = *answered - *sent;
        if kind == "domain_unavailable" {
            assert!(took < Duration::from_millis(500), "fail fast: {outcomes:?}");
        } else {
            // Sent before the loss was noticed: in doubt once it is, after one ping interval
            // of waiting for a new connection to send the read again.
            assert_eq!(kind, "tool_failed", "{outcomes:?}");
            assert!(
                *answered <= noticed + Duration::from_secs(2) + slack,
                "in flight ends in doubt: {outcomes:?}"
            );
        }
    }
    let in_doubt = outcomes
        .iter()
        .filter(|(_, _, kind)| kind == "tool_failed")
        .map(|(_, answered, _)| *answered)
        .max();
    eprintln!("calls in flight at SIGSTOP answered in doubt by {in_doubt:?}");

    b.signal(Signal::SIGCONT);
    let continued = Instant::now();
    let recovered = loop {
        if result_kind(&list_shifts(a.client.peer()).await) == "ok" {
            break continued.elapsed();
        }
        assert!(
            continued.elapsed() < Duration::from_secs(30),
            "A never served B's roster again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("served again {recovered:?} after SIGCONT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_b_does_not_list_is_refused_and_nothing_runs_on_b() {
    let fleet = Fleet::new("2s", "1s").await;
    let _b = fleet.start_b(None).await;
    new_key(&fleet.dir.path("stranger.pem")).await;
    let stranger = fleet.dir.write(
        "stranger.toml",
        &a_config_text(&fleet.dir.path("stranger.pem"), fleet.port, "2s", "1s"),
    );
    let (code, report) = fleet
        .run_as_a(
            &stranger,
            &[
                "call",
                "roster_post_notice",
                r#"{"text": "forged"}"#,
                "--json",
                "--correlation",
                "corr-stranger",
            ],
        )
        .await;
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(kind(&report), "domain_unavailable", "{report}");
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("node-b"), "{report}");
    let served = fleet.b_audit().await;
    assert!(
        served
            .iter()
            .all(|record| record["correlation_id"] != "corr-stranger"),
        "nothing ran on B: {served:?}"
    );
    // The right key still goes through, so the refusal was the key's.
    let (code, listed) = fleet
        .on_a(&["call", "roster_list_notices", "{}", "--json"])
        .await;
    assert_eq!(code, Some(0), "{listed}");
    assert!(
        listed["result"]["notices"]
            .as_array()
            .expect("notices")
            .iter()
            .all(|notice| notice["text"] != "forged"),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_shows_the_roster_s_placement_and_health() {
    let fleet = Fleet::new("2s", "1s").await;
    let mut b = fleet.start_b(None).await;
    let placement = format!("mcp node-b at {}", fleet.url());

    let (code, tools) = fleet.tools_on_a().await;
    assert_eq!(code, Some(0), "{tools}");
    let roster: Vec<&Value> = tools
        .as_array()
        .expect("an array")
        .iter()
        .filter(|tool| tool["domain"] == "roster")
        .collect();
    assert!(!roster.is_empty(), "{tools}");
    for tool in &roster {
        assert_eq!(tool["placement"], "mcp", "{tool}");
        assert_eq!(
            tool["location"],
            format!("node-b at {}", fleet.url()).as_str()
        );
        assert_eq!(tool["health"], "up", "{tool}");
    }
    let output = bounded(
        "tools",
        switchboard(&["tools", "--config", fleet.a_config.to_str().expect("UTF-8")])
            .env(TOKEN_VARIABLE, PEER_TOKEN)
            .output(),
    )
    .await
    .expect("the binary runs");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains(&placement), "{table}");

    // B gone: the placement stays, the health says the link is open.
    killed(&mut b.child).await;
    let (code, tools) = fleet.tools_on_a().await;
    assert_eq!(code, Some(0), "{tools}");
    let health = tools
        .as_array()
        .expect("an array")
        .iter()
        .find(|tool| tool["domain"] == "roster")
        .map(|tool| tool["health"].as_str().unwrap_or_default().to_owned())
        .expect("a roster tool");
    assert!(health.starts_with("open"), "{health}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_b_opens_the_link_unless_strict_and_a_mistake_is_a_usage_error() {
    // No node B listens on the fleet's port.
    let fleet = Fleet::new("2s", "1s").await;
    let call = ["call", "roster_list_shifts", WEEK, "--json"];
    let (code, report) = fleet.on_a(&call).await;
    assert_eq!(
        code,
        Some(1),
        "lenient: A runs, the call is refused: {report}"
    );
    assert_eq!(kind(&report), "domain_unavailable", "{report}");
    let mut strict = call.to_vec();
    strict.push("--strict-remote");
    let (code, report) = fleet.on_a(&strict).await;
    assert_eq!(code, Some(3), "strict: A refuses to run: {report}");
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`roster` is not reachable"), "{report}");
    // The cause under the HTTP client's own error: nothing listens there.
    assert!(message.contains("Connection refused"), "{report}");

    let typo = fleet.dir.write(
        "typo.toml",
        &std::fs::read_to_string(&fleet.a_config)
            .expect("A's config")
            .replace("name = \"roster\"", "name = \"rostr\""),
    );
    let (code, report) = fleet.run_as_a(&typo, &call).await;
    assert_eq!(code, Some(2), "{report}");
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("did you mean `roster`"), "{report}");
}

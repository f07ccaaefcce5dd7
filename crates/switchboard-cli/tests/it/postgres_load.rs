//! The load and the helpers of the database fault tests (`postgres_faults`): nodes on a
//! private PostgreSQL server, stateless MCP clients that call reads, mutations and proposals,
//! a person deciding proposals from new processes, and what each of them was answered.

use std::{
    process::Output,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use switchboard_test_postgres::TestCluster;

use crate::{
    common::{ACME_ADMIN, bounded, switchboard},
    http_client::{Client, Server},
};

/// The stores' call timeout (`PostgresOptions`' default): no call may wait on an absent
/// database longer than that, plus [`MARGIN`].
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Room over [`CALL_TIMEOUT`] for a machine busy with the load, the server's crash recovery
/// and the other tests.
pub(crate) const MARGIN: Duration = Duration::from_secs(2);

/// How long the load runs against a healthy database before the server is stopped.
pub(crate) const HEALTHY: Duration = Duration::from_secs(3);

/// How long the server stays stopped.
pub(crate) const OUTAGE: Duration = Duration::from_secs(4);

/// How long the server is frozen (SIGSTOP): longer than the call timeout.
pub(crate) const FREEZE: Duration = Duration::from_secs(25);

/// How long the nodes may take to serve again once the server is back.
pub(crate) const RECOVERY_LIMIT: Duration = Duration::from_secs(30);

/// What a call may be refused with while the database is away: the audit record could not be
/// committed, or a store (proposals, idempotency keys) could not be reached (`tool_failed` with
/// code `idempotency_store_unavailable`).
pub(crate) const OUTAGE_KINDS: [&str; 3] = ["audit_failed", "store_unavailable", "tool_failed"];

/// Concurrent clients of the human node, and of the agent node.
pub(crate) const HUMAN_CLIENTS: usize = 6;
pub(crate) const AGENT_CLIENTS: usize = 2;

/// A private PostgreSQL cluster, and its `postgres` database's URL (password included).
pub(crate) fn private_cluster() -> (TestCluster, String) {
    let cluster = TestCluster::start()
        .expect("a private PostgreSQL cluster (PostgreSQL's server programs are installed)");
    let url = cluster.url();
    (cluster, url)
}

/// `serve --http` on `url` for every store, as alice (acme admin), with `extra` flags.
pub(crate) async fn node(url: &str, extra: &[&str]) -> Server {
    let mut flags = vec!["--audit", url, "--approvals", url, "--workflows", url];
    flags.extend_from_slice(extra);
    Server::start(&flags).await
}

/// A unique, valid W3C `traceparent`: the call's correlation id, from which a mutation's
/// idempotency key is derived (with the tool, the organisation and the params).
pub(crate) fn traceparent(sequence: u64) -> String {
    format!(
        "00-{:032x}-{:016x}-01",
        0xdb00_0000_0000_0000_u128 + u128::from(sequence),
        1
    )
}

/// A 2026-07-28 `tools/call`: everything in the request, no session.
pub(crate) fn stateless_call(id: u64, tool: &str, arguments: &Value, traceparent: &str) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "traceparent": traceparent,
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string()
}

/// How a node answered one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// A successful result: its `structuredContent`.
    Done(Value),
    /// A tool result with `isError`: the error's JSON (`kind`, `message`, …).
    Refused(Value),
    /// A JSON-RPC error, or an HTTP error status: the body.
    Protocol(String),
}

impl Answer {
    pub(crate) fn kind(&self) -> &str {
        match self {
            Self::Done(_) => "ok",
            Self::Refused(error) => error["kind"].as_str().unwrap_or("(no kind)"),
            Self::Protocol(_) => "(protocol error)",
        }
    }
}

/// Posts `body` (a `tools/call` of `tool`) and classifies the answer.
pub(crate) async fn post(client: &mut Client, tool: &str, body: &str) -> Answer {
    let answer = client
        .post(
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", tool),
            ],
            body,
        )
        .await;
    if answer.status != 200 {
        return Answer::Protocol(format!("HTTP {}: {}", answer.status, answer.body));
    }
    let message = answer.message();
    let result = &message["result"];
    if result.is_null() {
        return Answer::Protocol(message.to_string());
    }
    if result["isError"] == json!(true) {
        Answer::Refused(result["_meta"]["switchboard/error"].clone())
    } else {
        Answer::Done(result["structuredContent"].clone())
    }
}

/// One call a client made, and what came of it.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// Which node: `"human"` or `"agent"`.
    pub(crate) node: &'static str,
    pub(crate) tool: &'static str,
    pub(crate) traceparent: String,
    pub(crate) body: String,
    /// When it was sent, since the load started.
    pub(crate) sent: Duration,
    pub(crate) took: Duration,
    pub(crate) answer: Answer,
}

/// A decision on a proposal, made by `switchboard approve` in a process of its own.
#[derive(Debug, Clone)]
pub(crate) struct Decision {
    pub(crate) proposal_id: String,
    pub(crate) sent: Duration,
    pub(crate) took: Duration,
    pub(crate) output: Output,
}

/// What the load's clients share: the calls made, the decisions taken, when to stop.
pub(crate) struct Load {
    pub(crate) started: Instant,
    pub(crate) sequence: AtomicU64,
    pub(crate) stop: AtomicBool,
    pub(crate) calls: Mutex<Vec<Call>>,
    pub(crate) decisions: Mutex<Vec<Decision>>,
    /// Proposals the agent node acknowledged, waiting for a decision.
    pub(crate) pending: Mutex<Vec<String>>,
}

impl Load {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            started: Instant::now(),
            sequence: AtomicU64::new(1),
            stop: AtomicBool::new(false),
            calls: Mutex::new(Vec::new()),
            decisions: Mutex::new(Vec::new()),
            pending: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn next(&self) -> u64 {
        self.sequence.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("the calls' lock").clone()
    }

    pub(crate) fn decisions(&self) -> Vec<Decision> {
        self.decisions.lock().expect("the decisions' lock").clone()
    }

    /// Makes one call of `tool` with `arguments` through `client`, and keeps it.
    pub(crate) async fn call(
        &self,
        client: &mut Client,
        node: &'static str,
        tool: &'static str,
        arguments: &Value,
    ) -> Answer {
        let sequence = self.next();
        let traceparent = traceparent(sequence);
        let body = stateless_call(sequence, tool, arguments, &traceparent);
        let sent = self.started.elapsed();
        let began = Instant::now();
        let answer = post(client, tool, &body).await;
        let call = Call {
            node,
            tool,
            traceparent,
            body,
            sent,
            took: began.elapsed(),
            answer: answer.clone(),
        };
        self.calls.lock().expect("the calls' lock").push(call);
        answer
    }
}

/// A client of the human node: reads, notices (a mutation whose result differs on every run)
/// and shift assignments, in turn.
pub(crate) async fn human_client(load: Arc<Load>, addr: std::net::SocketAddr, number: usize) {
    let mut client = Client::connect(addr).await;
    let users = ["alice", "mark", "sam"];
    let mut turn = number;
    while !load.stop.load(Ordering::Relaxed) {
        turn += 1;
        match turn % 3 {
            0 => {
                load.call(&mut client, "human", "core_get_current_user", &json!({}))
                    .await;
            }
            1 => {
                let text = format!("client {number}, turn {turn}");
                load.call(
                    &mut client,
                    "human",
                    "roster_post_notice",
                    &json!({"text": text}),
                )
                .await;
            }
            _ => {
                let day = 23 + turn % 7;
                let slot = if turn.is_multiple_of(2) { "am" } else { "pm" };
                let shift = format!("acme-2026-11-{day}-{slot}");
                let user = users[turn % users.len()];
                load.call(
                    &mut client,
                    "human",
                    "roster_assign_shift",
                    &json!({"shift_id": shift, "user_id": user}),
                )
                .await;
            }
        }
    }
}

/// A client of the agent node: each assignment it asks for becomes a proposal.
pub(crate) async fn agent_client(load: Arc<Load>, addr: std::net::SocketAddr, number: usize) {
    let mut client = Client::connect(addr).await;
    let mut turn = number;
    while !load.stop.load(Ordering::Relaxed) {
        turn += 1;
        let shift = format!("acme-2026-11-{}-pm", 23 + turn % 7);
        let answer = load
            .call(
                &mut client,
                "agent",
                "roster_assign_shift",
                &json!({"shift_id": shift, "user_id": "sam"}),
            )
            .await;
        if let Answer::Refused(error) = &answer
            && error["kind"] == json!("approval_required")
        {
            let id = error["proposal_id"].as_str().expect("a proposal id");
            load.pending
                .lock()
                .expect("the pending proposals' lock")
                .push(id.to_owned());
        }
        // Proposals pile up faster than a person decides; a pause keeps the list short.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A person approving the agent's proposals, each with `switchboard approve` in a new process.
pub(crate) async fn decider(load: Arc<Load>, url: String) {
    while !load.stop.load(Ordering::Relaxed) {
        let next = load
            .pending
            .lock()
            .expect("the pending proposals' lock")
            .pop();
        let Some(proposal_id) = next else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let sent = load.started.elapsed();
        let began = Instant::now();
        let output = bounded(
            "switchboard approve",
            switchboard(&[
                "approve",
                &proposal_id,
                "--json",
                "--org",
                "acme",
                "--user",
                "mark",
                "--role",
                "manager",
                "--audit",
                &url,
                "--approvals",
                &url,
            ])
            .output(),
        )
        .await
        .expect("the binary runs");
        load.decisions
            .lock()
            .expect("the decisions' lock")
            .push(Decision {
                proposal_id,
                sent,
                took: began.elapsed(),
                output,
            });
    }
}

/// `switchboard ARGS` for the stores at `url`, as alice (acme admin): its output, with exit 0.
pub(crate) async fn read_back(args: &[&str], url: &str) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    all.extend_from_slice(&ACME_ADMIN);
    all.extend_from_slice(&["--audit", url, "--approvals", url]);
    let output = bounded("reading the stores back", switchboard(&all).output())
        .await
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("JSON")
}

/// Every audit record in the database.
pub(crate) async fn audit_records(url: &str) -> Vec<Value> {
    let output = bounded(
        "switchboard audit",
        switchboard(&["audit", "--json", "--limit", "1000000", "--audit", url]).output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let records: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    records.as_array().expect("an array of records").clone()
}

/// Stops or starts the cluster without holding up the test's runtime.
pub(crate) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(work)
}

//! Several nodes, one truth: two real `switchboard serve --http` processes share one
//! PostgreSQL database (audit, proposals, idempotency keys, workflow runs, the roster) and one
//! requestState key, and a test drives them alternately, as a load balancer would. A
//! 2026-07-28 client is stateless, so each of its requests may land on either node.

use serde_json::{Value, json};
use switchboard_test_postgres::{TestDatabase, test_database};

use crate::{
    common::{
        MARK, TempFile, bounded, fleet_node_flags, json_on_stores, killed, spawned_until,
        switchboard,
    },
    http_client::{Client, Server},
};

/// The nodes' shared requestState key (shared configuration, not a per-process secret).
const STATE_KEY: &str = "5b0c6f3d9e2a47c18f60b3a9d2e4c7f1a8b5d0e3f6a9c2b5e8d1f4a7c0b3e6d9";
/// Another key: a node configured with it is not one of this fleet.
const OTHER_KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

struct Fleet {
    database: TestDatabase,
    _key: TempFile,
    nodes: Vec<Server>,
}

impl Fleet {
    /// Two nodes on one fresh database, with `extra` flags each.
    async fn start(extra: &[&str]) -> Self {
        let database = test_database()
            .await
            .expect("a test database (the tests run through `cargo xtask test`)");
        let key = TempFile::new(&format!("{STATE_KEY}\n"));
        let url = database.url().to_owned();
        let mut nodes = Vec::new();
        for name in ["node-a", "node-b"] {
            let mut flags = fleet_node_flags(name, &url);
            flags.extend_from_slice(&["--state-key-file", key.path()]);
            flags.extend_from_slice(extra);
            nodes.push(Server::start(&flags).await);
        }
        Self {
            database,
            _key: key,
            nodes,
        }
    }

    /// A fresh connection to node `n` (0 or 1).
    async fn client(&self, n: usize) -> Client {
        Client::connect(self.nodes[n].addr).await
    }

    /// Every audit record in the shared database, read by a new process.
    async fn audit_records(&self) -> Vec<Value> {
        let output = bounded(
            "switchboard audit",
            switchboard(&[
                "audit",
                "--json",
                "--limit",
                "1000",
                "--audit",
                self.database.url(),
            ])
            .output(),
        )
        .await
        .expect("the binary runs");
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let records: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        records.as_array().expect("an array of records").clone()
    }
}

/// A 2026-07-28 `tools/call`: everything in the request, no session.
fn stateless_call(id: u64, tool: &str, arguments: Value, meta: Value) -> String {
    let mut meta = meta;
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    })
    .to_string()
}

async fn post_stateless(client: &mut Client, tool: &str, body: &str) -> Value {
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
    assert_eq!(answer.status, 200, "{answer:?}");
    answer.message()
}

const ASSIGN: &str = "roster_assign_shift";

fn assignment(shift: &str) -> Value {
    json!({"shift_id": shift, "user_id": "sam"})
}

/// The retry of an `input_required` call, approving, with the sealed state.
fn approving_retry(first: &str, id: u64, state: &str) -> String {
    let mut retry: Value = serde_json::from_str(first).expect("JSON");
    retry["id"] = json!(id);
    retry["params"]["requestState"] = json!(state);
    retry["params"]["inputResponses"] =
        json!({"approval": {"action": "accept", "content": {"decision": "approve"}}});
    retry.to_string()
}

/// Records of runs of `tool` that executed (not proposals, not replays).
fn executions<'r>(records: &'r [Value], tool: &str) -> Vec<&'r Value> {
    records
        .iter()
        .filter(|record| record["tool"] == json!(tool) && record["outcome"] == json!("ok"))
        .filter(|record| {
            let event = &record["action"]["event"];
            event == &json!("executed") || event == &json!("approved")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_sealed_by_one_node_is_approved_through_the_other_and_runs_once() {
    let fleet = Fleet::start(&["--initiator", "agent", "--approve-by-elicitation"]).await;
    let (mut a, mut b) = (fleet.client(0).await, fleet.client(1).await);
    let first = stateless_call(1, ASSIGN, assignment("acme-2026-11-24-pm"), json!({}));
    let asked = post_stateless(&mut a, ASSIGN, &first).await;
    assert_eq!(
        asked["result"]["resultType"],
        json!("input_required"),
        "{asked:#}"
    );
    let state = asked["result"]["requestState"]
        .as_str()
        .expect("a sealed requestState")
        .to_owned();

    // Tampered with, node B refuses it and decides nothing.
    let mut tampered = state.clone().into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ASCII");
    let refused = post_stateless(&mut b, ASSIGN, &approving_retry(&first, 2, &tampered)).await;
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused:#}");

    // As sealed, node B opens it (the key is shared) and the tool runs, once.
    let approved = post_stateless(&mut b, ASSIGN, &approving_retry(&first, 3, &state)).await;
    assert_eq!(approved["result"]["isError"], json!(false), "{approved:#}");
    assert_eq!(
        approved["result"]["structuredContent"]["assignee"],
        json!("sam")
    );
    // The same retry again, on node A: the decision is final, nothing runs again.
    let again = post_stateless(&mut a, ASSIGN, &approving_retry(&first, 4, &state)).await;
    assert_eq!(again["result"]["isError"], json!(true), "{again:#}");
    assert_eq!(
        again["result"]["_meta"]["switchboard/error"]["kind"],
        json!("proposal_closed")
    );
    // The roster is kept in the fleet's database: node A reads what node B changed.
    let read = stateless_call(
        5,
        "roster_get_shift",
        json!({"shift_id": "acme-2026-11-24-pm"}),
        json!({}),
    );
    let seen = post_stateless(&mut a, "roster_get_shift", &read).await;
    assert_eq!(
        seen["result"]["structuredContent"]["assignee"],
        json!("sam"),
        "{seen:#}"
    );
    let records = fleet.audit_records().await;
    assert_eq!(executions(&records, ASSIGN).len(), 1, "{records:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_another_key_refuses_the_fleets_request_state() {
    let fleet = Fleet::start(&["--initiator", "agent", "--approve-by-elicitation"]).await;
    let outsider_key = TempFile::new(&format!("{OTHER_KEY}\n"));
    let url = fleet.database.url();
    let outsider = Server::start(&[
        "--initiator",
        "agent",
        "--approve-by-elicitation",
        "--approvals",
        url,
        "--audit",
        url,
        "--state-key-file",
        outsider_key.path(),
    ])
    .await;
    let mut a = fleet.client(0).await;
    let first = stateless_call(1, ASSIGN, assignment("acme-2026-11-25-am"), json!({}));
    let asked = post_stateless(&mut a, ASSIGN, &first).await;
    let state = asked["result"]["requestState"].as_str().expect("a state");
    let mut other = Client::connect(outsider.addr).await;
    let refused = post_stateless(&mut other, ASSIGN, &approving_retry(&first, 2, state)).await;
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_sent_to_both_nodes_at_once_runs_the_tool_once_and_everyone_gets_its_result() {
    // A person's client: an execute tool runs without a proposal.
    let fleet = Fleet::start(&["--initiator", "human"]).await;
    // One request, retried by a client many times at once through both nodes: the same
    // traceparent and params derive the same idempotency key everywhere.
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let body = stateless_call(
        7,
        ASSIGN,
        assignment("acme-2026-11-26-pm"),
        json!({"traceparent": traceparent}),
    );
    let mut callers = Vec::new();
    for n in 0..24 {
        let addr = fleet.nodes[n % 2].addr;
        let body = body.clone();
        callers.push(tokio::spawn(async move {
            let mut client = Client::connect(addr).await;
            post_stateless(&mut client, ASSIGN, &body).await
        }));
    }
    let mut results = Vec::new();
    for caller in callers {
        let answer = caller.await.expect("the caller finished");
        assert_eq!(answer["result"]["isError"], json!(false), "{answer:#}");
        results.push(answer["result"]["structuredContent"].clone());
    }
    assert!(
        results.windows(2).all(|pair| pair[0] == pair[1]),
        "every caller gets the first result: {results:#?}"
    );
    let records = fleet.audit_records().await;
    assert_eq!(executions(&records, ASSIGN).len(), 1, "{records:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_client_spread_over_both_nodes_notices_nothing_and_each_record_names_its_node()
{
    let fleet = Fleet::start(&[]).await;
    let mut clients = [fleet.client(0).await, fleet.client(1).await];
    for id in 0..10u64 {
        let client = &mut clients[(id % 2) as usize];
        let traceparent = format!("00-4bf92f3577b34da6a3ce929d0e0e47{id:02}-00f067aa0ba902b7-01");
        let body = stateless_call(
            id,
            "core_get_current_user",
            json!({}),
            json!({"traceparent": traceparent}),
        );
        let answer = post_stateless(client, "core_get_current_user", &body).await;
        assert_eq!(answer["result"]["isError"], json!(false), "{answer:#}");
        assert_eq!(
            answer["result"]["structuredContent"]["user_id"],
            json!("alice")
        );
    }
    let records = fleet.audit_records().await;
    let nodes: Vec<&Value> = records
        .iter()
        .filter(|record| record["tool"] == json!("core_get_current_user"))
        .map(|record| &record["node"])
        .collect();
    assert_eq!(
        nodes.len(),
        10,
        "either node's records are in the one audit log: {records:#?}"
    );
    for node in ["node-a", "node-b"] {
        assert_eq!(
            nodes.iter().filter(|name| **name == &json!(node)).count(),
            5,
            "each record names the node that ran the call: {nodes:?}"
        );
    }
}

/// A notice, a wait, two more notices. The wait is long enough for the test to see it start
/// and kill the process that drives the run inside it.
const THREE_NOTICES: &str = r#"
workflow: three_notices
nodes:
  - id: first
    tool: roster_post_notice
    params: { text: "notice 1" }
  - id: pause
    wait: 4s
  - id: second
    tool: roster_post_notice
    params: { text: "notice 2" }
  - id: third
    tool: roster_post_notice
    params: { text: "notice 3" }
"#;

/// `switchboard ARGS` on the fleet's stores, as mark, run to its end: its JSON output.
async fn on_the_fleet(fleet: &Fleet, args: &[&str]) -> Value {
    json_on_stores(fleet.database.url(), args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_node_was_killed_is_finished_by_another_node_with_each_step_once() {
    let fleet = Fleet::start(&[]).await;
    let definition = TempFile::new(THREE_NOTICES);
    let url = fleet.database.url();
    // Node A: a `workflow run` process on the fleet's stores, killed inside the wait.
    let mut node_a = spawned_until(
        switchboard(&["workflow", "run", definition.path(), "--watch"])
            .args(MARK)
            .args(["--workflows", url, "--approvals", url, "--audit", url]),
        "pause#0  waiting until",
    )
    .await;
    killed(&mut node_a).await;

    let listed = on_the_fleet(&fleet, &["workflow", "list", "--unfinished", "--json"]).await;
    let run = listed["runs"][0]["id"]
        .as_str()
        .expect("the killed node's run is unfinished")
        .to_owned();
    // The serve nodes sweep for runs no live node holds, and one of them finishes it.
    let finished = bounded("another node finishing the run", async {
        loop {
            let shown = on_the_fleet(&fleet, &["workflow", "show", &run, "--json"]).await;
            if shown["run"]["state"]["state"] == json!("completed") {
                return shown;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    })
    .await;
    assert_eq!(
        finished["run"]["steps_taken"],
        json!(4),
        "every node ran once: {finished:#}"
    );
    let records = fleet.audit_records().await;
    let posted = executions(&records, "roster_post_notice");
    let mut notices: Vec<&str> = posted
        .iter()
        .filter_map(|record| record["input_hash"].as_str())
        .collect();
    notices.sort_unstable();
    notices.dedup();
    assert_eq!(
        (posted.len(), notices.len()),
        (3, 3),
        "each notice posted once, across the killed node and the one that finished: {posted:#?}"
    );
}

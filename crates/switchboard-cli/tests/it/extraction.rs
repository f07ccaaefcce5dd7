//! The extraction proof: one unchanged read (`roster_list_shifts`, a week) and one unchanged
//! mutation (`roster_assign_shift`, a seeded shift to mark) called five ways, with the same
//! results and equivalent audit records every way:
//!
//! 1. in process: `switchboard call` on one node;
//! 2. over MCP stdio: an MCP client of `switchboard serve --stdio`;
//! 3. over MCP HTTP: an MCP client of `switchboard serve --http`;
//! 4. on a front node A whose `[[remote_domain]] roster` is node B over the MCP link
//!    (`remote_domain::Fleet`);
//! 5. on a front node A whose roster is node B over the `ractor_cluster` link
//!    (`cluster_link::ClusterPair`; only with the CLI's `cluster` feature, in the module
//!    `cluster`, which `-E 'test(cluster)'` selects).
//!
//! Both tools answer without a clock or a minted id, so the results are compared whole (no
//! result field is stripped). An audit record is compared without the fields [`VOLATILE`]
//! names (its row id, time, duration, node and session) and without its action's id (minted
//! per call; on a remote call the front's and the domain's records share it, which is checked
//! instead). Everything else must be equal: tool, domain, category, org, user, initiator,
//! correlation id (each leg sets the same one: `--correlation` on the command line, a W3C
//! `traceparent` in `_meta` over MCP), input and output digests, outcome and action event.
//!
//! Then, on a front over each link, `ask` routes the same utterances to `roster_list_shifts`
//! and to `roster_assign_shift` as on one node (same route, same result, the call recorded on
//! B as one node records it), and
//! the shift-swap workflow (docs/examples/workflows/shift_swap.yaml, exported by the roster as
//! `roster_swap_shifts`) started on the front ends as on one node, with each of its four steps
//! recorded on B under the run's correlation id, as A records it.

use std::process::Stdio;

use rmcp::{
    RoleClient, ServiceExt as _,
    model::{CallToolRequestParams, CallToolResult, RequestMetaObject},
    service::RunningService,
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};

use crate::{
    common::{ACME_ADMIN, bounded, mcp_address, stderr_lines, stdio_client, switchboard},
    remote_domain::{Fleet, Scratch, WEEK, audit_records, run_json},
};

/// The read.
const LIST: &str = "roster_list_shifts";

/// The mutation, and its params: a seeded shift of acme's, given to mark.
const ASSIGN: &str = "roster_assign_shift";
const ASSIGN_PARAMS: &str = r#"{"shift_id": "acme-2026-11-23-am", "user_id": "mark"}"#;

/// The correlation id of each call, the same on every leg (a valid `traceparent`, so that an
/// MCP call can carry it).
const LIST_CORRELATION: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const ASSIGN_CORRELATION: &str = "00-1bf7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01";

/// The fields of an audit record that depend on where and when the call ran, not on what it
/// did: left out of every comparison.
const VOLATILE: [&str; 5] = ["id", "timestamp", "duration_us", "node", "session_id"];

/// One call's answer on one leg: the tool's result, and the audit record of the node that ran
/// it.
#[derive(Debug)]
struct Answer {
    result: Value,
    record: Value,
}

/// `record` without its [`VOLATILE`] fields and its action's id.
fn comparable(record: &Value) -> Value {
    let mut record = record.clone();
    let fields = record.as_object_mut().expect("a record is an object");
    for field in VOLATILE {
        fields.remove(field);
    }
    if let Some(action) = fields.get_mut("action").and_then(Value::as_object_mut) {
        action.remove("id");
    }
    record
}

/// Asserts that `leg`'s answer equals `baseline`'s: the same result, an equivalent record.
fn assert_same(leg: &str, baseline: &Answer, answer: &Answer) {
    assert_eq!(
        answer.result, baseline.result,
        "{leg}: the result differs from one node's"
    );
    assert_eq!(
        comparable(&answer.record),
        comparable(&baseline.record),
        "{leg}: the audit record differs from one node's\n{leg}: {}\none node: {}",
        answer.record,
        baseline.record
    );
}

/// The one record of `records` of `tool` with `correlation`.
fn only_record(records: &[Value], tool: &str, correlation: &str) -> Value {
    let found: Vec<&Value> = records
        .iter()
        .filter(|record| record["tool"] == tool && record["correlation_id"] == correlation)
        .collect();
    assert_eq!(found.len(), 1, "one record of {tool}: {records:?}");
    found[0].clone()
}

/// `switchboard call TOOL PARAMS --json --correlation C` as acme's admin, with `extra` flags:
/// the exit code and the JSON report.
fn call_args<'a>(tool: &'a str, params: &'a str, correlation: &'a str) -> Vec<&'a str> {
    vec!["call", tool, params, "--json", "--correlation", correlation]
}

/// Leg 1: `switchboard call` on one node, its record from the report.
async fn in_process(tool: &str, params: &str, correlation: &str) -> Answer {
    let (code, report) =
        run_json(switchboard(&call_args(tool, params, correlation)).args(ACME_ADMIN)).await;
    assert_eq!(code, Some(0), "{report}");
    let records = report["audit"].as_array().expect("the call's records");
    Answer {
        record: only_record(records, tool, correlation),
        result: report["result"].clone(),
    }
}

/// A node A's call over a link: its report's result, the record on the domain's node B (and A's
/// record, which must be equivalent and share B's action id).
fn remote_answer(
    leg: &str,
    report: &Value,
    front: &[Value],
    served: &[Value],
    tool: &str,
    correlation: &str,
) -> Answer {
    let a = only_record(front, tool, correlation);
    let b = only_record(served, tool, correlation);
    assert_eq!(comparable(&a), comparable(&b), "{leg}: A's and B's records");
    assert_eq!(a["action"]["id"], b["action"]["id"], "{leg}: {a} / {b}");
    assert_eq!(b["node"], "node-b", "{leg}: {b}");
    Answer {
        result: report["result"].clone(),
        record: b,
    }
}

/// The JSON of an MCP tool result: its structured content, or its text parsed as JSON.
fn mcp_json(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    if let Some(structured) = &result.structured_content {
        return structured.clone();
    }
    let text = result
        .content
        .first()
        .and_then(|content| content.as_text())
        .map(|text| text.text.clone())
        .expect("a text content");
    serde_json::from_str(&text).expect("JSON text")
}

/// A `tools/call` of `tool` with `params` and the `traceparent` `correlation`: its JSON.
async fn mcp_call(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    params: &str,
    correlation: &str,
) -> Value {
    let mut request = CallToolRequestParams::new(tool);
    request.arguments = serde_json::from_str::<Value>(params)
        .expect("JSON params")
        .as_object()
        .cloned();
    let meta: RequestMetaObject =
        serde_json::from_value(json!({ "traceparent": correlation })).expect("a _meta object");
    request.meta = Some(meta);
    let result = bounded(tool, client.call_tool(request))
        .await
        .expect("a tool result");
    mcp_json(&result)
}

/// The flags of a served leg: acme's admin at the terminal (a human, so the mutation runs),
/// its audit store `audit`, and nothing kept beyond it.
fn served_flags(audit: &str) -> Vec<&str> {
    let mut flags = ACME_ADMIN.to_vec();
    flags.extend([
        "--initiator",
        "human",
        "--audit",
        audit,
        "--approvals",
        "memory",
        "--workflows",
        "memory",
    ]);
    flags
}

/// Calls the read and the mutation through `client`, then reads the records of `audit`.
async fn mcp_leg(client: &RunningService<RoleClient, ()>, audit: &str) -> (Answer, Answer) {
    let list = mcp_call(client, LIST, WEEK, LIST_CORRELATION).await;
    let assign = mcp_call(client, ASSIGN, ASSIGN_PARAMS, ASSIGN_CORRELATION).await;
    let records = audit_records(audit).await;
    (
        Answer {
            result: list,
            record: only_record(&records, LIST, LIST_CORRELATION),
        },
        Answer {
            result: assign,
            record: only_record(&records, ASSIGN, ASSIGN_CORRELATION),
        },
    )
}

/// Leg 2: an MCP client of `serve --stdio`.
async fn over_stdio(dir: &Scratch) -> (Answer, Answer) {
    let audit = dir.store("stdio-audit.db");
    let mut args = vec!["serve", "--stdio"];
    args.extend(served_flags(&audit));
    let (_child, client) = stdio_client(&args).await;
    mcp_leg(&client, &audit).await
}

/// Leg 3: an MCP client of `serve --http`.
async fn over_http(dir: &Scratch) -> (Answer, Answer) {
    let audit = dir.store("http-audit.db");
    let mut args = vec!["serve", "--http", "127.0.0.1:0"];
    args.extend(served_flags(&audit));
    let mut child = switchboard(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stderr = stderr_lines(&mut child);
    let address = loop {
        let line = bounded("the start-up line", stderr.next_line())
            .await
            .expect("stderr is readable")
            .expect("the server printed its address");
        if let Some(address) = mcp_address(&line) {
            break address.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{address}/mcp"));
    let client = bounded("the HTTP handshake", ().serve(transport))
        .await
        .expect("the server answers initialize");
    let answers = mcp_leg(&client, &audit).await;
    drop(client);
    drop(child);
    answers
}

/// A front node A whose roster is node B, over one of the links.
trait Front {
    /// The link's name, for the messages.
    const LINK: &str;

    /// `switchboard ARGS` as node A (its config, its audit store, acme's admin): the exit
    /// code and standard output as JSON.
    async fn run(&self, args: &[&str]) -> (Option<i32>, Value);

    /// Every record of A's audit store and of B's.
    async fn records(&self) -> (Vec<Value>, Vec<Value>);

    /// `sqlite:` and a file of the front's directory.
    fn store(&self, name: &str) -> String;
}

impl Front for Fleet {
    const LINK: &str = "mcp link";

    async fn run(&self, args: &[&str]) -> (Option<i32>, Value) {
        self.on_a(args).await
    }

    async fn records(&self) -> (Vec<Value>, Vec<Value>) {
        (self.a_audit().await, self.b_audit().await)
    }

    fn store(&self, name: &str) -> String {
        self.dir.store(name)
    }
}

/// Legs 4 and 5: node A's `call`, the roster on node B.
async fn over_link<F: Front>(front: &F) -> (Answer, Answer) {
    let (code, list) = front.run(&call_args(LIST, WEEK, LIST_CORRELATION)).await;
    assert_eq!(code, Some(0), "{list}");
    let (code, assign) = front
        .run(&call_args(ASSIGN, ASSIGN_PARAMS, ASSIGN_CORRELATION))
        .await;
    assert_eq!(code, Some(0), "{assign}");
    let (on_a, on_b) = front.records().await;
    let link = F::LINK;
    (
        remote_answer(link, &list, &on_a, &on_b, LIST, LIST_CORRELATION),
        remote_answer(link, &assign, &on_a, &on_b, ASSIGN, ASSIGN_CORRELATION),
    )
}

/// The answers of one node, the baseline every leg is compared with.
async fn baseline() -> (Answer, Answer) {
    (
        in_process(LIST, WEEK, LIST_CORRELATION).await,
        in_process(ASSIGN, ASSIGN_PARAMS, ASSIGN_CORRELATION).await,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_read_and_one_mutation_answer_alike_in_process_over_stdio_http_and_the_mcp_link() {
    let (list, assign) = baseline().await;
    assert!(
        !list.result["shifts"].as_array().expect("shifts").is_empty(),
        "{:?}",
        list.result
    );
    assert_eq!(assign.result["assignee"], "mark", "{:?}", assign.result);
    assert_eq!(assign.record["action"]["event"], "executed", "{assign:?}");

    let dir = Scratch::new();
    for (leg, (leg_list, leg_assign)) in [
        ("stdio", over_stdio(&dir).await),
        ("http", over_http(&dir).await),
    ] {
        assert_same(leg, &list, &leg_list);
        assert_same(leg, &assign, &leg_assign);
    }

    let fleet = Fleet::new("2s", "1s").await;
    let _b = fleet.start_b(None).await;
    let (link_list, link_assign) = over_link(&fleet).await;
    assert_same("mcp link", &list, &link_list);
    assert_same("mcp link", &assign, &link_assign);
}

/// `ask UTTERANCE`'s words for the week the listings ask for.
const ASK_WEEK: &str = "show shifts from 2026-11-23 to 2026-11-29";
const ASK_CORRELATION: &str = "corr-extraction-ask";

/// `ask` (the command line `ask`) on one node and on `front`: both succeed, route to `tool`
/// alike and answer alike. Returns the one node's report and the front's.
async fn ask_alike<F: Front>(front: &F, ask: &[&str], tool: &str) -> (Value, Value) {
    let (code, single) = run_json(switchboard(ask).args(ACME_ADMIN)).await;
    assert_eq!(code, Some(0), "{single}");
    assert_eq!(single["route"]["tool"], tool, "{single}");
    let (code, answer) = front.run(ask).await;
    assert_eq!(code, Some(0), "{answer}");
    assert_eq!(
        answer["route"],
        single["route"],
        "{}: the same route",
        F::LINK
    );
    assert_eq!(
        answer["result"],
        single["result"],
        "{}: the same result",
        F::LINK
    );
    (single, answer)
}

/// `ask` on one node and on `front`: the same route and result, the routed call run on B with
/// a record equivalent to one node's.
async fn ask_on<F: Front>(front: &F) {
    let ask = ["ask", ASK_WEEK, "--json", "--correlation", ASK_CORRELATION];
    let (single, _) = ask_alike(front, &ask, LIST).await;
    let (_, served) = front.records().await;
    let on_b = only_record(&served, LIST, ASK_CORRELATION);
    let on_one = only_record(
        single["audit"].as_array().expect("records"),
        LIST,
        ASK_CORRELATION,
    );
    assert_eq!(
        comparable(&on_b),
        comparable(&on_one),
        "{}: ask's call on B",
        F::LINK
    );
}

/// An utterance the orchestrator routes to the mutation, with the mutation's params.
const ASK_ASSIGN: &str = "give shift acme-2026-11-23-am to mark";
const ASK_ASSIGN_CORRELATION: &str = "corr-extraction-ask-assign";

/// `ask` for the mutation on one node and on `front`: the same route and result, the mutation
/// run on B with a record equivalent to one node's, and A's record of it sharing B's action id.
async fn ask_to_assign_on<F: Front>(front: &F) {
    let ask = [
        "ask",
        ASK_ASSIGN,
        "--json",
        "--correlation",
        ASK_ASSIGN_CORRELATION,
    ];
    let (single, answer) = ask_alike(front, &ask, ASSIGN).await;
    assert_eq!(
        single["route"]["params"],
        serde_json::from_str::<Value>(ASSIGN_PARAMS).expect("JSON"),
        "{single}"
    );
    let (on_a, on_b) = front.records().await;
    let served = remote_answer(
        F::LINK,
        &answer,
        &on_a,
        &on_b,
        ASSIGN,
        ASK_ASSIGN_CORRELATION,
    );
    let on_one = only_record(
        single["audit"].as_array().expect("records"),
        ASSIGN,
        ASK_ASSIGN_CORRELATION,
    );
    assert_eq!(
        comparable(&served.record),
        comparable(&on_one),
        "{}: ask's mutation on B",
        F::LINK
    );
}

/// The correlation id of the workflow runs.
const WORKFLOW_CORRELATION: &str = "corr-extraction-workflow";

/// `workflow run` of the exported shift swap (two reads, two assignments) on one node and on
/// `front`: the same end and output, and each step's call run on B with a record equivalent to
/// A's.
async fn workflow_on<F: Front>(front: &F) {
    let workflow = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/workflows/shift_swap.yaml"
    );
    let input = r#"{"shift_a": "acme-2026-11-23-am", "shift_b": "acme-2026-11-23-pm"}"#;
    let (single_store, front_store) = (
        front.store("single-workflows.db"),
        front.store("a-workflows.db"),
    );
    let args = |store: &str| -> Vec<String> {
        [
            "workflow",
            "run",
            workflow,
            "--input",
            input,
            "--json",
            "--correlation",
            WORKFLOW_CORRELATION,
            "--workflows",
            store,
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let single_args = args(&single_store);
    let single_args: Vec<&str> = single_args.iter().map(String::as_str).collect();
    let (code, single) = run_json(switchboard(&single_args).args(ACME_ADMIN)).await;
    assert_eq!(code, Some(0), "{single}");
    let front_args = args(&front_store);
    let front_args: Vec<&str> = front_args.iter().map(String::as_str).collect();
    let (code, answer) = front.run(&front_args).await;
    assert_eq!(code, Some(0), "{answer}");
    assert_eq!(answer["state"], "completed", "{answer}");
    assert_eq!(
        answer["output"],
        single["output"],
        "{}: the same output",
        F::LINK
    );
    assert_eq!(
        answer["steps"],
        single["steps"],
        "{}: the same steps",
        F::LINK
    );
    let (on_a, on_b) = front.records().await;
    for tool in ["roster_get_shift", "roster_assign_shift"] {
        let of = |records: &[Value]| -> Vec<Value> {
            records
                .iter()
                .filter(|record| {
                    record["tool"] == tool && record["correlation_id"] == WORKFLOW_CORRELATION
                })
                .map(comparable)
                .collect()
        };
        let (steps_a, steps_b) = (of(&on_a), of(&on_b));
        assert_eq!(
            steps_b.len(),
            2,
            "{}: two {tool} steps ran on B: {on_b:?}",
            F::LINK
        );
        assert_eq!(steps_a, steps_b, "{}: {tool}: A's and B's records", F::LINK);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_and_a_workflow_on_the_front_run_their_roster_calls_on_b_over_the_mcp_link() {
    let fleet = Fleet::new("2s", "1s").await;
    let _b = fleet.start_b(None).await;
    ask_on(&fleet).await;
    workflow_on(&fleet).await;
    ask_to_assign_on(&fleet).await;
}

#[cfg(feature = "cluster")]
mod cluster {
    //! Leg 5: the same calls, `ask` and workflow on a front whose roster is node B over the
    //! cluster link.

    use serde_json::Value;

    use super::{Front, ask_on, ask_to_assign_on, assert_same, baseline, over_link, workflow_on};
    use crate::{cluster_link::ClusterPair, remote_domain::audit_records};

    impl Front for ClusterPair {
        const LINK: &str = "cluster link";

        async fn run(&self, args: &[&str]) -> (Option<i32>, Value) {
            self.on_a(args).await
        }

        async fn records(&self) -> (Vec<Value>, Vec<Value>) {
            (
                audit_records(&self.a_audit()).await,
                audit_records(&self.b_audit).await,
            )
        }

        fn store(&self, name: &str) -> String {
            ClusterPair::store(self, name)
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_read_and_one_mutation_answer_alike_over_the_cluster_link() {
        let (list, assign) = baseline().await;
        let mut pair = ClusterPair::start().await;
        let (list_leg, assign_leg) = over_link(&pair).await;
        pair.stop().await;
        assert_same("cluster link", &list, &list_leg);
        assert_same("cluster link", &assign, &assign_leg);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ask_and_a_workflow_on_the_front_run_their_roster_calls_on_b_over_the_cluster_link() {
        let mut pair = ClusterPair::start().await;
        ask_on(&pair).await;
        workflow_on(&pair).await;
        ask_to_assign_on(&pair).await;
        pair.stop().await;
    }
}

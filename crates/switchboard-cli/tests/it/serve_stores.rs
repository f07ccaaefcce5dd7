//! `serve` keeps what it must not lose in its state directory by default: its audit records
//! (`audit.db`), its proposals and idempotency keys (`approvals.db`) and its workflow runs
//! (`workflows.db`). Each test runs the real binary on a state directory of its own, stops it,
//! starts it again, and finds what the first process left: the audit records (read back with
//! `switchboard audit`), a pending proposal (approved after the restart) and a mutation's key
//! (the same call after the restart replays the first result instead of running again).

use std::{
    path::{Path, PathBuf},
    process::Stdio,
};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::{
    common::{bounded, switchboard},
    stdio_client::StdioServer,
};

/// A fresh state directory for one test, removed on drop.
struct StateDir(PathBuf);

impl StateDir {
    fn new() -> Self {
        let dir =
            std::env::temp_dir().join(format!("switchboard-serve-stores-{}", uuid::Uuid::new_v4()));
        Self(dir)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }

    /// `sqlite:DIR/FILE`, as a store flag names it.
    fn store(&self, file: &str) -> String {
        format!("sqlite:{}", self.0.join(file).display())
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `switchboard ARGS` run to its end: its exit code and standard output as JSON.
async fn run_json(args: &[&str]) -> (Option<i32>, Value) {
    let output = bounded("the command", switchboard(args).output())
        .await
        .expect("the binary runs");
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "`switchboard {}` printed no JSON ({error}): {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code(), report)
}

/// Every record of the audit store in `dir`, newest first, read by a new process.
async fn audit_records(dir: &StateDir) -> Vec<Value> {
    let store = dir.store("audit.db");
    let (code, report) = run_json(&["audit", "--audit", &store, "--json"]).await;
    assert_eq!(code, Some(0), "{report:#}");
    report.as_array().expect("an array of records").clone()
}

/// A `tools/call` of `tool` with `arguments`, in `thread` when given.
fn tools_call(id: &str, tool: &str, arguments: &Value, thread: Option<&str>) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(thread) = thread {
        params["_meta"] = json!({"switchboard/thread_id": thread});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// Calls `tool` on `server` and returns the call's result.
async fn call(
    server: &mut StdioServer,
    id: &str,
    tool: &str,
    arguments: &Value,
    thread: Option<&str>,
) -> Value {
    server.send(&tools_call(id, tool, arguments, thread)).await;
    let answer = server.answer(&json!(id)).await;
    answer["result"].clone()
}

/// Starts `serve --stdio` as alice on `dir` with `extra` flags, and initializes it.
async fn started(dir: &StateDir, extra: &[&str]) -> StdioServer {
    let mut args = vec!["--state-dir", dir.path()];
    args.extend_from_slice(extra);
    let mut server = StdioServer::start(&args);
    server.initialize().await;
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_records_of_a_stopped_server_are_read_back_after_a_restart() {
    let dir = StateDir::new();
    let mut first = started(&dir, &[]).await;
    first.whoami().await;
    first.finish().await;
    let mut second = started(&dir, &[]).await;
    second.whoami().await;
    second.finish().await;

    let records = audit_records(&dir).await;
    let calls: Vec<(&Value, &Value)> = records
        .iter()
        .map(|record| (&record["tool"], &record["user_id"]))
        .collect();
    assert_eq!(
        calls,
        [(&json!("core_get_current_user"), &json!("alice")); 2],
        "one record per call, the first server's kept: {records:#?}"
    );
    let sessions: Vec<&Value> = records.iter().map(|record| &record["session_id"]).collect();
    assert_ne!(sessions[0], sessions[1], "two processes, two sessions");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_pending_at_a_restart_is_approved_after_it() {
    let dir = StateDir::new();
    let agent = ["--initiator", "agent", "--agent-mutations", "propose"];
    let mut first = started(&dir, &agent).await;
    let shift = json!({"shift_id": "acme-2026-11-24-pm", "user_id": "sam"});
    let result = call(&mut first, "assign", "roster_assign_shift", &shift, None).await;
    let error = &result["_meta"]["switchboard/error"];
    assert_eq!(error["kind"], json!("approval_required"), "{result:#}");
    let proposal = error["proposal_id"]
        .as_str()
        .expect("the proposal's id")
        .to_owned();
    first.finish().await;
    started(&dir, &agent).await.finish().await;

    let approvals = dir.store("approvals.db");
    let manager = ["--org", "acme", "--user", "mark", "--role", "manager"];
    let mut approve = vec!["approve", &proposal, "--approvals", &approvals, "--json"];
    approve.extend_from_slice(&manager);
    let (code, approved) = run_json(&approve).await;
    assert_eq!(code, Some(0), "{approved:#}");
    assert_eq!(
        approved["approved"]["output"]["assignee"],
        json!("sam"),
        "{approved:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutation_retried_after_a_restart_replays_its_first_result_without_running() {
    let dir = StateDir::new();
    let human = ["--initiator", "human"];
    let shift = json!({"shift_id": "acme-2026-11-24-pm", "user_id": "sam"});
    let get = json!({"shift_id": "acme-2026-11-24-pm"});
    let thread = Some("chat-restart");

    let mut first = started(&dir, &human).await;
    let ran = call(&mut first, "assign", "roster_assign_shift", &shift, thread).await;
    assert_eq!(
        ran["structuredContent"]["assignee"],
        json!("sam"),
        "{ran:#}"
    );
    first.finish().await;

    // A new process starts from the seeded roster, where the shift is open.
    let mut second = started(&dir, &human).await;
    let replayed = call(&mut second, "again", "roster_assign_shift", &shift, thread).await;
    assert_eq!(
        replayed["structuredContent"], ran["structuredContent"],
        "the first run's result"
    );
    let now = call(&mut second, "get", "roster_get_shift", &get, None).await;
    assert_eq!(
        now["structuredContent"]["assignee"],
        Value::Null,
        "the tool did not run again: {now:#}"
    );
    second.finish().await;

    let records = audit_records(&dir).await;
    let actions: Vec<&Value> = records
        .iter()
        .filter(|record| record["tool"] == json!("roster_assign_shift"))
        .map(|record| &record["action"])
        .collect();
    let events: Vec<&Value> = actions.iter().map(|action| &action["event"]).collect();
    assert_eq!(
        events,
        [&json!("replayed"), &json!("executed")],
        "newest first: {records:#?}"
    );
    assert_eq!(
        actions[0]["id"], actions[1]["id"],
        "one action: {records:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_state_directory_both_work_and_both_are_audited() {
    let dir = StateDir::new();
    let mut one = started(&dir, &[]).await;
    let mut two = started(&dir, &[]).await;
    one.whoami().await;
    two.whoami().await;
    one.whoami().await;
    one.finish().await;
    two.finish().await;
    assert_eq!(audit_records(&dir).await.len(), 3);
}

/// The lines `serve --stdio` logs at start on `dir` with `extra` flags, up to the last store
/// line.
async fn start_up_lines(dir: &Path, extra: &[&str]) -> Vec<String> {
    let dir = dir.to_str().expect("a UTF-8 temp path");
    let mut args = vec![
        "serve",
        "--stdio",
        "--org",
        "acme",
        "--user",
        "alice",
        "--state-dir",
        dir,
    ];
    args.extend_from_slice(extra);
    let mut child = switchboard(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let mut lines = Vec::new();
    bounded("the start-up lines", async {
        while let Some(line) = stderr.next_line().await.expect("readable") {
            let last = line.contains("workflow runs are kept");
            lines.push(line);
            if last {
                return;
            }
        }
        panic!("the server exited before saying where its stores are: {lines:#?}");
    })
    .await;
    drop(child.stdin.take());
    let _ = bounded("the server exiting", child.wait()).await;
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_says_at_start_where_each_store_is_kept() {
    let dir = StateDir::new();
    let lines = start_up_lines(&dir.0, &[]).await;
    for (what, file) in [
        ("audit records", "audit.db"),
        ("proposals and idempotency keys", "approvals.db"),
        ("workflow runs", "workflows.db"),
    ] {
        let path = dir.0.join(file).display().to_string();
        assert!(
            lines
                .iter()
                .any(|line| line.contains(&format!("{what} are kept in {path}"))),
            "{what}: {lines:#?}"
        );
    }

    let lines = start_up_lines(&dir.0, &["--audit", "memory", "--approvals", "memory"]).await;
    for what in ["audit records", "proposals and idempotency keys"] {
        assert!(
            lines
                .iter()
                .any(|line| line.contains(&format!("{what} are kept in memory"))),
            "{what}: {lines:#?}"
        );
    }
}

//! `serve` keeps what it must not lose in its state directory by default: its audit records
//! (`audit.db`), its proposals and idempotency keys (`approvals.db`) and its workflow runs
//! (`workflows.db`). Each test runs the real binary on a state directory of its own, stops it,
//! starts it again, and finds what the first process left: the audit records (read back with
//! `switchboard audit`), a pending proposal (approved after the restart) and a mutation's key
//! (the same call after the restart replays the first result instead of running again).
//!
//! The commands a person uses to act on what a server keeps (`proposals`, `approve`, `reject`,
//! `audit`) default to the same files: given only an identity and the same `--state-dir`, they
//! list and decide the proposals an agent made through `serve`, and read its audit records. On
//! a state directory nothing was kept in, they say so and create nothing.

use std::{path::Path, process::Stdio};

use serde_json::{Value, json};

use crate::{
    common::{MARK, SAM_AGENT, StateDir, bounded, exit_of, stderr_lines, switchboard},
    stdio_client::StdioServer,
};

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

    // A new process on the same state directory: the key's first result is in approvals.db,
    // the change itself in roster.db.
    let mut second = started(&dir, &human).await;
    let replayed = call(&mut second, "again", "roster_assign_shift", &shift, thread).await;
    assert_eq!(
        replayed["structuredContent"], ran["structuredContent"],
        "the first run's result"
    );
    let now = call(&mut second, "get", "roster_get_shift", &get, None).await;
    assert_eq!(
        now["structuredContent"]["assignee"],
        json!("sam"),
        "the change outlived the restart: {now:#}"
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
    let mut stderr = stderr_lines(&mut child);
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
    exit_of("the server exiting", &mut child).await;
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

/// `switchboard COMMAND… --state-dir DIR IDENTITY`, run to its end.
async fn run_in(dir: &StateDir, command: &[&str], identity: &[&str]) -> std::process::Output {
    let mut args = command.to_vec();
    args.extend(["--state-dir", dir.path()]);
    args.extend_from_slice(identity);
    bounded("the command", switchboard(&args).output())
        .await
        .expect("the binary runs")
}

/// sam, as an agent, asks for the afternoon shift of 2026-11-24 in `dir` with a one-shot
/// call: it exits 1 with a proposal instead of running. Its JSON output.
async fn sams_proposal(dir: &StateDir) -> Value {
    let shift = r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}"#;
    let proposed = run_in(
        dir,
        &["call", "roster_assign_shift", shift, "--json"],
        &SAM_AGENT,
    )
    .await;
    assert_eq!(proposed.status.code(), Some(1), "{proposed:?}");
    json_of(&proposed)
}

/// Standard output as JSON, or the test fails showing both streams.
fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "no JSON ({error}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_an_agent_made_through_serve_is_listed_and_approved_with_identity_flags_only() {
    let dir = StateDir::new();
    let mut server = started(
        &dir,
        &["--initiator", "agent", "--agent-mutations", "propose"],
    )
    .await;
    let shift = json!({"shift_id": "acme-2026-11-24-pm", "user_id": "sam"});
    let result = call(&mut server, "assign", "roster_assign_shift", &shift, None).await;
    let error = &result["_meta"]["switchboard/error"];
    assert_eq!(error["kind"], json!("approval_required"), "{result:#}");
    let proposal = error["proposal_id"].as_str().expect("the proposal's id");

    // While the server runs: the proposal is listed, as text and as JSON.
    let listed = run_in(&dir, &["proposals"], &MARK).await;
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains(proposal) && text.contains("roster_assign_shift"),
        "{text}"
    );
    let listed = json_of(&run_in(&dir, &["proposals", "--json"], &MARK).await);
    let ids: Vec<&Value> = listed["proposals"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|proposal| &proposal["id"])
        .collect();
    assert_eq!(ids, [&json!(proposal)], "{listed:#}");

    let approved = run_in(&dir, &["approve", proposal, "--json"], &MARK).await;
    assert_eq!(approved.status.code(), Some(0), "{approved:?}");
    let approved = json_of(&approved);
    assert_eq!(
        approved["approved"]["output"]["assignee"],
        json!("sam"),
        "{approved:#}"
    );
    let again = run_in(&dir, &["approve", proposal, "--json"], &MARK).await;
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert_eq!(json_of(&again)["error"]["kind"], json!("proposal_closed"));
    server.finish().await;

    // The approved call ran once, as mark, and `audit` finds its record beside the server's.
    let audit = run_in(
        &dir,
        &["audit", "--tool", "roster_assign_shift", "--json"],
        &[],
    )
    .await;
    assert_eq!(audit.status.code(), Some(0), "{audit:?}");
    let records = json_of(&audit);
    let ran: Vec<(&Value, &Value)> = records
        .as_array()
        .expect("an array of records")
        .iter()
        .filter(|record| record["outcome"] == json!("ok"))
        .map(|record| (&record["user_id"], &record["action"]["event"]))
        .collect();
    assert_eq!(
        ran,
        [(&json!("mark"), &json!("approved"))],
        "one run, the approval's: {records:#}"
    );
    assert!(
        records
            .as_array()
            .expect("records")
            .iter()
            .any(|record| record["user_id"] == json!("alice")),
        "the server's own record of the proposal is there too: {records:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_one_shot_call_keeps_its_proposal_where_approve_finds_it() {
    let dir = StateDir::new();
    let proposed = sams_proposal(&dir).await;
    assert_eq!(proposed["error"]["kind"], json!("approval_required"));
    let proposal = proposed["error"]["proposal_id"]
        .as_str()
        .expect("the proposal's id");

    let approved = run_in(&dir, &["approve", proposal, "--json"], &MARK).await;
    assert_eq!(approved.status.code(), Some(0), "{approved:?}");
    assert_eq!(
        json_of(&approved)["approved"]["output"]["assignee"],
        json!("sam")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_state_directory_nothing_was_kept_in_the_commands_say_so_and_create_nothing() {
    let dir = StateDir::new();
    let approvals = dir.0.join("approvals.db").display().to_string();
    let audit_db = dir.0.join("audit.db").display().to_string();

    let listed = run_in(&dir, &["proposals"], &MARK).await;
    assert_eq!(listed.status.code(), Some(0), "{listed:?}");
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.starts_with(&format!("no proposals: nothing is kept in {approvals} yet")),
        "{text}"
    );
    let listed = json_of(&run_in(&dir, &["proposals", "--json"], &MARK).await);
    assert_eq!(listed, json!({"proposals": []}));

    let approved = run_in(&dir, &["approve", "prop-1"], &MARK).await;
    assert_eq!(approved.status.code(), Some(1), "{approved:?}");
    let stderr = String::from_utf8_lossy(&approved.stderr);
    assert!(stderr.starts_with("error[proposal_not_found]"), "{stderr}");
    assert!(
        stderr.contains(&format!("nothing is kept in {approvals} yet")),
        "{stderr}"
    );
    let rejected = run_in(
        &dir,
        &["reject", "prop-1", "--feedback", "no", "--json"],
        &MARK,
    )
    .await;
    assert_eq!(rejected.status.code(), Some(1), "{rejected:?}");
    assert_eq!(
        json_of(&rejected)["error"]["kind"],
        json!("proposal_not_found")
    );

    let audit = run_in(&dir, &["audit"], &[]).await;
    assert_eq!(audit.status.code(), Some(0), "{audit:?}");
    let text = String::from_utf8_lossy(&audit.stdout);
    assert!(
        text.starts_with(&format!(
            "no audit records: nothing is kept in {audit_db} yet"
        )),
        "{text}"
    );
    assert_eq!(
        json_of(&run_in(&dir, &["audit", "--json"], &[]).await),
        json!([])
    );
    let export = run_in(&dir, &["audit", "export"], &[]).await;
    assert_eq!(export.status.code(), Some(0), "{export:?}");
    assert!(export.stdout.is_empty(), "{export:?}");
    let stderr = String::from_utf8_lossy(&export.stderr);
    assert!(
        stderr.contains(&format!("nothing is kept in {audit_db} yet")),
        "{stderr}"
    );

    assert!(
        !dir.0.exists(),
        "no command created the state directory or a store in it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_and_rejecting_proposals_create_no_roster_file() {
    let dir = StateDir::new();
    let proposed = sams_proposal(&dir).await;
    let proposal = proposed["error"]["proposal_id"]
        .as_str()
        .expect("the proposal's id");
    // The agent's call may run tools, so it kept the roster beside the proposals.
    let roster = dir.0.join("roster.db");
    assert!(roster.exists(), "{}", roster.display());
    std::fs::remove_file(&roster).expect("the roster file goes");

    let listed = json_of(&run_in(&dir, &["proposals", "--json"], &MARK).await);
    assert_eq!(listed["proposals"][0]["id"], json!(proposal), "{listed:#}");
    let rejected = run_in(
        &dir,
        &["reject", proposal, "--feedback", "no", "--json"],
        &MARK,
    )
    .await;
    assert_eq!(rejected.status.code(), Some(0), "{rejected:?}");
    assert!(
        !roster.exists(),
        "`proposals` and `reject` run no tool, so they open no roster"
    );
}

//! A run survives the death of its process: `switchboard workflow run` on the SQLite stores of
//! a state directory is killed (SIGKILL, by its pid) in the middle of a run, and `workflow
//! resume` in a new process finishes it. Every mutating step that completed ran exactly once,
//! counted in the persistent audit store across both processes.
//!
//! The step killed is a `wait` node: the roster's tools answer in milliseconds, so no tool
//! step of the sample domains is slow enough to be killed in reliably; the wait is a step in
//! flight all the same (checkpointed as started, not completed). A second test kills a slow
//! *mutating* step of a mounted MCP server, whose idempotency claim was stored before the call
//! and never completed: the resumed run must not run it again, and pauses for a person,
//! saying that the step's outcome is unknown.

use std::time::Duration;

use serde_json::Value;

use crate::{
    common::{ACME_ADMIN, bounded, exit_of, killed, spawned_until},
    mounts_support::npm_bin,
    workflow_support::{MARK, TempDir, in_state, json, run_in, text, with},
};

/// A notice, a wait, two more notices, then the notices as the process that ran the last
/// steps sees them. The wait is long enough for the test to see it start (in the run's
/// `--watch` lines) and kill the run inside it.
const THREE_NOTICES: &str = r#"
workflow: three_notices
nodes:
  - id: first
    tool: roster_post_notice
    params: { text: "notice 1" }
  - id: pause
    wait: 5s
  - id: second
    tool: roster_post_notice
    params: { text: "notice 2" }
  - id: third
    tool: roster_post_notice
    params: { text: "notice 3" }
  - id: board
    tool: roster_list_notices
    params: {}
"#;

/// Starts `switchboard ARGS --watch` in `dir` and returns it once its plain `--watch` lines
/// on standard error show `event` (a node's subject and what happened, e.g. `pause#0  waiting`):
/// the run is then inside that step.
async fn run_until(dir: &TempDir, args: &[&str], event: &str) -> tokio::process::Child {
    let mut args = args.to_vec();
    args.push("--watch");
    spawned_until(&mut in_state(dir, &args), event).await
}

/// The id of the only unfinished run of acme in `dir`.
async fn unfinished_run(dir: &TempDir) -> String {
    let listed = run_in(
        dir,
        &with(&["workflow", "list", "--unfinished", "--json"], &MARK),
        0,
    )
    .await;
    let listed = json(&listed.stdout);
    let runs = listed["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{listed}");
    runs[0]["id"].as_str().expect("an id").to_owned()
}

/// The audit records of `tool` in the audit file, oldest last.
async fn audit_of(dir: &TempDir, audit: &str, tool: &str) -> Vec<Value> {
    let output = run_in(
        dir,
        &[
            "audit", "--audit", audit, "--tool", tool, "--limit", "1000", "--json",
        ],
        0,
    )
    .await;
    json(&output.stdout)
        .as_array()
        .expect("an array of records")
        .clone()
}

#[tokio::test]
async fn a_run_killed_in_the_middle_finishes_in_a_new_process_with_each_step_once() {
    let dir = TempDir::new();
    let file = dir.write("three_notices.yaml", THREE_NOTICES);
    let audit = format!("sqlite:{}", dir.join("audit.db"));
    let mut first = run_until(
        &dir,
        &with(&["workflow", "run", &file, "--audit", &audit], &MARK),
        "pause#0  waiting until",
    )
    .await;
    // SIGKILL: the process gets no chance to write anything more.
    first.start_kill().expect("the run's process is killed");
    let status = exit_of("the killed process", &mut first).await;
    assert!(!status.success(), "{status:?}");
    let run = unfinished_run(&dir).await;

    let output = run_in(
        &dir,
        &with(
            &["workflow", "resume", &run, "--audit", &audit, "--json"],
            &MARK,
        ),
        0,
    )
    .await;
    let report = json(&output.stdout);
    assert_eq!(report["state"], "completed", "{report}");

    // The audit file holds both processes' calls: each notice was posted once.
    let posted: Vec<Value> = audit_of(&dir, &audit, "roster_post_notice")
        .await
        .into_iter()
        .filter(|record| record["outcome"] == "ok")
        .collect();
    assert_eq!(posted.len(), 3, "{posted:#?}");
    let mut hashes: Vec<&str> = posted
        .iter()
        .map(|record| record["input_hash"].as_str().expect("a hash"))
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    assert_eq!(hashes.len(), 3, "three different notices: {posted:#?}");

    // The roster is kept beside the approvals file (roster.db), so the second process sees
    // every notice: the one the killed process posted and the two it posted itself, each once.
    let shown = json(
        &run_in(&dir, &with(&["workflow", "show", &run, "--json"], &MARK), 0)
            .await
            .stdout,
    );
    let board = shown["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|step| step["key"]["path"] == "board")
        .expect("the board step")["output"]["notices"]
        .as_array()
        .expect("notices")
        .iter()
        .filter_map(|notice| notice["text"].as_str())
        .filter(|text| text.starts_with("notice "))
        .map(str::to_owned)
        .collect::<Vec<_>>();
    assert_eq!(board, ["notice 1", "notice 2", "notice 3"], "{shown}");
}

#[tokio::test]
async fn a_mutating_step_in_flight_at_the_kill_is_not_run_again_and_is_reported_unknown() {
    let dir = TempDir::new();
    let mounts = dir.write(
        "mounts.toml",
        &format!(
            "[[server]]\nid = \"everything\"\ncommand = {:?}\ncategory = \"execute\"\nstart_timeout = \"60s\"\n",
            npm_bin("mcp-server-everything")
        ),
    );
    let file = dir.write(
        "slow.yaml",
        r#"
workflow: slow_mutation
nodes:
  - id: slow
    tool: everything_trigger-long-running-operation
    params: { duration: 8, steps: 8 }
"#,
    );
    let audit = format!("sqlite:{}", dir.join("audit.db"));
    let mut first = run_until(
        &dir,
        &with(
            &[
                "workflow", "run", &file, "--audit", &audit, "--mounts", &mounts,
            ],
            &ACME_ADMIN,
        ),
        "slow#0  started",
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    killed(&mut first).await;
    let run = unfinished_run(&dir).await;

    // The killed process's lease on the run expires first (10 s): `resume` waits for it.
    let output = bounded(
        "workflow resume",
        in_state(
            &dir,
            &with(
                &[
                    "workflow", "resume", &run, "--audit", &audit, "--mounts", &mounts, "--json",
                ],
                &ACME_ADMIN,
            ),
        )
        .output(),
    )
    .await
    .expect("the binary runs");
    let report = json(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(4),
        "a step whose outcome is unknown pauses the run for a person: {report}\n{}",
        text(&output.stderr)
    );
    assert_eq!(report["state"], "paused", "{report}");
    assert!(
        report.to_string().contains("outcome_unknown"),
        "the report says the step's outcome is unknown: {report}"
    );
    let ran: Vec<Value> = audit_of(&dir, &audit, "everything_trigger-long-running-operation")
        .await
        .into_iter()
        .filter(|record| record["outcome"] == "ok")
        .collect();
    assert!(
        ran.is_empty(),
        "the slow mutation was not run again: {ran:#?}"
    );
}

//! Approvals and replays across processes, end to end: separate runs of the real binary on
//! one approvals database (`--approvals sqlite:PATH`) and one audit database. An agent's call
//! stored as a proposal by one process is listed and approved by another (it runs once), and
//! approving it again from a third is refused; a mutation retried with the same
//! `--idempotency-key` in a new process returns the first result and action without running
//! the tool; an approvals database the binary cannot use stops it with a usage error.
//!
//! Each process boots its own roster with the sample data, so the audit trail (one `executed`
//! or `approved` record per action) is what proves a tool ran once.

use std::path::{Path, PathBuf};

use crate::common::{MARK, SAM_AGENT, bounded, switchboard};
use serde_json::{Value, json};

const ASSIGN: &str = r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}"#;

/// A fresh directory for this test's databases.
fn scratch_dir(test: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "switchboard-approvals-{test}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The `--approvals` and `--audit` flags of every process of a test.
struct Stores {
    approvals: String,
    audit: String,
}

impl Stores {
    fn in_dir(dir: &Path) -> Self {
        Self {
            approvals: format!("sqlite:{}", dir.join("approvals.db").display()),
            audit: format!("sqlite:{}", dir.join("audit.db").display()),
        }
    }

    /// Runs `switchboard ARGS --approvals … --audit … IDENTITY`; returns the exit code, stdout
    /// as JSON (`Null` if empty) and stderr.
    async fn run(&self, args: &[&str], identity: &[&str]) -> (Option<i32>, Value, String) {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--approvals", &self.approvals, "--audit", &self.audit]);
        all.extend(identity);
        let output = bounded(&format!("switchboard {args:?}"), switchboard(&all).output())
            .await
            .expect("the binary runs");
        let stdout = if output.stdout.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
                panic!(
                    "stdout is not JSON ({error}): {}",
                    String::from_utf8_lossy(&output.stdout)
                )
            })
        };
        (
            output.status.code(),
            stdout,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Every audit record of `action_id`, oldest first: `(event, outcome)`.
    async fn action_story(&self, action_id: &str) -> Vec<(String, String)> {
        let output = bounded(
            "audit export",
            switchboard(&["audit", "export", "--audit", &self.audit]).output(),
        )
        .await
        .expect("the binary runs");
        assert!(output.status.success(), "audit export failed: {output:?}");
        let mut story: Vec<(String, String)> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("a record per line"))
            .filter(|record| record["action"]["id"] == action_id)
            .map(|record| {
                (
                    record["action"]["event"].as_str().unwrap_or("?").to_owned(),
                    record["outcome"].as_str().unwrap_or("?").to_owned(),
                )
            })
            .collect();
        story.reverse();
        story
    }
}

fn pair(event: &str, outcome: &str) -> (String, String) {
    (event.to_owned(), outcome.to_owned())
}

#[tokio::test]
async fn a_proposal_stored_by_one_process_is_approved_by_another_and_runs_once() {
    let dir = scratch_dir("approve");
    let stores = Stores::in_dir(&dir);

    // Process 1: an agent's mutation is stored as a proposal.
    let (code, report, stderr) = stores
        .run(
            &["call", "roster_assign_shift", ASSIGN, "--json"],
            &SAM_AGENT,
        )
        .await;
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(report["error"]["kind"], "approval_required", "{report}");
    let proposal_id = report["error"]["proposal_id"]
        .as_str()
        .expect("the proposal's id")
        .to_owned();

    // Process 2: a manager lists it and approves it; the tool runs, as the manager.
    let (code, listed, stderr) = stores.run(&["proposals", "--json"], &MARK).await;
    assert_eq!(code, Some(0), "{stderr}");
    let proposals = listed["proposals"].as_array().expect("a list");
    assert_eq!(proposals.len(), 1, "{listed}");
    assert_eq!(proposals[0]["id"], proposal_id.as_str());
    assert_eq!(proposals[0]["status"], "pending");
    let (code, approved, stderr) = stores
        .run(&["approve", &proposal_id, "--json"], &MARK)
        .await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(approved["approved"]["proposal"]["status"], "approved");
    assert_eq!(approved["approved"]["proposal"]["outcome"], "ok");
    assert_eq!(approved["approved"]["output"]["assignee"], "sam");

    // Process 3: approving again is refused; another org does not even see it.
    let (code, again, _) = stores
        .run(&["approve", &proposal_id, "--json"], &MARK)
        .await;
    assert_eq!(code, Some(1));
    assert_eq!(again["error"]["kind"], "proposal_closed", "{again}");
    assert_eq!(again["error"]["status"], "approved");
    let (code, globex, _) = stores
        .run(
            &["proposals", "--json"],
            &["--org", "globex", "--user", "hank", "--role", "manager"],
        )
        .await;
    assert_eq!(code, Some(0));
    assert_eq!(globex["proposals"], json!([]));

    // Process 4 reads the roster the approval changed: it is kept beside the approvals file
    // (`roster.db`), not in each process's memory, where the seeded shift is still open.
    let shift_id =
        json!({"shift_id": serde_json::from_str::<Value>(ASSIGN).expect("JSON")["shift_id"]});
    let (code, shift, stderr) = stores
        .run(
            &["call", "roster_get_shift", &shift_id.to_string(), "--json"],
            &MARK,
        )
        .await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(shift["result"]["assignee"], "sam", "{shift}");
    assert!(dir.join("roster.db").exists());

    // The whole story, linked by the proposal's id: the agent's call (answered
    // `approval_required`), one run, one refusal.
    assert_eq!(
        stores.action_story(&proposal_id).await,
        [
            pair("proposed", "approval_required"),
            pair("approved", "ok"),
            pair("approved", "proposal_closed"),
        ]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_mutation_retried_by_another_process_replays_its_first_result_without_running() {
    let dir = scratch_dir("replay");
    let stores = Stores::in_dir(&dir);
    let call = [
        "call",
        "roster_assign_shift",
        ASSIGN,
        "--json",
        "--idempotency-key",
        "assign-tue",
    ];

    let (code, first, stderr) = stores.run(&call, &MARK).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(first["audit"][0]["action"]["event"], "executed");
    let action_id = first["audit"][0]["action"]["id"]
        .as_str()
        .expect("the action's id")
        .to_owned();

    let (code, retry, stderr) = stores.run(&call, &MARK).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        retry["result"], first["result"],
        "the first result, as it was"
    );
    assert_eq!(retry["audit"][0]["action"]["event"], "replayed");
    assert_eq!(retry["audit"][0]["action"]["id"], action_id.as_str());

    // A person sees it too, without `--json`.
    let mut human: Vec<&str> = call
        .iter()
        .copied()
        .filter(|arg| *arg != "--json")
        .collect();
    human.extend(["--approvals", &stores.approvals, "--audit", &stores.audit]);
    human.extend(MARK);
    let output = bounded("a human retry", switchboard(&human).output())
        .await
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "replayed: the first run's result (action {action_id}); the tool did not run again"
        )),
        "{stdout}"
    );

    // The same key for other params names another action: refused, nothing runs.
    let other = [
        "call",
        "roster_assign_shift",
        r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "mark"}"#,
        "--json",
        "--idempotency-key",
        "assign-tue",
    ];
    let (code, conflict, _) = stores.run(&other, &MARK).await;
    assert_eq!(code, Some(1));
    assert_eq!(
        conflict["error"]["kind"], "idempotency_conflict",
        "{conflict}"
    );

    assert_eq!(
        stores.action_story(&action_id).await,
        [
            pair("executed", "ok"),
            pair("replayed", "ok"),
            pair("replayed", "ok")
        ],
        "the tool ran once, in the first process"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn an_unusable_approvals_database_stops_the_command_with_a_usage_error() {
    let dir = scratch_dir("unusable");
    let garbage = dir.join("garbage.db");
    let bytes = vec![0x5a_u8; 8_192];
    std::fs::write(&garbage, &bytes).expect("garbage written");
    let store = format!("sqlite:{}", garbage.display());
    let output = bounded(
        "call with a garbage approvals database",
        switchboard(&["call", "core_get_current_user", "--approvals", &store])
            .args(MARK)
            .output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "nothing ran");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("approvals store"), "{stderr}");
    assert!(stderr.contains(&garbage.display().to_string()), "{stderr}");
    assert_eq!(std::fs::read(&garbage).expect("still there"), bytes);

    // The same from the config file: a missing directory is named.
    let config = dir.join("switchboard.toml");
    let missing = dir.join("no-such-dir").join("approvals.db");
    std::fs::write(
        &config,
        format!("[approvals]\nstore = \"sqlite:{}\"\n", missing.display()),
    )
    .expect("config written");
    let config = config.display().to_string();
    let output = bounded(
        "call with a config naming a missing directory",
        switchboard(&["call", "core_get_current_user", "--config", &config])
            .args(MARK)
            .output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no-such-dir"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

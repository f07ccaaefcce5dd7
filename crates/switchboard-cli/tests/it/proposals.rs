//! The approval commands of the `switchboard` binary (`proposals`, `approve`, `reject`) and the
//! execution-context flags (`--agent-type`, `--thread`, `--project`, `--idempotency-key`), run
//! as a script would. The proposal store is in memory by default, so a fresh process has no
//! proposals (`approvals_durability.rs` covers `--approvals sqlite:PATH`).

use assert_cmd::{Command, cargo::cargo_bin_cmd};
use serde_json::Value;

fn switchboard() -> Command {
    let mut command = cargo_bin_cmd!("switchboard");
    for variable in [
        "SWITCHBOARD_ORG",
        "SWITCHBOARD_USER",
        "SWITCHBOARD_ROLE",
        "SWITCHBOARD_INITIATOR",
        "SWITCHBOARD_AGENT_TYPE",
        "SWITCHBOARD_APPROVALS",
        "SWITCHBOARD_AGENT_MUTATIONS",
        "SWITCHBOARD_CONFIG",
        "RUST_LOG",
    ] {
        command.env_remove(variable);
    }
    command
}

const MARK: [&str; 6] = ["--org", "acme", "--user", "mark", "--role", "manager"];

fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

#[test]
fn a_new_process_has_no_proposals() {
    let output = switchboard()
        .arg("proposals")
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("no proposals"), "{stdout}");
    let output = switchboard()
        .args(["proposals", "--json"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(json_of(&output)["proposals"], serde_json::json!([]));
}

#[test]
fn approving_or_rejecting_an_unknown_proposal_is_proposal_not_found() {
    let output = switchboard()
        .args(["approve", "prop-unknown", "--json"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(json_of(&output)["error"]["kind"], "proposal_not_found");
    let output = switchboard()
        .args(["reject", "prop-unknown", "--feedback", "no"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The same form as a refused `call`: `error[kind]: reason`, then what to do.
    assert!(
        stderr.starts_with("error[proposal_not_found]: no proposal `prop-unknown`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("what to do: list the pending proposals"),
        "{stderr}"
    );
}

#[test]
fn reject_needs_feedback() {
    let output = switchboard()
        .args(["reject", "prop-1"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2), "a usage error");
}

#[test]
fn a_locked_week_is_refused_by_the_roster_gate() {
    let output = switchboard()
        .args([
            "call",
            "roster_assign_shift",
            r#"{"shift_id": "acme-2026-11-20-pm", "user_id": "sam"}"#,
            "--json",
        ])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    let report = json_of(&output);
    assert_eq!(report["error"]["kind"], "gate_refused");
    assert_eq!(report["error"]["code"], "week_locked");
}

#[test]
fn context_flags_reach_the_runtime() {
    // The thread is opened for the caller in this process, so the ownership check (which
    // refuses a thread nobody opened with `thread_not_owned`) lets the call through.
    let output = switchboard()
        .args(["call", "core_get_current_user", "--json", "--thread", "t1"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(json_of(&output)["result"]["user_id"], "mark");
    // An idempotency key is recorded as the action of the mutation it names.
    let output = switchboard()
        .args([
            "call",
            "roster_assign_shift",
            r#"{"shift_id": "acme-2026-11-23-pm", "user_id": "sam"}"#,
            "--json",
            "--idempotency-key",
            "assign-once",
            "--agent-type",
            "planner",
        ])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = json_of(&output);
    assert_eq!(report["audit"][0]["action"]["event"], "executed");
}

//! The approval commands of the `switchboard` binary (`proposals`, `approve`, `reject`) and the
//! execution-context flags (`--agent-type`, `--thread`, `--project`, `--idempotency-key`), run
//! as a script would. The approval commands read the state directory's `approvals.db` by
//! default; each test here has a fresh state directory, where nothing is kept, or names the
//! in-memory store (`serve_stores.rs` covers deciding what a `serve` keeps,
//! `approvals_durability.rs` covers `--approvals sqlite:PATH`).

use assert_cmd::{Command, cargo::cargo_bin_cmd};
use serde_json::Value;

use crate::common::{MARK, StateDir};

/// The binary with nothing inherited from the environment that could change what it does, on
/// `state`.
fn switchboard_in(state: &StateDir) -> Command {
    let mut command = cargo_bin_cmd!("switchboard");
    for variable in [
        "SWITCHBOARD_ORG",
        "SWITCHBOARD_USER",
        "SWITCHBOARD_ROLE",
        "SWITCHBOARD_INITIATOR",
        "SWITCHBOARD_AGENT_TYPE",
        "SWITCHBOARD_AUDIT",
        "SWITCHBOARD_APPROVALS",
        "SWITCHBOARD_AGENT_MUTATIONS",
        "SWITCHBOARD_CONFIG",
        "RUST_LOG",
    ] {
        command.env_remove(variable);
    }
    command.env("SWITCHBOARD_STATE_DIR", &state.0);
    command
}

fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

#[test]
fn the_in_memory_store_of_a_new_process_has_no_proposals() {
    let state = StateDir::new();
    let output = switchboard_in(&state)
        .args(["proposals", "--approvals", "memory"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("no proposals (the proposal store is in memory"),
        "{stdout}"
    );
    assert!(stdout.contains("approvals.db"), "{stdout}");
    let output = switchboard_in(&state)
        .args(["proposals", "--json", "--approvals", "memory"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(json_of(&output)["proposals"], serde_json::json!([]));
}

#[test]
fn approving_or_rejecting_an_unknown_proposal_is_proposal_not_found() {
    let state = StateDir::new();
    let output = switchboard_in(&state)
        .args(["approve", "prop-unknown", "--json", "--approvals", "memory"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(json_of(&output)["error"]["kind"], "proposal_not_found");
    let output = switchboard_in(&state)
        .args([
            "reject",
            "prop-unknown",
            "--feedback",
            "no",
            "--approvals",
            "memory",
        ])
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
    let output = switchboard_in(&StateDir::new())
        .args(["reject", "prop-1"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2), "a usage error");
}

#[test]
fn a_locked_week_is_refused_by_the_roster_gate() {
    let output = switchboard_in(&StateDir::new())
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
    let state = StateDir::new();
    // The thread is opened for the caller in this process, so the ownership check (which
    // refuses a thread nobody opened with `thread_not_owned`) lets the call through.
    let output = switchboard_in(&state)
        .args(["call", "core_get_current_user", "--json", "--thread", "t1"])
        .args(MARK)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(json_of(&output)["result"]["user_id"], "mark");
    // An idempotency key is recorded as the action of the mutation it names.
    let output = switchboard_in(&state)
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

//! `switchboard navigate URL` and `switchboard act URL ACTION`, run as the real binary: the
//! roster's pages as markdown and JSON, an action a manager runs, what an agent and a member of
//! staff get instead, and an unknown URL. Each process boots freshly seeded data.

use std::process::Output;

use assert_cmd::{Command, cargo::cargo_bin_cmd};
use serde_json::{Value, json};

use crate::common::{ACME_ADMIN, test_state_dir};

/// An open shift: `claim` and `assign` are offered there.
const OPEN_SHIFT: &str = "/roster/shifts/acme-2026-11-24-pm";
/// A shift sam works: `propose_swap` is offered there.
const WORKED_SHIFT: &str = "/roster/shifts/acme-2026-11-23-am";

const MANAGER: [&str; 6] = ["--org", "acme", "--user", "mark", "--role", "manager"];
const STAFF: [&str; 6] = ["--org", "acme", "--user", "sam", "--role", "staff"];
/// Fixed ids, so that JSON snapshots hold no minted ones.
const IDS: [&str; 4] = ["--session", "s-nav", "--correlation", "c-nav"];

/// The binary with nothing inherited that could change what it does. Its proposals and keys
/// are kept in memory (an agent's `act` would keep them in the state directory, and the ids
/// fixed here would meet those of another run there), in the test binary's state directory.
fn switchboard() -> Command {
    let mut command = cargo_bin_cmd!("switchboard");
    for variable in [
        "SWITCHBOARD_ORG",
        "SWITCHBOARD_USER",
        "SWITCHBOARD_ROLE",
        "SWITCHBOARD_INITIATOR",
        "SWITCHBOARD_AUDIT",
        "SWITCHBOARD_AGENT_MUTATIONS",
        "SWITCHBOARD_CONFIG",
        "FORCE_COLOR",
        "CLICOLOR_FORCE",
        "RUST_LOG",
    ] {
        command.env_remove(variable);
    }
    command.env("SWITCHBOARD_APPROVALS", "memory");
    command.env("SWITCHBOARD_STATE_DIR", test_state_dir());
    command
}

/// Runs `head`, then `identity`, then `tail`; checks the exit code.
fn run(head: &[&str], identity: &[&str], tail: &[&str], code: i32) -> Output {
    let args: Vec<&str> = head.iter().chain(identity).chain(tail).copied().collect();
    let output = switchboard().args(&args).output().expect("the binary runs");
    assert_eq!(
        output.status.code(),
        Some(code),
        "`switchboard {}` exited with {:?}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    output
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not one JSON value ({error}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The tools of `report`'s audit records, oldest first, with their outcomes.
fn audited(report: &Value) -> Vec<(String, String)> {
    report["audit"]
        .as_array()
        .expect("an audit array")
        .iter()
        .map(|record| {
            (
                record["tool"].as_str().unwrap_or_default().to_owned(),
                record["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(tool, outcome)| ((*tool).to_owned(), (*outcome).to_owned()))
        .collect()
}

#[test]
fn navigate_prints_an_open_shift_as_markdown_with_the_managers_actions() {
    let output = run(&["navigate", OPEN_SHIFT], &MANAGER, &[], 0);
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
    insta::assert_snapshot!("navigate_open_shift_markdown", text(&output.stdout));
}

#[test]
fn navigate_json_is_the_page_with_its_version_and_audit_records() {
    let mut report = json_of(&run(
        &["navigate", OPEN_SHIFT],
        &MANAGER,
        &[&IDS[..], &["--json"]].concat(),
        0,
    ));
    assert_eq!(
        audited(&report),
        pairs(&[("roster_get_shift", "ok")]),
        "{report:#}"
    );
    for record in report["audit"].as_array_mut().expect("an audit array") {
        for volatile in ["timestamp", "duration_us"] {
            assert!(!record[volatile].is_null(), "{volatile} is recorded");
            record[volatile] = json!("[masked]");
        }
    }
    insta::assert_json_snapshot!("navigate_open_shift_json", report);
}

#[test]
fn a_manager_assigns_an_open_shift_and_gets_the_page_it_leads_to() {
    let report = json_of(&run(
        &["act", OPEN_SHIFT, "assign", "--param", "user_id=sam"],
        &MANAGER,
        &["--json"],
        0,
    ));
    let outcome = &report["outcome"];
    assert_eq!(outcome["tool"], json!("roster_assign_shift"), "{report:#}");
    assert_eq!(outcome["result"]["assignee"], json!("sam"), "{report:#}");
    assert_eq!(outcome["next_url"], json!(OPEN_SHIFT));
    let offered: Vec<&Value> = outcome["next"]["actions"]
        .as_array()
        .expect("the next page's actions")
        .iter()
        .map(|action| &action["name"])
        .collect();
    assert_eq!(
        offered,
        [&json!("propose_swap")],
        "a worked shift: {report:#}"
    );
    assert_eq!(
        audited(&report),
        pairs(&[
            ("roster_get_shift", "ok"),
            ("roster_assign_shift", "ok"),
            ("roster_get_shift", "ok"),
        ]),
        "the page, the action, the page it leads to"
    );

    // The same action as text, params as PARAMS_JSON: the result, the next page, the records.
    let output = run(
        &["act", OPEN_SHIFT, "assign", r#"{"user_id": "sam"}"#],
        &MANAGER,
        &[],
        0,
    );
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with("assign ok (roster_assign_shift)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("next: {OPEN_SHIFT}\n\n# Shift\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains("- **Worked by:** [sam](/roster/users/sam)"),
        "{stdout}"
    );
    assert!(stdout.contains("roster_assign_shift  ok"), "{stdout}");
}

#[test]
fn an_agents_change_becomes_a_proposal_and_a_restricted_one_is_refused() {
    let agent = [&MANAGER[..], &["--initiator", "agent"]].concat();
    let report = json_of(&run(
        &["act", OPEN_SHIFT, "assign", "--param", "user_id=sam"],
        &agent,
        &["--json"],
        0,
    ));
    let outcome = &report["outcome"];
    let proposal = outcome["proposal"]["id"].as_str().expect("a proposal");
    assert_eq!(
        outcome["proposal"]["status"],
        json!("pending"),
        "{report:#}"
    );
    assert_eq!(outcome["next_url"], json!(format!("/proposals/{proposal}")));
    assert_eq!(
        outcome["next"]["actions"],
        json!([]),
        "an agent never decides: {report:#}"
    );

    let admin_agent = [&ACME_ADMIN[..], &["--initiator", "agent"]].concat();
    let refused = json_of(&run(
        &["act", "/roster/weeks/2026-11-23", "clear_week"],
        &admin_agent,
        &["--json"],
        1,
    ));
    assert_eq!(
        refused["error"]["kind"],
        json!("gate_refused"),
        "{refused:#}"
    );
    assert_eq!(refused["error"]["code"], json!("action_unavailable"));
    assert_eq!(
        audited(&refused).last(),
        Some(&("roster_clear_roster".to_owned(), "gate_refused".to_owned())),
        "the refusal is audited: {refused:#}"
    );
}

#[test]
fn staff_without_the_permission_are_refused_with_what_is_offered() {
    let refused = json_of(&run(
        &["act", OPEN_SHIFT, "assign", "--param", "user_id=sam"],
        &STAFF,
        &["--json"],
        1,
    ));
    assert_eq!(
        refused["error"]["kind"],
        json!("gate_refused"),
        "{refused:#}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("available there: `claim`")),
        "{refused:#}"
    );
    assert_eq!(
        audited(&refused),
        pairs(&[
            ("roster_get_shift", "ok"),
            ("roster_assign_shift", "gate_refused")
        ])
    );

    let output = run(
        &["act", OPEN_SHIFT, "assign", "--param", "user_id=sam"],
        &STAFF,
        &[],
        1,
    );
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(stderr.starts_with("error[gate_refused]: "), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "what to do: see the actions offered to you there: switchboard navigate {OPEN_SHIFT}"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("roster_assign_shift  gate_refused"),
        "{stderr}"
    );
}

#[test]
fn an_action_on_a_page_that_changed_since_is_refused_naming_what_changed() {
    let worked = json_of(&run(&["navigate", WORKED_SHIFT], &STAFF, &["--json"], 0));
    let stale = worked["page"]["version"].as_str().expect("a version");
    let refused = json_of(&run(
        &["act", OPEN_SHIFT, "claim", "--page-version", stale],
        &STAFF,
        &["--json"],
        1,
    ));
    assert_eq!(
        refused["error"]["kind"],
        json!("page_changed"),
        "{refused:#}"
    );
    assert!(
        refused["error"]["changed"]
            .as_array()
            .is_some_and(|changed| !changed.is_empty()),
        "{refused:#}"
    );
}

#[test]
fn an_unknown_url_names_the_nearest_pages() {
    let refused = json_of(&run(&["navigate", "/rostr"], &STAFF, &["--json"], 1));
    assert_eq!(
        refused["error"]["kind"],
        json!("no_such_page"),
        "{refused:#}"
    );
    let nearest = refused["error"]["nearest"].as_array().expect("nearest");
    assert!(nearest.contains(&json!("/roster")), "{refused:#}");

    let output = run(&["navigate", "/rostr"], &STAFF, &[], 1);
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("error[no_such_page]: no page is at \"/rostr\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("what to do: see the pages you can reach: switchboard navigate /"),
        "{stderr}"
    );

    let bad = run(
        &["act", OPEN_SHIFT, "assign", "--param", "user_id"],
        &STAFF,
        &[],
        2,
    );
    assert!(
        text(&bad.stderr).contains("NAME=TEXT or NAME:=JSON"),
        "{}",
        text(&bad.stderr)
    );
}

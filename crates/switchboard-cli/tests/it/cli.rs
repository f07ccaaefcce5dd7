//! End-to-end tests of the `switchboard` binary: each test runs the real executable, as a script
//! would, and checks its standard output, standard error and exit code.
//!
//! The sample domains (`core`, `roster`) are linked into the binary, so every error kind the
//! runtime can produce from a command line is reachable here. Each process boots its own
//! runtime with freshly seeded data, so tests do not see each other's writes.

use std::process::Output;

use assert_cmd::{Command, cargo::cargo_bin_cmd};
use serde_json::{Value, json};

use crate::common::{ACME_ADMIN, catalog_tool_names, test_state_dir};

// The refusals live in their own file (`cli/refusals.rs`) to keep each under the line budget.
mod prompts;
mod refusals;

/// The domains whose tool definitions the `tools --json` snapshot pins.
const SNAPSHOT_DOMAINS: [&str; 2] = ["core", "roster"];

/// The binary, with no identity or colour settings inherited from the environment, its
/// proposals and keys in memory (an agent's `call` would keep them in the state directory) and
/// the test binary's state directory, never the user's.
fn switchboard() -> Command {
    let mut command = cargo_bin_cmd!("switchboard");
    for variable in [
        "SWITCHBOARD_ORG",
        "SWITCHBOARD_USER",
        "SWITCHBOARD_ROLE",
        "SWITCHBOARD_INITIATOR",
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

/// Runs with `args`, checks the exit code, and returns the output.
fn run(args: &[&str], code: i32) -> Output {
    let output = switchboard().args(args).output().expect("the binary runs");
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

/// Standard output parsed as exactly one JSON value.
fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not one JSON value ({error}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Runs a `--json` command that must succeed, and returns its object.
fn ok_json(args: &[&str]) -> Value {
    let report = json_of(&run(args, 0));
    assert!(report.get("error").is_none(), "{report:#}");
    report
}

/// Runs a `--json` command that must be refused with `kind`, and returns its object. Checks
/// that the refusal was audited with that kind, once.
fn refused(args: &[&str], kind: &str) -> Value {
    let report = json_of(&run(args, 1));
    assert_eq!(report["error"]["kind"], kind, "{report:#}");
    assert!(report["error"]["message"].is_string(), "{report:#}");
    assert!(report.get("result").is_none(), "{report:#}");
    let audit = report["audit"].as_array().expect("audit is an array");
    assert_eq!(audit.len(), 1, "{report:#}");
    assert_eq!(audit[0]["outcome"], kind, "{report:#}");
    report
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

const ACME_MANAGER: [&str; 6] = ["--org", "acme", "--user", "mark", "--role", "manager"];
const ACME_STAFF: [&str; 6] = ["--org", "acme", "--user", "sam", "--role", "staff"];

fn with<'a>(head: &[&'a str], identity: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(identity).chain(tail).copied().collect()
}

// ---- tools and schema ----

#[test]
fn tools_prints_a_table_of_every_catalog_tool() {
    let stdout = stdout_of(&run(&["tools"], 0));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{stdout}");
    for header in ["DOMAIN", "CATEGORY", "PERMISSION", "DESCRIPTION"] {
        assert!(lines[0].contains(header), "{stdout}");
    }
    for name in catalog_tool_names() {
        assert!(
            lines.iter().any(|line| line.starts_with(&name)),
            "{name} missing:\n{stdout}"
        );
    }
    let clear = lines
        .iter()
        .find(|line| line.starts_with("roster_clear_roster"))
        .expect("listed");
    assert!(clear.contains("restricted") && clear.contains("roster.roster.clear"));
    // No escape codes when standard output is not a terminal.
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
}

#[test]
fn tools_shows_where_each_domain_runs_and_its_health() {
    let stdout = stdout_of(&run(&["tools"], 0));
    let header = stdout
        .lines()
        .position(|line| line.starts_with("DOMAIN") && line.contains("PLACEMENT"))
        .unwrap_or_else(|| panic!("a domains table:\n{stdout}"));
    let domains: Vec<Vec<&str>> = stdout
        .lines()
        .skip(header)
        .map(|line| line.split_whitespace().collect())
        .collect();

    assert_eq!(domains[0], ["DOMAIN", "PLACEMENT", "HEALTH"], "{stdout}");
    for domain in ["core", "roster", "workflows"] {
        assert!(
            domains.contains(&vec![domain, "in-process", "running"]),
            "{domain}:\n{stdout}"
        );
    }
    let tools = json_of(&run(&["tools", "--json"], 0));
    let shifts = tools
        .as_array()
        .expect("an array")
        .iter()
        .find(|tool| tool["name"] == "roster_list_shifts")
        .expect("listed");
    assert_eq!(shifts["placement"], "in-process", "{shifts}");
    assert_eq!(shifts["health"], "running", "{shifts}");
    assert!(shifts.get("location").is_none(), "{shifts}");
}

#[test]
fn tools_json_is_an_array_with_every_field_sorted_by_name() {
    let tools = json_of(&run(&["tools", "--json"], 0));
    let tools = tools.as_array().expect("an array");
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().expect("name"))
        .collect();
    // The catalog sorts by domain, then name.
    let mut catalog = catalog_tool_names();
    catalog.sort();
    assert_eq!(names, catalog, "`tools --json` lists the catalog's tools");
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    let me = &tools[names
        .iter()
        .position(|name| *name == "core_get_current_user")
        .expect("listed")];
    assert_eq!(me["domain"], "core");
    assert_eq!(me["category"], "read");
    assert_eq!(me["permission"], "core.users.read");
    assert!(me["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert!(
        me["intents"]
            .as_array()
            .expect("intents")
            .contains(&json!("who am i"))
    );
}

#[test]
fn tools_json_snapshot() {
    let tools = json_of(&run(&["tools", "--json"], 0));
    let sample: Vec<&Value> = tools
        .as_array()
        .expect("an array")
        .iter()
        .filter(|tool| SNAPSHOT_DOMAINS.contains(&tool["domain"].as_str().unwrap_or_default()))
        .collect();
    insta::assert_json_snapshot!("tools_json", sample);
}

#[test]
fn schema_defaults_to_the_mcp_shape() {
    let tool = json_of(&run(&["schema", "roster_list_shifts"], 0));
    assert_eq!(tool["name"], "roster_list_shifts");
    assert!(tool["description"].is_string());
    assert_eq!(tool["inputSchema"]["type"], "object");
    assert!(tool["inputSchema"]["properties"]["from"].is_object());
    assert!(tool["outputSchema"].is_object());
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(tool["_meta"]["switchboard/category"], "read");
    let explicit = json_of(&run(
        &["schema", "roster_list_shifts", "--format", "mcp"],
        0,
    ));
    assert_eq!(explicit, tool);
}

#[test]
fn schema_prints_the_anthropic_shape() {
    let tool = json_of(&run(
        &["schema", "roster_clear_roster", "--format", "anthropic"],
        0,
    ));
    let keys: Vec<&String> = tool.as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["description", "input_schema", "name"]);
    assert_eq!(tool["name"], "roster_clear_roster");
    assert_eq!(tool["input_schema"]["type"], "object");
    assert!(tool["input_schema"].get("$schema").is_none());
    assert_eq!(tool["input_schema"]["required"], json!(["week_start"]));
}

#[test]
fn schema_of_an_unknown_tool_is_tool_not_found_with_suggestions() {
    let output = run(&["schema", "roster_list_shift"], 1);
    assert!(output.stdout.is_empty());
    let stderr = stderr_of(&output);
    assert!(stderr.contains("error[tool_not_found]"), "{stderr}");
    assert!(
        stderr.contains("did you mean roster_list_shifts"),
        "{stderr}"
    );
    assert!(stderr.contains("switchboard tools"), "{stderr}");
}

// ---- call: success ----

#[test]
fn call_prints_the_result_and_its_one_audit_record() {
    let args = with(
        &["call", "core_get_current_user"],
        &ACME_ADMIN,
        &["--correlation", "corr-42", "--json"],
    );
    let report = ok_json(&args);
    assert_eq!(report["result"]["user_id"], "alice");
    assert_eq!(report["result"]["org_id"], "acme");
    assert_eq!(report["result"]["name"], "Alice Archer");
    let audit = report["audit"].as_array().expect("audit");
    assert_eq!(audit.len(), 1, "{report:#}");
    assert_eq!(audit[0]["outcome"], "ok");
    assert_eq!(audit[0]["correlation_id"], "corr-42");
    assert_eq!(audit[0]["tool"], "core_get_current_user");
    assert_eq!(audit[0]["initiator"], "human");
    assert!(report.get("route").is_none());
}

#[test]
fn call_json_snapshot_with_volatile_fields_masked() {
    let args = with(
        &["call", "core_get_current_user"],
        &ACME_ADMIN,
        &["--session", "s-1", "--correlation", "c-1", "--json"],
    );
    let mut report = ok_json(&args);
    let record = &mut report["audit"][0];
    for volatile in ["timestamp", "duration_us"] {
        assert!(!record[volatile].is_null(), "{volatile} is recorded");
        record[volatile] = json!("[masked]");
    }
    insta::assert_json_snapshot!("call_json", report);
}

#[test]
fn call_mints_session_and_correlation_ids() {
    let report = ok_json(&with(
        &["call", "core_get_current_user"],
        &ACME_ADMIN,
        &["--json"],
    ));
    let record = &report["audit"][0];
    let correlation = record["correlation_id"].as_str().expect("correlation");
    let session = record["session_id"].as_str().expect("session");
    assert!(
        correlation.starts_with("cli-") && correlation.len() == 40,
        "{correlation}"
    );
    assert!(session.starts_with("cli-"), "{session}");
    assert_ne!(correlation, session);
}

#[test]
fn call_without_params_defaults_to_an_empty_object() {
    let explicit = ok_json(&with(
        &["call", "core_get_current_user", "{}"],
        &ACME_ADMIN,
        &["--json"],
    ));
    let implicit = ok_json(&with(
        &["call", "core_get_current_user"],
        &ACME_ADMIN,
        &["--json"],
    ));
    assert_eq!(
        explicit["audit"][0]["input_hash"],
        implicit["audit"][0]["input_hash"]
    );
}

#[test]
fn call_reads_params_from_stdin() {
    let args = with(
        &["call", "roster_list_shifts", "-"],
        &ACME_STAFF,
        &["--json"],
    );
    let output = switchboard()
        .args(&args)
        .write_stdin(r#"{"from": "2026-11-23", "to": "2026-11-23"}"#)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json_of(&output);
    assert_eq!(report["result"]["shifts"].as_array().map(Vec::len), Some(2));
}

#[test]
fn manager_human_assigns_a_shift() {
    let report = ok_json(&with(
        &[
            "call",
            "roster_assign_shift",
            r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}"#,
        ],
        &ACME_MANAGER,
        &["--json"],
    ));
    assert_eq!(report["result"]["id"], "acme-2026-11-24-pm");
    assert_eq!(report["result"]["assignee"], "sam");
    assert_eq!(report["result"]["org_id"], "acme");
    assert_eq!(report["audit"][0]["category"], "execute");
    assert_eq!(report["audit"][0]["outcome"], "ok");
}

#[test]
fn admin_human_clears_a_week_with_confirm() {
    let report = ok_json(&with(
        &[
            "call",
            "roster_clear_roster",
            r#"{"week_start": "2026-11-23"}"#,
        ],
        &ACME_ADMIN,
        &["--confirm", "--json"],
    ));
    assert_eq!(report["result"]["org_id"], "acme");
    assert_eq!(report["result"]["week_start"], "2026-11-23");
    assert!(
        report["result"]["cleared"].as_u64().is_some_and(|n| n > 0),
        "{report:#}"
    );
    assert_eq!(report["audit"][0]["category"], "restricted");
}

// ---- identity from the environment ----

#[test]
fn identity_comes_from_environment_variables() {
    let output = switchboard()
        .args(["call", "core_get_current_user", "--json"])
        .env("SWITCHBOARD_ORG", "globex")
        .env("SWITCHBOARD_USER", "gina")
        .env("SWITCHBOARD_ROLE", "admin,staff")
        .env("SWITCHBOARD_INITIATOR", "agent")
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json_of(&output);
    assert_eq!(report["result"]["org_id"], "globex");
    assert_eq!(report["result"]["user_id"], "gina");
    assert_eq!(report["result"]["roles"], json!(["admin", "staff"]));
    assert_eq!(report["audit"][0]["initiator"], "agent");
}

#[test]
fn flags_override_environment_variables() {
    let output = switchboard()
        .args([
            "call",
            "core_get_current_user",
            "--json",
            "--org",
            "acme",
            "--role",
            "staff",
        ])
        .env("SWITCHBOARD_ORG", "globex")
        .env("SWITCHBOARD_USER", "sam")
        .env("SWITCHBOARD_ROLE", "admin")
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let report = json_of(&output);
    assert_eq!(report["result"]["org_id"], "acme");
    assert_eq!(report["result"]["roles"], json!(["staff"]));
}

// ---- ask ----

#[test]
fn ask_who_am_i_routes_at_tier_1_for_free() {
    let report = ok_json(&with(&["ask", "who am I?"], &ACME_STAFF, &["--json"]));
    assert_eq!(report["route"]["tool"], "core_get_current_user");
    assert_eq!(report["route"]["tier"], 1);
    assert_eq!(report["route"]["cost"].as_f64(), Some(0.0));
    assert_eq!(report["route"]["intent"], "who am i");
    assert_eq!(report["result"]["user_id"], "sam");
    assert_eq!(report["audit"].as_array().map(Vec::len), Some(1));
    assert_eq!(report["audit"][0]["outcome"], "ok");
}

#[test]
fn ask_for_shifts_returns_only_the_callers_organisation() {
    let report = ok_json(&with(
        &["ask", "shifts from 2026-11-23 to 2026-11-24"],
        &ACME_STAFF,
        &["--json"],
    ));
    assert_eq!(report["route"]["tool"], "roster_list_shifts");
    assert_eq!(
        report["route"]["params"],
        json!({"from": "2026-11-23", "to": "2026-11-24"})
    );
    let shifts = report["result"]["shifts"].as_array().expect("shifts");
    assert_eq!(shifts.len(), 4, "{report:#}");
    for shift in shifts {
        assert_eq!(shift["org_id"], "acme", "{shift}");
    }
}

#[test]
fn ask_for_open_shifts_sets_open_only_and_lists_only_unassigned_shifts() {
    let report = ok_json(&with(
        &["ask", "list open shifts from 2026-11-23 to 2026-11-25"],
        &ACME_ADMIN,
        &["--json"],
    ));
    assert_eq!(report["route"]["tool"], "roster_list_shifts");
    assert_eq!(
        report["route"]["params"],
        json!({"from": "2026-11-23", "to": "2026-11-25", "open_only": true})
    );
    let ids: Vec<&str> = report["result"]["shifts"]
        .as_array()
        .expect("shifts")
        .iter()
        .filter_map(|shift| shift["id"].as_str())
        .collect();
    assert_eq!(ids, ["acme-2026-11-24-pm"], "{report:#}");
}

#[test]
fn ask_with_no_route_lists_the_closest_intents() {
    let output = run(
        &with(&["ask", "what shifts are there"], &ACME_ADMIN, &["--json"]),
        1,
    );
    let report = json_of(&output);
    assert_eq!(report["error"]["kind"], "no_route");
    assert_eq!(report["error"]["utterance"], "what shifts are there");
    let closest = report["error"]["closest"].as_array().expect("closest");
    assert_eq!(closest[0]["tool"], "roster_list_shifts");
    assert!(closest[0]["intent"].is_string() && closest[0]["example"].is_string());
    assert_eq!(report["error"]["did_you_mean"], "list shifts this week");
    assert_eq!(report["audit"], json!([]));
    assert!(report.get("route").is_none());

    // Words no tool mentions get no suggestions, and no guess.
    let report = json_of(&run(
        &with(&["ask", "please fire everyone"], &ACME_ADMIN, &["--json"]),
        1,
    ));
    assert_eq!(report["error"]["closest"], json!([]));
    assert_eq!(report["error"]["did_you_mean"], json!(null));
}

#[test]
fn ask_says_did_you_mean_when_one_tool_is_clearly_meant() {
    let stderr = stderr_of(&run(
        &with(&["ask", "what shifts are there"], &ACME_ADMIN, &[]),
        1,
    ));
    assert!(
        stderr.contains(
            "error[no_route]: no tool matches \"what shifts are there\"; did you mean \"list \
             shifts this week\"?"
        ),
        "{stderr}"
    );
}

#[test]
fn ask_that_routes_but_is_refused_reports_the_route() {
    let report = json_of(&run(
        &with(
            &["ask", "assign shift acme-2026-11-24-pm to sam"],
            &ACME_STAFF,
            &["--json"],
        ),
        1,
    ));
    assert_eq!(report["error"]["kind"], "permission_denied");
    assert_eq!(report["route"]["tool"], "roster_assign_shift");
    assert_eq!(report["route"]["params"]["user_id"], "sam");
    // Reading "sam" as a user read the caller's directory, as the caller, on the record.
    assert_eq!(report["audit"][0]["tool"], "core_list_users");
    assert_eq!(report["audit"][0]["outcome"], "ok");
    assert_eq!(report["audit"][1]["tool"], "roster_assign_shift");
    assert_eq!(report["audit"][1]["outcome"], "permission_denied");
}

// ---- human output ----

#[test]
fn human_success_prints_the_result_and_the_audit_table() {
    let output = run(
        &with(
            &["call", "core_get_current_user"],
            &ACME_ADMIN,
            &["--correlation", "c-7"],
        ),
        0,
    );
    let stdout = stdout_of(&output);
    assert!(stdout.contains("\"user_id\": \"alice\""), "{stdout}");
    assert!(stdout.contains("audit (correlation c-7):"), "{stdout}");
    assert!(stdout.contains("OUTCOME"), "{stdout}");
    assert!(stdout.contains("core_get_current_user  ok"), "{stdout}");
    assert!(stderr_of(&output).is_empty());
}

#[test]
fn human_errors_go_to_stderr_with_kind_reason_and_what_to_do() {
    let output = run(
        &with(
            &[
                "call",
                "roster_assign_shift",
                r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}"#,
            ],
            &ACME_STAFF,
            &[],
        ),
        1,
    );
    assert!(output.stdout.is_empty(), "{}", stdout_of(&output));
    let stderr = stderr_of(&output);
    assert!(stderr.contains("error[permission_denied]"), "{stderr}");
    assert!(
        stderr.contains("needs permission `roster.shifts.assign`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "what to do: pass a --role that grants roster.shifts.assign (roles granting it: admin, manager)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("permission_denied"), "{stderr}");
}

#[test]
fn human_hints_for_each_refusal() {
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec!["call", "core_get_current_user"],
            "pass --org and --user (or set SWITCHBOARD_ORG / SWITCHBOARD_USER)",
        ),
        (
            with(
                &[
                    "call",
                    "roster_assign_shift",
                    r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}"#,
                ],
                &ACME_MANAGER,
                &["--initiator", "agent"],
            ),
            "run it as a human: --initiator human",
        ),
        (
            with(
                &[
                    "call",
                    "roster_clear_roster",
                    r#"{"week_start": "2026-11-23"}"#,
                ],
                &ACME_ADMIN,
                &[],
            ),
            "confirm it: --initiator human --confirm",
        ),
        (
            with(&["call", "core_get_user"], &ACME_ADMIN, &[]),
            "did you mean core_get_current_user",
        ),
        (
            with(&["ask", "show me shifts for bob"], &ACME_ADMIN, &[]),
            "rephrase it as one of the intents above",
        ),
    ];
    for (args, hint) in cases {
        let stderr = stderr_of(&run(&args, 1));
        assert!(stderr.contains("what to do:"), "{args:?}: {stderr}");
        assert!(stderr.contains(hint), "{args:?}: {stderr}");
    }
}

#[test]
fn human_invalid_input_lists_each_field_error_on_its_own_line() {
    let stderr = stderr_of(&run(
        &with(
            &[
                "call",
                "roster_list_shifts",
                r#"{"from": "2026-13-01", "to": "soon"}"#,
            ],
            &ACME_STAFF,
            &[],
        ),
        1,
    ));
    assert!(
        stderr.contains("error[invalid_input]: invalid input for `roster_list_shifts`:"),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|line| line.trim_start().starts_with("/from:")),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|line| line.trim_start().starts_with("/to:")),
        "{stderr}"
    );
    assert!(
        stderr.contains("switchboard schema roster_list_shifts"),
        "{stderr}"
    );
}

#[test]
fn help_documents_the_identity_flags_and_the_default_initiator() {
    let stdout = stdout_of(&run(&["call", "--help"], 0));
    for text in [
        "--org",
        "SWITCHBOARD_ORG",
        "SWITCHBOARD_ROLE",
        "SWITCHBOARD_INITIATOR",
        "--confirm",
        "A person typing a command is a human",
        "[default: human]",
        "--correlation",
    ] {
        assert!(stdout.contains(text), "`{text}` missing from:\n{stdout}");
    }
}

/// The flags that choose the permission matrix and the stores: only the commands that call tools
/// take them, and `audit` the store and the config file.
const STORE_FLAGS: [&str; 8] = [
    "--permissions",
    "--config",
    "--audit ",
    "--audit-durability",
    "--audit-when-full",
    "--audit-retention",
    "--approvals",
    "--agent-mutations",
];

/// The flags `switchboard ARGS --help` lists (the lines that define one), of `STORE_FLAGS`.
fn store_flags_in_help(args: &[&str]) -> Vec<&'static str> {
    let mut args = args.to_vec();
    args.push("--help");
    let help = stdout_of(&run(&args, 0));
    STORE_FLAGS
        .into_iter()
        .filter(|flag| help.lines().any(|line| line.trim_start().starts_with(flag)))
        .collect()
}

#[test]
fn each_command_s_help_lists_only_the_flags_it_uses() {
    for command in [&["schema"][..], &[]] {
        assert_eq!(
            store_flags_in_help(command),
            [] as [&str; 0],
            "switchboard {command:?} --help"
        );
    }
    // `tools` reads the config file for its remote domains, and no store.
    assert_eq!(store_flags_in_help(&["tools"]), ["--config"]);
    for command in [
        &["call"][..],
        &["ask"],
        &["serve"],
        &["proposals"],
        &["approve"],
        &["reject"],
    ] {
        assert_eq!(
            store_flags_in_help(command),
            STORE_FLAGS,
            "switchboard {command:?} --help"
        );
    }
    for command in [&["audit"][..], &["audit", "export"]] {
        assert_eq!(
            store_flags_in_help(command),
            ["--config", "--audit "],
            "switchboard {command:?} --help"
        );
    }
    let refusal = stderr_of(&run(&["tools", "--audit", "memory"], 2));
    assert!(
        refusal.contains("unexpected argument '--audit'"),
        "{refusal}"
    );
}

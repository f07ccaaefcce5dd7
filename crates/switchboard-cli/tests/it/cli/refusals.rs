//! The refusals of `switchboard`: every error kind the sample tools can produce from a
//! command line (as `--json`, exit code 1), the usage errors (exit code 2), and tenant
//! isolation seen from the outside.

use predicates::prelude::*;
use serde_json::{Value, json};

use super::{
    ACME_ADMIN, ACME_MANAGER, ACME_STAFF, json_of, ok_json, refused, run, stderr_of, switchboard,
    with,
};

// ---- call: every error kind, as JSON, exit code 1 ----

#[test]
fn unknown_tool_is_tool_not_found_with_suggestions() {
    let report = refused(
        &with(&["call", "core_get_user"], &ACME_ADMIN, &["--json"]),
        "tool_not_found",
    );
    assert!(
        report["error"]["suggestions"]
            .as_array()
            .expect("suggestions")
            .contains(&json!("core_get_current_user"))
    );
}

#[test]
fn no_org_is_missing_context_and_the_cli_invents_none() {
    let report = refused(
        &[
            "call",
            "core_get_current_user",
            "--user",
            "alice",
            "--role",
            "admin",
            "--json",
        ],
        "missing_context",
    );
    assert_eq!(report["error"]["fields"], json!(["org_id"]));
    assert_eq!(report["audit"][0]["org_id"], Value::Null);
    let report = refused(
        &["call", "core_get_current_user", "--json"],
        "missing_context",
    );
    assert_eq!(report["error"]["fields"], json!(["org_id", "user_id"]));
}

#[test]
fn org_id_in_params_is_refused() {
    let report = refused(
        &with(
            &["call", "core_get_current_user", r#"{"org_id": "globex"}"#],
            &ACME_ADMIN,
            &["--json"],
        ),
        "org_id_not_allowed",
    );
    assert_eq!(report["error"]["path"], "/org_id");
}

#[test]
fn reversed_range_is_invalid_input() {
    let report = refused(
        &with(
            &[
                "call",
                "roster_list_shifts",
                r#"{"from": "2026-11-24", "to": "2026-11-23"}"#,
            ],
            &ACME_STAFF,
            &["--json"],
        ),
        "invalid_input",
    );
    let errors = report["error"]["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{report:#}");
    assert!(
        errors[0]["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("is before")),
        "{report:#}"
    );
}

#[test]
fn bad_dates_are_invalid_input_listing_every_error() {
    let report = refused(
        &with(
            &[
                "call",
                "roster_list_shifts",
                r#"{"from": "2026-13-01", "to": "soon"}"#,
            ],
            &ACME_STAFF,
            &["--json"],
        ),
        "invalid_input",
    );
    let paths: Vec<&str> = report["error"]["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|error| error["path"].as_str().expect("path"))
        .collect();
    assert!(
        paths.contains(&"/from") && paths.contains(&"/to"),
        "{report:#}"
    );
}

#[test]
fn agent_initiated_execute_is_category_denied() {
    let report = refused(
        &with(
            &[
                "call",
                "roster_assign_shift",
                r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}"#,
            ],
            &ACME_MANAGER,
            &["--initiator", "agent", "--json"],
        ),
        "category_denied",
    );
    assert_eq!(report["error"]["category"], "execute");
    assert_eq!(report["error"]["initiator"], "agent");
}

#[test]
fn restricted_without_confirm_is_category_denied() {
    let report = refused(
        &with(
            &[
                "call",
                "roster_clear_roster",
                r#"{"week_start": "2026-11-23"}"#,
            ],
            &ACME_ADMIN,
            &["--json"],
        ),
        "category_denied",
    );
    assert_eq!(report["error"]["category"], "restricted");
    assert_eq!(report["error"]["initiator"], "human");
}

#[test]
fn staff_assigning_is_permission_denied() {
    let report = refused(
        &with(
            &[
                "call",
                "roster_assign_shift",
                r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}"#,
            ],
            &ACME_STAFF,
            &["--json"],
        ),
        "permission_denied",
    );
    assert_eq!(report["error"]["permission"], "roster.shifts.assign");
    assert_eq!(report["error"]["roles"], json!(["staff"]));
}

#[test]
fn assigning_a_missing_shift_is_tool_failed() {
    let report = refused(
        &with(
            &[
                "call",
                "roster_assign_shift",
                r#"{"shift_id": "acme-1999-01-01-am", "user_id": "sam"}"#,
            ],
            &ACME_MANAGER,
            &["--json"],
        ),
        "tool_failed",
    );
    assert_eq!(report["error"]["code"], "shift_not_found");
}

// ---- usage errors: exit code 2 ----

#[test]
fn params_that_are_not_json_are_a_usage_error() {
    let output = run(
        &with(
            &["call", "roster_list_shifts", "{from: 2026-11-23}"],
            &ACME_STAFF,
            &["--json"],
        ),
        2,
    );
    // Under `--json`, the usage error is the JSON failure object on standard output.
    let stderr = stderr_of(&output);
    assert!(stderr.is_empty(), "{stderr}");
    let report = json_of(&output);
    assert_eq!(report["error"]["kind"], "usage_error", "{report}");
    let message = report["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("PARAMS_JSON is not valid JSON"),
        "{message}"
    );
    assert!(message.contains("line 1, column 2"), "{message}");
}

#[test]
fn empty_stdin_params_are_a_usage_error() {
    switchboard()
        .args(with(&["call", "roster_list_shifts", "-"], &ACME_STAFF, &[]))
        .write_stdin("")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("standard input is empty"));
}

#[test]
fn a_missing_or_invalid_permission_file_is_a_usage_error() {
    switchboard()
        .args(with(
            &["call", "core_get_current_user"],
            &ACME_ADMIN,
            &["--permissions", "/nonexistent/switchboard-permissions.toml"],
        ))
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(
            "cannot read the permission file /nonexistent/switchboard-permissions.toml",
        ));
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("invalid-permissions.toml");
    std::fs::write(&path, "[roles]\nstaff = [\"roster..x\"]\n").expect("writes the file");
    switchboard()
        .args(["proposals", "--permissions"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "invalid permission pattern `roster..x`",
        ));
}

#[test]
fn a_permission_file_replaces_the_built_in_matrix() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("staff-assigns.toml");
    std::fs::write(
        &path,
        "[roles]\nstaff = [\"roster.shifts.*\", \"core.users.read\"]\n",
    )
    .expect("writes the file");
    let path = path.to_str().expect("a UTF-8 path");
    let report = ok_json(&with(
        &[
            "call",
            "roster_assign_shift",
            r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}"#,
        ],
        &ACME_STAFF,
        &["--json", "--permissions", path],
    ));
    assert_eq!(report["result"]["assignee"], "sam");
    // `admin` is not in this file, so it grants nothing.
    refused(
        &with(
            &["call", "core_get_current_user"],
            &ACME_ADMIN,
            &["--json", "--permissions", path],
        ),
        "permission_denied",
    );
}

#[test]
fn an_unknown_initiator_is_a_usage_error() {
    switchboard()
        .args(with(
            &["call", "core_get_current_user"],
            &ACME_ADMIN,
            &["--initiator", "robot"],
        ))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("robot"));
}

// ---- tenant isolation ----

#[test]
fn an_acme_user_never_sees_a_globex_shift() {
    let week = r#"{"from": "2026-11-23", "to": "2026-11-29"}"#;
    for (org, user) in [("acme", "sam"), ("globex", "sue")] {
        let report = ok_json(&[
            "call",
            "roster_list_shifts",
            week,
            "--org",
            org,
            "--user",
            user,
            "--role",
            "staff",
            "--json",
        ]);
        let shifts = report["result"]["shifts"].as_array().expect("shifts");
        assert_eq!(shifts.len(), 14, "{report:#}");
        for shift in shifts {
            assert_eq!(shift["org_id"], org, "{shift}");
            assert!(
                shift["id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with(&format!("{org}-"))),
                "{shift}"
            );
        }
    }
    // Another organisation's shift id is simply not found.
    let report = refused(
        &with(
            &[
                "call",
                "roster_assign_shift",
                r#"{"shift_id": "globex-2026-11-24-pm", "user_id": "sam"}"#,
            ],
            &ACME_MANAGER,
            &["--json"],
        ),
        "tool_failed",
    );
    assert_eq!(report["error"]["code"], "shift_not_found");
}

#[test]
fn a_role_nobody_grants_anything_gets_a_did_you_mean() {
    let output = run(
        &[
            "call",
            "roster_list_shifts",
            r#"{"from": "2026-11-23", "to": "2026-11-24"}"#,
            "--org",
            "acme",
            "--user",
            "sam",
            "--role",
            "staf",
        ],
        1,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("error[permission_denied]"), "{stderr}");
    assert!(
        stderr.contains("`staf` is not a role the permission matrix knows: did you mean `staff`?"),
        "{stderr}"
    );
}

//! `switchboard prompts` and `switchboard prompt NAME --arg NAME=VALUE`: the roster's
//! plan-next-week prompt listed, rendered as a caller, and refused as the registry refuses it.

use super::{ACME_MANAGER, ACME_STAFF, json_of, ok_json, run, stderr_of, stdout_of, with};

#[test]
fn prompts_prints_a_table_with_the_arguments_and_json_with_their_details() {
    let table = stdout_of(&run(&["prompts"], 0));
    let line = table
        .lines()
        .find(|line| line.starts_with("roster_plan_next_week "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.ends_with("position, week_start*"), "{line}");
    // The conformance suite's prompts are served only by `serve --conformance`.
    assert!(!table.contains("test_simple_prompt"), "{table}");

    let listed = json_of(&run(&["prompts", "--json"], 0));
    let plan = listed
        .as_array()
        .and_then(|prompts| {
            prompts
                .iter()
                .find(|prompt| prompt["name"] == "roster_plan_next_week")
        })
        .unwrap_or_else(|| panic!("{listed:#}"));
    assert_eq!(plan["permission"], "roster.shifts.read");
    assert_eq!(plan["arguments"][1]["name"], "week_start");
    assert_eq!(plan["arguments"][1]["required"], true);
}

#[test]
fn prompt_prints_the_rendered_messages_for_the_caller() {
    let printed = stdout_of(&run(
        &with(
            &[
                "prompt",
                "roster_plan_next_week",
                "--arg",
                "week_start=2026-11-23",
            ],
            &ACME_STAFF,
            &[],
        ),
        0,
    ));
    assert!(
        printed.starts_with("[user]\nPlan the roster of acme"),
        "{printed}"
    );
    assert!(printed.contains("acme-2026-11-24-pm"), "{printed}");
    assert!(printed.contains("`roster_claim_shift`"), "{printed}");

    let report = ok_json(&with(
        &[
            "prompt",
            "roster_plan_next_week",
            "--arg",
            "week_start=2026-11-23",
            "--arg",
            "position=front desk",
            "--json",
        ],
        &ACME_MANAGER,
        &[],
    ));
    let messages = report["result"]["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"]["type"], "text");
}

#[test]
fn prompt_refusals_name_what_is_wrong() {
    let missing = json_of(&run(
        &with(
            &["prompt", "roster_plan_next_week", "--json"],
            &ACME_STAFF,
            &[],
        ),
        1,
    ));
    assert_eq!(missing["error"]["kind"], "missing_argument", "{missing:#}");
    let bad_date = json_of(&run(
        &with(
            &[
                "prompt",
                "roster_plan_next_week",
                "--arg",
                "week_start=soon",
                "--json",
            ],
            &ACME_STAFF,
            &[],
        ),
        1,
    ));
    assert_eq!(
        bad_date["error"]["kind"], "invalid_argument",
        "{bad_date:#}"
    );
    let denied = stderr_of(&run(
        &[
            "prompt",
            "roster_plan_next_week",
            "--arg",
            "week_start=2026-11-23",
            "--org",
            "acme",
            "--user",
            "sam",
            "--role",
            "viewer",
        ],
        1,
    ));
    assert!(denied.contains("refused (permission_denied)"), "{denied}");
    let unknown = stderr_of(&run(
        &with(&["prompt", "roster_plan_next_weak"], &ACME_STAFF, &[]),
        1,
    ));
    assert!(
        unknown.contains("did you mean `roster_plan_next_week`"),
        "{unknown}"
    );
    let usage = stderr_of(&run(
        &with(
            &["prompt", "roster_plan_next_week", "--arg", "week_start"],
            &ACME_STAFF,
            &[],
        ),
        2,
    ));
    assert!(usage.contains("NAME=VALUE"), "{usage}");
}

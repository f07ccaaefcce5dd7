//! What a run says when it cannot check what it was asked to: a missing organisation, a skip
//! or an example naming a tool the registry does not list, a seed call that fails. Each is a
//! failed run with the reason, never a silent pass.

use serde_json::json;
use switchboard_registry::ToolRegistry;
use switchboard_testing::{Invariant, ToolChecks};

use crate::fixtures::FIXTURE_DOMAINS;

async fn registry() -> ToolRegistry {
    let mut builder = ToolRegistry::builder();
    for fixture in FIXTURE_DOMAINS {
        builder = builder.exclude_domain(fixture);
    }
    builder.start().await.expect("the registry starts")
}

#[tokio::test]
async fn a_run_without_two_organisations_fails_and_says_how_to_give_them() {
    let registry = registry().await;
    let report = ToolChecks::new(&registry).run().await;
    assert!(!report.passed());
    assert!(
        report.to_string().contains(".orgs(home, other)"),
        "{report}"
    );
    let same = ToolChecks::new(&registry).orgs("acme", "acme").run().await;
    assert!(!same.passed(), "{same}");
}

#[tokio::test]
async fn options_that_name_an_unlisted_tool_fail_the_run_with_a_suggestion() {
    let registry = registry().await;
    let report = ToolChecks::new(&registry)
        .orgs("acme", "globex")
        .skip_for("roster_list_shift", Invariant::NoPanic, "a typo")
        .example("core_get_curent_user", json!({}))
        .skip_tool("core_list_users", "covered elsewhere")
        .skip_tool("core_get_current_user", "covered elsewhere")
        .cases(1)
        .run()
        .await;
    assert!(!report.passed(), "{report}");
    let text = report.to_string();
    assert!(text.contains("a skip names `roster_list_shift`"), "{text}");
    assert!(
        text.contains("did you mean `roster_list_shifts`?"),
        "{text}"
    );
    assert!(
        text.contains("an example names `core_get_curent_user`"),
        "{text}"
    );
    assert!(text.contains("covered elsewhere"), "{text}");
}

#[tokio::test]
async fn a_failing_seed_call_fails_the_run_with_the_error() {
    let registry = registry().await;
    let report = ToolChecks::new(&registry)
        .orgs("acme", "globex")
        .seed("acme", "roster_add_member", json!({ "user_id": "" }))
        .seed("initech", "core_list_users", json!({}))
        .cases(1)
        .run()
        .await;
    assert!(!report.passed(), "{report}");
    let text = report.to_string();
    assert!(
        text.contains("the seed call `roster_add_member`") && text.contains("invalid"),
        "{text}"
    );
    assert!(
        text.contains("`initech`, which is not one of the run's two"),
        "{text}"
    );
}

#[tokio::test]
async fn a_seed_call_puts_data_in_place_before_the_checks_look_for_its_marker() {
    let registry = registry().await;
    let report = ToolChecks::new(&registry)
        .orgs("acme", "globex")
        .seed(
            "globex",
            "core_add_member",
            json!({ "user_id": "zed", "name": "Zed Quill", "roles": ["staff"] }),
        )
        .marker("globex", "Zed Quill")
        .cases(4)
        .run()
        .await;
    report.assert_passed();
    // The seed ran as a person of globex: its directory now lists the marker's owner.
    let context = switchboard_core::CallContext::builder()
        .org("globex")
        .user("gina")
        .role("admin")
        .session("options")
        .correlation("options-seed")
        .initiator(switchboard_core::Initiator::Human)
        .build();
    let users = registry
        .invoke("core_list_users", json!({}), &context)
        .await
        .expect("globex lists its users");
    assert!(users.to_string().contains("Zed Quill"), "{users}");
}

#[tokio::test]
async fn a_tool_no_generated_input_reaches_is_named_until_an_example_reaches_it() {
    let registry = registry().await;
    let unreached = |report: &switchboard_testing::Report, tool: &str| {
        report
            .unreached
            .iter()
            .any(|hint| hint.contains(&format!("`{tool}`")))
    };
    let report = ToolChecks::new(&registry)
        .orgs("acme", "globex")
        .cases(4)
        .run()
        .await;
    report.assert_passed();
    assert!(unreached(&report, "roster_get_shift"), "{report}");
    assert!(!unreached(&report, "core_list_users"), "{report}");
    assert!(report.to_string().contains("not reached:"), "{report}");

    let report = ToolChecks::new(&registry)
        .orgs("acme", "globex")
        .example(
            "roster_get_shift",
            json!({ "shift_id": "acme-2026-11-23-am" }),
        )
        .cases(4)
        .run()
        .await;
    report.assert_passed();
    assert!(!unreached(&report, "roster_get_shift"), "{report}");
}

#[tokio::test]
async fn only_domain_checks_that_domains_tools_and_names_a_domain_without_any() {
    let registry = registry().await;
    let report = ToolChecks::new(&registry)
        .orgs("acme", "globex")
        .only_domain("core")
        .cases(4)
        .run()
        .await;
    report.assert_passed();
    let core_tools = registry.list_by_domain("core").len();
    assert!(core_tools > 0);
    assert_eq!(report.tools, core_tools, "{report}");

    let report = ToolChecks::new(&registry)
        .orgs("acme", "globex")
        .only_domain("rooster")
        .run()
        .await;
    assert!(!report.passed(), "{report}");
    assert!(
        report
            .to_string()
            .contains("`rooster`, a domain with no tool"),
        "{report}"
    );
}

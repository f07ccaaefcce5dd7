//! Guards every promise the conformance kit checks, on every linked tool.
//!
//! Architecture Invariant: every linked tool keeps Switchboard's promises, as
//! the conformance kit (`switchboard::testing::ToolChecks`) checks them: the organisation only from the context (no
//! `org_id` property in a schema; params that carry one, at any depth and in any spelling,
//! refused before the tool runs; the other organisation's id in a read tool's string fields
//! gets none of its data), one audit record per call, input the schema refuses refused at its
//! field, no panic, read tools change nothing, an agent's mutation refused or proposed and
//! never run, one run per idempotency key, no organisation's data in another's answers, and
//! documented errors with messages.
//!
//! The kit derives its cases from each tool's schema, category and permission, so a new tool
//! is covered the moment it is linked. The roster's store and the directory's state are the
//! probes; each organisation's people and positions are its markers.

use std::sync::Arc;

use architecture_tests::calls::{HOME_ADMIN, HOME_ORG, OTHER_ORG};
use serde_json::{Value, json};
use switchboard::{AgentMutations, RegistryConfig, ToolRegistry};
use switchboard_domain_directory::Directory;
use switchboard_domain_roster::{MemoryRosterStore, Roster, RosterState};
use switchboard_testing::{Org, Report, ToolChecks};

/// The admin of [`OTHER_ORG`] in the sample data.
const OTHER_ADMIN: &str = "gina";

/// The roster's whole book, by organisation, as a value to compare.
fn roster_book(store: &MemoryRosterStore) -> Value {
    let parts = store
        .snapshot()
        .into_parts()
        .map(|(org, part)| {
            let part =
                serde_json::to_value(&*part).unwrap_or_else(|error| json!(error.to_string()));
            (org.to_string(), part)
        })
        .collect();
    Value::Object(parts)
}

/// Runs the kit on every linked tool, on a registry with `config`.
async fn checked(config: RegistryConfig) -> Report {
    let store = Arc::new(MemoryRosterStore::seeded());
    // The MCP conformance suite's reference tools are protocol fixtures, not a domain of
    // business data: one sleeps as long as its input asks, one always panics.
    let registry = ToolRegistry::builder()
        .config(config)
        .domain_state::<Roster>(RosterState::new(Arc::clone(&store) as _))
        .exclude_domain("conformance")
        .start()
        .await
        .expect("the registry starts");
    let probe = Arc::clone(&store);
    let report = ToolChecks::new(&registry)
        .orgs(
            Org::new(HOME_ORG).user(HOME_ADMIN),
            Org::new(OTHER_ORG).user(OTHER_ADMIN),
        )
        .state("roster", move || std::future::ready(roster_book(&probe)))
        .domain::<Directory>()
        .marker(HOME_ORG, "Alice Archer")
        .marker(HOME_ORG, "front desk")
        .marker(OTHER_ORG, "Gina Gold")
        .marker(OTHER_ORG, "dispatch")
        .example(
            "roster_get_shift",
            json!({ "shift_id": "acme-2026-11-23-am" }),
        )
        .example(
            "roster_get_shift",
            json!({ "shift_id": "globex-2026-11-23-am" }),
        )
        .example(
            "roster_list_shifts",
            json!({ "from": "2026-11-23", "to": "2026-11-29" }),
        )
        .example(
            "roster_assign_shift",
            json!({ "shift_id": "acme-2026-11-24-pm", "user_id": "sam" }),
        )
        .example(
            "roster_claim_shift",
            json!({ "shift_id": "acme-2026-11-28-am" }),
        )
        .run()
        .await;
    registry.shutdown().await;
    report
}

#[tokio::test]
async fn every_linked_tool_keeps_every_promise_when_agents_are_refused() {
    let report = checked(RegistryConfig::default()).await;
    report.assert_passed();
    assert!(report.tools >= 13, "every sample tool is checked: {report}");
}

#[tokio::test]
async fn every_linked_tool_keeps_every_promise_when_agents_propose() {
    let config = RegistryConfig {
        agent_mutations: AgentMutations::Propose,
        ..RegistryConfig::default()
    };
    checked(config).await.assert_passed();
}

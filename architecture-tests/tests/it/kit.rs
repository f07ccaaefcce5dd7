//! Guards every promise the conformance kit checks, on every sample tool.
//!
//! Architecture Invariant: every linked tool keeps Switchboard's promises, as the conformance
//! kit (`switchboard::testing::ToolChecks`) checks them: the organisation only from the context
//! (no `org_id` property in a schema; params that carry one, at any depth and in any spelling,
//! refused before the tool runs; the other organisation's id in a read tool's string fields
//! gets none of its data), one audit record per call, input the schema refuses refused at its
//! field, no panic, read tools change nothing, an agent's mutation refused or proposed and
//! never run, one run per idempotency key, no organisation's data in another's answers, and
//! documented errors with messages.
//!
//! The kit derives its cases from each tool's schema, category and permission, so a new tool
//! is covered the moment it is linked (`architecture_tests::kit` has the probes and markers).

use architecture_tests::kit::{sample_checks, sample_registry};
use switchboard::{AgentMutations, RegistryConfig};
use switchboard_testing::Report;

/// Runs the kit on every sample tool, on a registry with `config`.
async fn checked(config: RegistryConfig) -> Report {
    let (registry, store) = sample_registry(config).await.expect("the registry starts");
    let report = sample_checks(&registry, store).run().await;
    registry.shutdown().await;
    report
}

#[tokio::test]
async fn every_linked_tool_keeps_every_promise_when_agents_are_refused() {
    let report = checked(RegistryConfig::default()).await;
    report.assert_passed();
    assert!(report.tools >= 13, "every sample tool is checked: {report}");
    assert!(
        report.unreached.is_empty(),
        "every check reaches every sample tool: {report}"
    );
}

#[tokio::test]
async fn every_linked_tool_keeps_every_promise_when_agents_propose() {
    let config = RegistryConfig {
        agent_mutations: AgentMutations::Propose,
        ..RegistryConfig::default()
    };
    checked(config).await.assert_passed();
}

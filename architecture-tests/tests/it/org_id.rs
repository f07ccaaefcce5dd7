//! Guards that the sample domains are under test, and that a tool sees the organisation of its
//! context.
//!
//! Architecture Invariant: the organisation a tool acts for comes from the call context. The
//! rest of this invariant (no `org_id` property in any schema, params that carry one refused at
//! any depth and in any spelling, the other organisation's id in a string field getting none of
//! its data) is checked on every linked tool by the conformance kit (`kit.rs`).

use architecture_tests::calls::{
    HOME_ORG, OTHER_ORG, fresh_correlation_id, start_registry, tool_names,
};
use serde_json::{Value, json};
use switchboard::{CallContext, Initiator, ToolRegistry};

async fn registry() -> ToolRegistry {
    start_registry().await.expect("the registry boots")
}

#[tokio::test]
async fn both_sample_domains_are_under_test() {
    let registry = registry().await;
    let names = tool_names(&registry);
    for expected in ["core_get_current_user", "roster_list_shifts"] {
        assert!(
            names.iter().any(|name| name == expected),
            "`{expected}` is not registered (found {names:?}): is its domain crate referenced?"
        );
    }
    registry.shutdown().await;
}

fn context_of(org: &str, user: &str, role: &str) -> CallContext {
    CallContext::builder()
        .org(org)
        .user(user)
        .session("architecture-tests")
        .correlation(fresh_correlation_id("context-org"))
        .role(role)
        .initiator(Initiator::Human)
        .build()
}

async fn current_user(registry: &ToolRegistry, context: &CallContext) -> Value {
    registry
        .invoke("core_get_current_user", json!({}), context)
        .await
        .expect("core_get_current_user succeeds for a seeded admin")
}

#[tokio::test]
async fn tools_see_the_organisation_of_the_context() {
    let registry = registry().await;
    let as_home = current_user(&registry, &context_of(HOME_ORG, "alice", "admin")).await;
    assert_eq!(as_home["org_id"], HOME_ORG, "output: {as_home}");
    let as_other = current_user(&registry, &context_of(OTHER_ORG, "gina", "admin")).await;
    assert_eq!(as_other["org_id"], OTHER_ORG, "output: {as_other}");
    registry.shutdown().await;
}

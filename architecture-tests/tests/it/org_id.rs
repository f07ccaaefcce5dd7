//! Guards tenant isolation at the boundary of every registered tool.
//!
//! Architecture Invariant: the organisation a tool acts for comes from the call context and
//! nowhere else: no tool's input schema has an `org_id` property (in any spelling, at any
//! depth), and the registry refuses, for every tool, params that carry one, with
//! `org_id_not_allowed`, before any tool code runs.
//!
//! The test boots the real registry with every sample domain linked, so a new tool is covered
//! the moment it is linked, without being named here.

use architecture_tests::calls::{
    HOME_ORG, OTHER_ORG, admin_human_confirmed, fresh_correlation_id, params_with_org_id,
    start_registry, tool_names,
};
use serde_json::{Value, json};
use switchboard::{CallContext, ErrorKind, Initiator, ToolRegistry};
use switchboard_core::schema::find_org_id_property;

async fn registry() -> ToolRegistry {
    start_registry().await.expect("the registry boots")
}

fn fail_with(offenders: &[String], header: &str) {
    assert!(
        offenders.is_empty(),
        "{header}:\n  - {}",
        offenders.join("\n  - ")
    );
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

#[tokio::test]
async fn no_tool_schema_has_an_org_id_property() {
    let registry = registry().await;
    let mut offenders = Vec::new();
    for descriptor in registry.list() {
        // The schema as stored, and as the two client shapes render it.
        let schemas = [
            ("input schema", (*descriptor.input_schema).clone()),
            (
                "Anthropic input_schema",
                descriptor.anthropic()["input_schema"].clone(),
            ),
            ("MCP inputSchema", descriptor.mcp()["inputSchema"].clone()),
        ];
        for (which, schema) in schemas {
            if let Some(pointer) = find_org_id_property(&schema) {
                offenders.push(format!(
                    "`{}`: its {which} has an org_id property at `{pointer}`: remove the field; \
                     read the organisation from `ToolContext::caller().org_id`",
                    descriptor.name
                ));
            }
        }
    }
    fail_with(
        &offenders,
        "tool schemas that ask callers for an organisation",
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn every_tool_refuses_org_id_in_params() {
    let registry = registry().await;
    let mut offenders = Vec::new();
    for name in tool_names(&registry) {
        for (placement, params) in params_with_org_id() {
            let correlation_id = fresh_correlation_id("org-id");
            let context = admin_human_confirmed(&correlation_id);
            let result = registry.invoke(&name, params.clone(), &context).await;
            match result {
                Err(error) if error.kind() == ErrorKind::OrgIdNotAllowed => {}
                Err(error) => offenders.push(format!(
                    "`{name}` with an org_id {placement} ({params}) failed with `{}` instead of \
                     `org_id_not_allowed`: {error}",
                    error.kind()
                )),
                Ok(output) => offenders.push(format!(
                    "`{name}` with an org_id {placement} ({params}) succeeded with {output}"
                )),
            }
        }
    }
    fail_with(&offenders, "tools that accepted an org_id in their params");
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

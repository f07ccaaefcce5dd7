//! `#[derive(ToolInput)]` refuses an `org_id` field at compile time, but it only sees the
//! top-level struct. An `org_id` in a nested struct reaches the input schema (under `$defs`),
//! and the registry refuses it at boot: the organisation only ever comes from the call context.
//!
//! This binary's tool set is broken on purpose, so it is its own test file.

mod common;

use common::{names, start_excluding};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{NoInput, ToolContext, ToolError, ToolInput, tool};
use switchboard_registry::{RegistryError, ToolRegistry};
use validator::Validate;

switchboard_core::domain! {
    /// Holds a tool whose input smuggles an `org_id` in a nested struct.
    Smuggler { name: "smuggler" }
}

switchboard_core::domain! {
    /// Holds a well-behaved tool.
    Honest { name: "honest" }
}

/// A filter, nested in the input.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate)]
struct Scope {
    /// The organisation, which params may never carry.
    org_id: String,
    /// A team.
    team: String,
}

/// The top level has no `org_id`, so the derive accepts it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
struct SearchInput {
    /// What to search for.
    query: String,
    /// Where to search.
    #[validate(nested)]
    scope: Scope,
}

/// Searches in a scope that names its own organisation.
#[tool(domain = Smuggler, category = read, permission = "smuggler.search")]
async fn search(_ctx: &ToolContext, input: SearchInput) -> Result<String, ToolError> {
    Ok(input.scope.team)
}

/// Does nothing wrong.
#[tool(domain = Honest, category = read, permission = "honest.use")]
async fn behave(_ctx: &ToolContext, _input: NoInput) -> Result<u8, ToolError> {
    Ok(0)
}

#[tokio::test]
async fn an_org_id_in_a_nested_input_struct_refuses_the_registry() {
    let error = ToolRegistry::start()
        .await
        .expect_err("the nested `org_id` is in the schema");
    let RegistryError::OrgIdInSchema { tool, path } = &error else {
        panic!("expected OrgIdInSchema, got {error:?}");
    };
    assert_eq!(tool, "smuggler_search");
    assert!(
        path.contains("Scope") && path.ends_with("/properties"),
        "{path}"
    );
    let message = error.to_string();
    assert!(
        message.contains("`smuggler_search`") && message.contains("org_id"),
        "{message}"
    );
}

#[tokio::test]
async fn excluding_the_smuggling_domain_lets_the_rest_boot() {
    let registry = start_excluding("smuggler")
        .await
        .expect("the honest domain is fine");
    let tools = registry.list();
    assert_eq!(names(&tools), ["honest_behave"]);
    registry.shutdown().await;
}

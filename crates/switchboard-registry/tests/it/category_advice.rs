//! What a `category_denied` refusal tells the caller to do instead: an agent refused a
//! mutation is pointed at the propose tools of the tool's domain that it may call, and when
//! there are none, at a person (who runs the tool, or approves a proposal of the call); a human
//! who has not confirmed a restricted tool is asked to confirm.
//!
//! The `kiln` domain (execute, restricted and propose tools) is defined here; the `vault`
//! domain (`vault.rs`) has no propose tool.

use crate::{
    common::{human_context, start_with_permissions},
    vault,
};
use serde_json::json;
use switchboard_core::{
    CallContext, ErrorKind, Initiator, InvokeError, NoInput, ToolContext, ToolError, tool,
};
use switchboard_registry::{PermissionMatrix, ToolRegistry};

switchboard_core::domain! {
    /// A pottery kiln, for the category advice tests.
    Kiln { name: "kiln" }
}

/// Fires the kiln.
#[tool(domain = Kiln, category = execute, permission = "kiln.fire")]
async fn fire(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("fired".to_owned())
}

/// Vents the kiln mid-firing: it cannot be undone.
#[tool(domain = Kiln, category = restricted, permission = "kiln.vent")]
async fn vent(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("vented".to_owned())
}

/// Proposes a firing for the potter on duty.
#[tool(domain = Kiln, category = propose, permission = "kiln.propose")]
async fn propose_firing(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("proposed".to_owned())
}

/// Proposes a glaze; only the admin may.
#[tool(domain = Kiln, category = propose, permission = "kiln.glaze")]
async fn propose_glaze(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("proposed".to_owned())
}

/// The admin holds every permission; a potter may fire the kiln and propose firings only.
async fn start() -> ToolRegistry {
    let matrix = PermissionMatrix::from_toml(
        r#"
        [roles]
        admin = ["*"]
        potter = ["kiln.fire", "kiln.propose"]
        "#,
    )
    .expect("a valid matrix");
    start_with_permissions(matrix).await
}

fn agent(role: &str, correlation: &str) -> CallContext {
    vault::context("alice", role, Initiator::Agent, correlation).build()
}

/// The reason of a `category_denied` refusal of `tool` for `context`.
async fn refusal(registry: &ToolRegistry, tool: &str, context: &CallContext) -> String {
    let error = registry
        .invoke(tool, json!({}), context)
        .await
        .expect_err("the category refuses the caller");
    assert_eq!(error.kind(), ErrorKind::CategoryDenied, "{error}");
    assert_eq!(
        serde_json::to_value(&error).expect("an error serializes")["kind"],
        "category_denied",
        "the kind's string is stable"
    );
    let InvokeError::CategoryDenied { reason, .. } = &error else {
        panic!("expected category_denied, got {error:?}");
    };
    assert!(
        error.to_string().ends_with(reason.as_str()),
        "the message carries the reason: {error}"
    );
    reason.clone()
}

#[tokio::test]
async fn an_agent_is_pointed_at_the_propose_tools_of_the_domain_it_may_call() {
    let registry = start().await;
    let reason = refusal(&registry, "kiln_fire", &agent("admin", "advice-admin")).await;
    assert_eq!(
        reason,
        "must be initiated by a human in a session; an agent acting alone may call one of the \
         propose tools `kiln_propose_firing`, `kiln_propose_glaze` instead"
    );
    // A potter's roles grant one of them: only that one is named.
    let reason = refusal(&registry, "kiln_fire", &agent("potter", "advice-potter")).await;
    assert_eq!(
        reason,
        "must be initiated by a human in a session; an agent acting alone may call the propose \
         tool `kiln_propose_firing` instead"
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn without_a_propose_tool_an_agent_is_told_to_ask_a_person() {
    let registry = start().await;
    let reason = refusal(&registry, "vault_add", &agent("admin", "advice-none")).await;
    assert_eq!(
        reason,
        "must be initiated by a human in a session; the `vault` domain has no propose tool for \
         an agent to call instead: ask a person to run it, or to approve it as a proposal \
         (stored by `ToolRegistry::propose`, or by the registry under \
         `AgentMutations::Propose`; decided with `switchboard approve`)"
    );
    assert!(!reason.contains("may call"), "{reason}");
    // The proposal the message offers can be made, and a person can approve it.
    let proposal = registry
        .propose(
            "vault_add",
            json!({"amount": 1}),
            &agent("admin", "advice-proposed"),
            None,
        )
        .await
        .expect("an agent may propose the call it may not make");
    let approved = registry
        .approve(&proposal.id, &vault::admin("advice-approved"))
        .await
        .expect("a human admin approves it");
    assert_eq!(approved.output["total"], 1);
    registry.shutdown().await;
}

#[tokio::test]
async fn a_restricted_tool_is_for_a_confirming_person_or_a_propose_tool() {
    let registry = start().await;
    let reason = refusal(&registry, "vault_wipe", &agent("admin", "advice-wipe")).await;
    assert_eq!(
        reason,
        "never runs on an agent's initiative: a human must start it and confirm it in the \
         session; the `vault` domain has no propose tool for an agent to call instead: ask a \
         person to run it with their confirmation, or to approve it as a proposal with their \
         confirmation (stored by `ToolRegistry::propose`, or by the registry under \
         `AgentMutations::Propose`; decided with `switchboard approve`)"
    );
    let reason = refusal(&registry, "kiln_vent", &agent("potter", "advice-vent")).await;
    assert_eq!(
        reason,
        "never runs on an agent's initiative: a human must start it and confirm it in the \
         session; an agent acting alone may call the propose tool `kiln_propose_firing` instead"
    );
    // A human who has not confirmed is asked to, and pointed at no propose tool.
    let reason = refusal(
        &registry,
        "kiln_vent",
        &human_context("advice-unconfirmed", "admin"),
    )
    .await;
    assert_eq!(
        reason,
        "needs an explicit confirmation by the human in the session; ask them, then call again \
         with the confirmation set"
    );
    registry.shutdown().await;
}

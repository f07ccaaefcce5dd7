//! A domain's state given at run time, and the action a mutating call runs as.
//!
//! `RegistryBuilder::domain_state` is how a service hands a domain what only it knows when it
//! starts (a database its tools keep their data in); `ToolContext::action` is how a tool whose
//! database also keeps the idempotency keys learns which key and action it is completing. The
//! `dial` domain and its tools are defined here, for these tests.

use serde::Serialize;
use serde_json::{Value, json};
use switchboard_core::{CallContext, Initiator, NoInput, ToolContext, ToolError, tool};
use switchboard_registry::ToolRegistry;

use crate::common::{PATIENCE, invoke, only_record_of};

/// Where the dial points.
#[derive(Debug, Clone)]
struct DialState {
    position: u64,
}

impl DialState {
    fn at_zero() -> Self {
        Self { position: 0 }
    }
}

switchboard_core::domain! {
    /// A dial whose starting position the embedding service may choose.
    Dial { name: "dial", state: DialState = DialState::at_zero }
}

/// Where the dial points.
#[tool(domain = Dial, category = read, permission = "dial.read")]
async fn position(ctx: &ToolContext<DialState>, _input: NoInput) -> Result<u64, ToolError> {
    Ok(ctx.state().position)
}

/// The action a call runs as, as the tool sees it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
struct SeenAction {
    org_id: Option<String>,
    key: Option<String>,
    action_id: Option<String>,
}

fn seen(ctx: &ToolContext<DialState>) -> SeenAction {
    let action = ctx.action();
    SeenAction {
        org_id: action.map(|action| action.org_id.to_string()),
        key: action.map(|action| action.key.to_string()),
        action_id: action.map(|action| action.action_id.to_string()),
    }
}

/// Turns the dial (here: reports the action it runs as).
#[tool(domain = Dial, category = execute, permission = "dial.turn")]
async fn turn(ctx: &ToolContext<DialState>, _input: NoInput) -> Result<SeenAction, ToolError> {
    Ok(seen(ctx))
}

/// Reads the action a read call runs as: none.
#[tool(domain = Dial, category = read, permission = "dial.read")]
async fn peek(ctx: &ToolContext<DialState>, _input: NoInput) -> Result<SeenAction, ToolError> {
    Ok(seen(ctx))
}

async fn started(builder: switchboard_registry::RegistryBuilder) -> ToolRegistry {
    builder
        .start()
        .await
        .expect("the test tools are well formed, so the registry starts")
}

#[tokio::test]
async fn a_domain_starts_with_the_state_its_declaration_names_unless_given_one() {
    let declared = started(ToolRegistry::builder()).await;
    assert_eq!(
        invoke(&declared, "dial_position", "declared").await,
        Ok(json!(0))
    );
    let given = started(
        ToolRegistry::builder()
            .domain_state::<Dial>(DialState { position: 7 })
            .domain_state::<Dial>(DialState { position: 41 }),
    )
    .await;
    assert_eq!(
        invoke(&given, "dial_position", "given").await,
        Ok(json!(41))
    );
}

#[tokio::test]
async fn a_state_for_an_excluded_domain_is_ignored() {
    let registry = started(
        ToolRegistry::builder()
            .domain_state::<Dial>(DialState { position: 3 })
            .exclude_domain("dial"),
    )
    .await;
    assert!(registry.find("dial_position").is_none());
}

#[tokio::test]
async fn a_mutation_runs_as_its_claimed_key_and_action() {
    let registry = started(ToolRegistry::builder()).await;
    let context = CallContext::builder()
        .org("acme")
        .user("alice")
        .session("session-1")
        .correlation("turn-1")
        .role("admin")
        .initiator(Initiator::Human)
        .idempotency_key("turn-key")
        .build();
    let seen: Value =
        tokio::time::timeout(PATIENCE, registry.invoke("dial_turn", json!({}), &context))
            .await
            .expect("the call answers")
            .expect("the turn runs");
    let record = only_record_of(&registry, "turn-1").await;
    let action = record.action.expect("a mutation's record names its action");
    assert_eq!(
        seen,
        json!({
            "org_id": "acme",
            "key": "turn-key",
            "action_id": action.id.to_string(),
        })
    );
    let peeked = invoke(&registry, "dial_peek", "peek-1")
        .await
        .expect("the read runs");
    assert_eq!(
        peeked,
        json!({ "org_id": null, "key": null, "action_id": null })
    );
}

#[tokio::test]
async fn the_state_of_a_domain_is_read_as_its_tools_read_it() {
    let registry =
        started(ToolRegistry::builder().domain_state::<Dial>(DialState { position: 9 })).await;
    let state = registry.state_of::<Dial>().expect("the dial runs here");
    assert_eq!(state.position, 9);
    let excluded = started(ToolRegistry::builder().exclude_domain("dial")).await;
    assert!(excluded.state_of::<Dial>().is_none());
}

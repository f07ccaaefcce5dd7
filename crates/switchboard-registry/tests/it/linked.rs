//! A domain served by another registry: calls made on a front registry that holds the domain
//! as a remote one (`RegistryBuilder::remote_domain`) run on the registry that serves it,
//! reached through an `InProcessLink`, and both registries record the call under its
//! correlation id. The `relay` domain and its tools are defined here, for these tests; its
//! state says which registry holds it.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use switchboard_audit::{ActionEvent, AuditRecord, Outcome};
use switchboard_core::{IdempotencyKey, InvokeError, NoInput, ToolContext, ToolError, tool};
use switchboard_registry::{AgentMutations, InProcessLink, RegistryConfig, ToolRegistry};

use crate::common::{admin_context, invoke, only_record_of, records_of};

/// Which registry holds the domain.
#[derive(Debug, Clone)]
struct RelayState {
    served_by: &'static str,
}

impl RelayState {
    fn unnamed() -> Self {
        Self {
            served_by: "an unnamed registry",
        }
    }
}

switchboard_core::domain! {
    /// A domain whose state names the registry that holds it.
    Relay { name: "relay", state: RelayState = RelayState::unnamed }
}

/// The registry that runs the call.
#[tool(domain = Relay, category = read, permission = "relay.read")]
async fn served_by(ctx: &ToolContext<RelayState>, _input: NoInput) -> Result<String, ToolError> {
    Ok(ctx.state().served_by.to_owned())
}

/// Where a mutation ran, and the key and action it ran as.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
struct Stamped {
    served_by: String,
    key: Option<String>,
    action_id: Option<String>,
}

/// Stamps a mutation with the registry that runs it and the action it runs as.
#[tool(domain = Relay, category = execute, permission = "relay.stamp")]
async fn stamp(ctx: &ToolContext<RelayState>, _input: NoInput) -> Result<Stamped, ToolError> {
    let action = ctx.action();
    Ok(Stamped {
        served_by: ctx.state().served_by.to_owned(),
        key: action.map(|action| action.key.to_string()),
        action_id: action.map(|action| action.action_id.to_string()),
    })
}

/// A registry serving `relay` as "the back", and a front registry holding `relay` as a remote
/// domain served by the back.
async fn front_and_back() -> (ToolRegistry, ToolRegistry) {
    front_and_back_with(RegistryConfig::default).await
}

/// [`front_and_back`], both registries with the configuration `config` makes.
async fn front_and_back_with(config: impl Fn() -> RegistryConfig) -> (ToolRegistry, ToolRegistry) {
    let back = ToolRegistry::builder()
        .config(config())
        .domain_state::<Relay>(RelayState {
            served_by: "the back",
        })
        .start()
        .await
        .expect("the back starts");
    let front = ToolRegistry::builder()
        .config(config())
        .remote_domain("relay", Arc::new(InProcessLink::new(back.clone())))
        .start()
        .await
        .expect("the front starts");
    (front, back)
}

/// What two records of one call share, wherever it was recorded.
fn shared_part(record: &AuditRecord) -> Value {
    json!({
        "tool": &*record.tool,
        "org_id": record.org_id.as_ref().map(|id| id.to_string()),
        "user_id": record.user_id.as_ref().map(|id| id.to_string()),
        "correlation_id": record.correlation_id.as_ref().map(|id| id.to_string()),
        "input_hash": record.input_hash.as_ref().map(|digest| format!("{digest:?}")),
        "output_hash": record.output_hash.as_ref().map(|digest| format!("{digest:?}")),
        "outcome": format!("{:?}", record.outcome),
        "action_id": record.action.as_ref().map(|action| action.id.to_string()),
    })
}

#[tokio::test]
async fn a_json_read_through_a_link_runs_on_the_serving_registry_and_both_record_it() {
    let (front, back) = front_and_back().await;

    let through_link = invoke(&front, "relay_served_by", "linked-read")
        .await
        .expect("the read runs on the back");
    let direct = invoke(&back, "relay_served_by", "direct-read")
        .await
        .expect("the read runs");

    assert_eq!(through_link, json!("the back"));
    assert_eq!(through_link, direct);
    assert!(
        front.domain_actor("relay").is_none(),
        "the front runs no actor for a remote domain"
    );
    let front_record = only_record_of(&front, "linked-read").await;
    let back_record = only_record_of(&back, "linked-read").await;
    assert_eq!(front_record.outcome, Outcome::Ok);
    assert_eq!(shared_part(&front_record), shared_part(&back_record));
}

#[tokio::test]
async fn a_mutation_through_a_link_runs_once_under_the_senders_key_and_action() {
    let (front, back) = front_and_back().await;
    let mut first = admin_context("stamp-first");
    first.idempotency_key = Some(IdempotencyKey::new("stamp-1"));
    let mut retry = admin_context("stamp-retry");
    retry.idempotency_key = Some(IdempotencyKey::new("stamp-1"));

    let stamped = front
        .invoke("relay_stamp", json!({}), &first)
        .await
        .expect("the mutation runs on the back");
    let replayed = front
        .invoke("relay_stamp", json!({}), &retry)
        .await
        .expect("the retry is answered");

    let front_record = only_record_of(&front, "stamp-first").await;
    let back_record = only_record_of(&back, "stamp-first").await;
    let action = front_record
        .action
        .as_ref()
        .expect("a mutation's record names its action");
    assert_eq!(stamped["served_by"], "the back");
    assert_eq!(stamped["key"], "link.stamp-1");
    assert_eq!(stamped["action_id"], action.id.to_string());
    assert_eq!(shared_part(&front_record), shared_part(&back_record));
    assert_eq!(replayed, stamped);
    let retry_record = only_record_of(&front, "stamp-retry").await;
    assert_eq!(
        retry_record.action.map(|action| action.event),
        Some(ActionEvent::Replayed)
    );
    assert!(
        records_of(&back, "stamp-retry").await.is_empty(),
        "the front answers the retry from its own key: the back runs nothing"
    );
}

#[tokio::test]
async fn a_typed_call_of_a_linked_tool_whose_output_has_no_deserialize_is_refused_unsent() {
    let (front, back) = front_and_back().await;

    let error = front
        .call::<Stamp>(NoInput {}, &admin_context("typed-stamp"))
        .await
        .expect_err("`Stamped` cannot be rebuilt from JSON");

    assert!(
        matches!(&error, InvokeError::DomainUnavailable { reason, .. }
            if reason.contains("derive `Deserialize`")),
        "{error:?}"
    );
    assert!(records_of(&back, "typed-stamp").await.is_empty());
}

#[tokio::test]
async fn a_served_call_that_would_become_a_proposal_is_refused_and_runs_nothing() {
    let proposing = || RegistryConfig {
        agent_mutations: AgentMutations::Propose,
        ..RegistryConfig::default()
    };
    let (front, back) = front_and_back_with(proposing).await;
    let agent = crate::vault::agent("agent-stamp");

    let served = back
        .serve_linked("relay_stamp", json!({}), &agent, None)
        .await
        .expect_err("an agent's execute call would be proposed on the back");
    let proposed = front
        .invoke("relay_stamp", json!({}), &agent)
        .await
        .expect_err("on the front, the same call is proposed, not run");

    assert!(
        matches!(&served, InvokeError::CategoryDenied { reason, .. }
            if reason.contains("give both registries the same `agent_mutations`")),
        "{served:?}"
    );
    assert!(
        matches!(proposed, InvokeError::ApprovalRequired { .. }),
        "{proposed:?}"
    );
    let acme = "acme".into();
    assert!(
        back.proposal_store()
            .list(&acme)
            .expect("the store answers")
            .is_empty(),
        "the serving registry stores no proposal"
    );
    assert_eq!(
        front
            .proposal_store()
            .list(&acme)
            .expect("the store answers")
            .len(),
        1,
        "the front stores the proposal"
    );
    assert!(
        records_of(&back, "agent-stamp")
            .await
            .iter()
            .all(|record| record.outcome != Outcome::Ok),
        "nothing ran on the back"
    );
}

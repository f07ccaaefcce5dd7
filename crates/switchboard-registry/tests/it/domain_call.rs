//! Whole calls sent to a domain's actor as bytes (`DomainMsg::Call`), the way a cluster link
//! reaches a domain on another node: they answer what `serve_linked` answers, as the caller a
//! `RemoteCallVerifier` reads from the call's statement, and nothing is served without one. The
//! actor serves each call in a task of its own, so a slow call does not hold up its mailbox.
//! The `courier` domain and its tools are defined here, for these tests.

use std::{
    collections::HashMap,
    sync::{Arc, LazyLock},
};

use serde_json::{Value, json};
use switchboard_audit::Outcome;
use switchboard_core::{
    ActionId, ActionKey, BoxFuture, CallContext, IdempotencyKey, NoInput, ToolContext, ToolError,
    tool,
};
use switchboard_registry::{
    LinkError, RemoteAction, RemoteCall, RemoteCallVerifier, StatementRefused, ToolRegistry,
    VerifiedCaller, call_domain_actor,
};
use tokio::sync::Semaphore;

use crate::common::{PATIENCE, admin_context, only_record_of, records_of};

switchboard_core::domain! {
    /// A domain whose calls arrive at its actor.
    Courier { name: "courier" }
}

/// Answers at once.
#[tool(domain = Courier, category = read, permission = "courier.read")]
async fn quick(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("delivered".to_owned())
}

/// Gets a permit when `courier_held` starts.
static STARTED: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(0));

/// Holds `courier_held` until the test adds a permit.
static RELEASE: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(0));

/// Says it started, and answers once the test releases it.
#[tool(domain = Courier, category = read, permission = "courier.read")]
async fn held(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    STARTED.add_permits(1);
    let permit = RELEASE
        .acquire()
        .await
        .map_err(|_| ToolError::new("released", "the release semaphore closed"))?;
    permit.forget();
    Ok("released".to_owned())
}

/// The statements this node knows: each names one caller and the one tool it may call.
pub(crate) struct KnownStatements(HashMap<&'static str, (&'static str, CallContext)>);

impl KnownStatements {
    pub(crate) fn of(
        statements: impl IntoIterator<Item = (&'static str, &'static str, CallContext)>,
    ) -> Self {
        Self(
            statements
                .into_iter()
                .map(|(statement, tool, context)| (statement, (tool, context)))
                .collect(),
        )
    }
}

impl RemoteCallVerifier for KnownStatements {
    fn verify<'a>(
        &'a self,
        _domain: &'a str,
        call: &'a RemoteCall,
    ) -> BoxFuture<'a, Result<VerifiedCaller, StatementRefused>> {
        Box::pin(async move {
            let (tool, context) = self
                .0
                .get(call.statement.as_str())
                .ok_or_else(|| StatementRefused::new("an unknown statement"))?;
            if *tool != call.tool {
                return Err(StatementRefused::new("a statement for another tool"));
            }
            let org_id = context
                .org_id
                .clone()
                .ok_or_else(|| StatementRefused::new("a statement without an organisation"))?;
            let action = call.action.as_ref().map(|action| ActionKey {
                org_id: org_id.clone(),
                key: action.key.clone(),
                action_id: action.action_id.clone(),
            });
            Ok(VerifiedCaller::new(context.clone(), action))
        })
    }
}

/// A registry that serves calls from other nodes as the callers `verifier` knows.
async fn serving(verifier: KnownStatements) -> ToolRegistry {
    ToolRegistry::builder()
        .statement_verifier(Arc::new(verifier))
        .start()
        .await
        .expect("the registry starts")
}

/// Sends `call` to the actor of `domain`, waiting at most [`PATIENCE`].
async fn send(
    registry: &ToolRegistry,
    domain: &str,
    call: &RemoteCall,
) -> Result<Value, LinkError> {
    let actor = registry
        .domain_actor(domain)
        .unwrap_or_else(|| panic!("the `{domain}` domain runs an actor"));
    call_domain_actor(&actor, call, tokio::time::Instant::now() + PATIENCE).await
}

pub(crate) fn read_of(statement: &str, tool: &str) -> RemoteCall {
    RemoteCall::new(statement, tool, json!({}), None)
}

#[tokio::test]
async fn a_call_sent_to_a_domain_actor_answers_what_serve_linked_answers() {
    let registry = serving(KnownStatements::of([
        ("alice-read", "courier_quick", admin_context("actor-read")),
        ("alice-stamp", "relay_stamp", admin_context("actor-stamp")),
    ]))
    .await;

    let through_actor = send(
        &registry,
        "courier",
        &read_of("alice-read", "courier_quick"),
    )
    .await
    .expect("the read is served");
    let served = registry
        .serve_linked(
            "courier_quick",
            json!({}),
            &admin_context("served-read"),
            None,
        )
        .await
        .expect("the read is served");
    let stamp = RemoteCall::new(
        "alice-stamp",
        "relay_stamp",
        json!({}),
        Some(RemoteAction::new(
            IdempotencyKey::new("stamp-7"),
            ActionId::new("action-7"),
        )),
    );
    let stamped = send(&registry, "relay", &stamp)
        .await
        .expect("the mutation is served");
    let replayed = send(&registry, "relay", &stamp)
        .await
        .expect("the second send is answered");

    assert_eq!(through_actor, json!("delivered"));
    assert_eq!(through_actor, served);
    let record = only_record_of(&registry, "actor-read").await;
    assert_eq!(record.outcome, Outcome::Ok);
    assert_eq!(stamped["key"], "link.stamp-7");
    assert_eq!(stamped["action_id"], "action-7");
    assert_eq!(replayed, stamped, "the sender's key runs the mutation once");
}

#[tokio::test]
async fn a_refusal_of_the_serving_registry_comes_back_as_the_same_error() {
    let mut reader = admin_context("actor-denied");
    reader.roles = Arc::from([switchboard_core::Role::new("nobody")]);
    let registry = serving(KnownStatements::of([(
        "nobody-read",
        "courier_quick",
        reader.clone(),
    )]))
    .await;

    let through_actor = send(
        &registry,
        "courier",
        &read_of("nobody-read", "courier_quick"),
    )
    .await;
    let served = registry
        .serve_linked("courier_quick", json!({}), &reader, None)
        .await
        .expect_err("the role grants nothing");

    assert!(
        matches!(&through_actor, Err(LinkError::Refused(error)) if *error == served),
        "{through_actor:?}"
    );
}

#[tokio::test]
async fn a_registry_without_a_statement_verifier_serves_no_call_from_another_node() {
    let registry = ToolRegistry::builder()
        .start()
        .await
        .expect("the registry starts");

    let answer = send(
        &registry,
        "courier",
        &read_of("alice-read", "courier_quick"),
    )
    .await;

    assert!(
        matches!(&answer, Err(LinkError::NotSent { reason })
            if reason.contains("RegistryBuilder::statement_verifier")),
        "{answer:?}"
    );
}

#[tokio::test]
async fn a_call_whose_statement_is_refused_is_not_served_and_the_sender_is_not_told_why() {
    let registry = serving(KnownStatements::of([(
        "alice-read",
        "courier_quick",
        admin_context("actor-refused"),
    )]))
    .await;

    let unknown = send(&registry, "courier", &read_of("forged", "courier_quick")).await;
    let other_tool = send(&registry, "courier", &read_of("alice-read", "courier_held")).await;

    for answer in [unknown, other_tool] {
        assert!(
            matches!(&answer, Err(LinkError::NotSent { reason })
                if reason.contains("statement was refused")
                    && !reason.contains("unknown")
                    && !reason.contains("another tool")),
            "{answer:?}"
        );
    }
    assert!(records_of(&registry, "actor-refused").await.is_empty());
}

#[tokio::test]
async fn a_domain_actor_serves_only_its_own_domains_tools() {
    let registry = serving(KnownStatements::of([(
        "alice-stamp",
        "relay_stamp",
        admin_context("actor-wrong-domain"),
    )]))
    .await;

    let answer = send(&registry, "courier", &read_of("alice-stamp", "relay_stamp")).await;

    assert!(
        matches!(&answer, Err(LinkError::NotSent { reason })
            if reason.contains("a tool of domain `relay`, not of `courier`")),
        "{answer:?}"
    );
    assert!(records_of(&registry, "actor-wrong-domain").await.is_empty());
}

#[tokio::test]
async fn a_call_held_in_its_tool_does_not_hold_up_the_next_one_at_the_same_actor() {
    let registry = serving(KnownStatements::of([
        ("alice-held", "courier_held", admin_context("actor-held")),
        ("alice-read", "courier_quick", admin_context("actor-quick")),
    ]))
    .await;
    let held = {
        let registry = registry.clone();
        tokio::spawn(async move {
            send(&registry, "courier", &read_of("alice-held", "courier_held")).await
        })
    };

    tokio::time::timeout(PATIENCE, STARTED.acquire())
        .await
        .expect("the held call starts")
        .expect("the semaphore stays open")
        .forget();

    let quick = send(
        &registry,
        "courier",
        &read_of("alice-read", "courier_quick"),
    )
    .await;
    RELEASE.add_permits(1);
    let held = tokio::time::timeout(PATIENCE, held)
        .await
        .expect("the held call ends once released")
        .expect("the task ends");

    assert_eq!(
        quick.expect("served while the other waits"),
        json!("delivered")
    );
    assert_eq!(held.expect("served once released"), json!("released"));
}

//! The validation stack beyond categories and permissions, one failure per test, each with its
//! exact error kind: thread ownership (`thread_not_owned`), agent scope (`tool_scope_denied`),
//! a domain's gate (`gate_refused`), declared scope ids (`mutation_scope_missing`) and a
//! required idempotency key (`idempotency_key_required`); and the order they run in.

use std::sync::Arc;

use crate::vault::{admin, agent, context, records_of, start, tally};
use serde_json::json;
use switchboard_core::{ErrorKind, Initiator, InvokeError};
use switchboard_registry::{
    AgentScopes, MemoryThreads, RegistryConfig, ThreadDirectory, ToolRegistry,
};

fn add(amount: i64) -> serde_json::Value {
    json!({ "amount": amount })
}

async fn with_threads() -> (ToolRegistry, Arc<MemoryThreads>) {
    let threads = Arc::new(MemoryThreads::new());
    threads.open("acme".into(), "t-alice".into(), "alice".into());
    threads.open("acme".into(), "t-bob".into(), "bob".into());
    let directory: Arc<dyn ThreadDirectory> = threads.clone();
    let registry = start(ToolRegistry::builder().threads(directory)).await;
    (registry, threads)
}

#[tokio::test]
async fn a_thread_of_another_user_is_thread_not_owned() {
    let (registry, _threads) = with_threads().await;
    let foreign = context("alice", "admin", Initiator::Human, "foreign")
        .thread("t-bob")
        .build();
    let error = registry
        .invoke("vault_peek", json!({}), &foreign)
        .await
        .expect_err("bob's thread");
    assert_eq!(error.kind(), ErrorKind::ThreadNotOwned);
    assert_eq!(error.kind().as_str(), "thread_not_owned");
    let unknown = context("alice", "admin", Initiator::Human, "unknown")
        .thread("t-nobody")
        .build();
    let error = registry
        .invoke("vault_peek", json!({}), &unknown)
        .await
        .expect_err("an unknown thread is owned by nobody");
    assert_eq!(error.kind(), ErrorKind::ThreadNotOwned);
    let own = context("alice", "admin", Initiator::Human, "own")
        .thread("t-alice")
        .build();
    registry
        .invoke("vault_peek", json!({}), &own)
        .await
        .expect("her own thread");
    // Refusals are audited like any other.
    assert_eq!(
        records_of(&registry, "foreign").await[0].outcome.as_str(),
        "thread_not_owned"
    );
}

#[tokio::test]
async fn an_agent_type_outside_its_scope_is_tool_scope_denied() {
    let scopes = AgentScopes::from_toml(
        "[agents]\nreader = [\"vault_peek\"]\nbanker = [\"vault_*\"]\n\"*\" = []",
    )
    .expect("valid table");
    let registry = start(ToolRegistry::builder().agent_scopes(scopes)).await;
    let reader = context("alice", "admin", Initiator::Agent, "reader")
        .agent_type("reader")
        .build();
    registry
        .invoke("vault_peek", json!({}), &reader)
        .await
        .expect("in scope");
    let error = registry
        .propose("vault_add", add(1), &reader, None)
        .await
        .expect_err("out of scope");
    assert_eq!(error.kind(), ErrorKind::ToolScopeDenied);
    // A human acting through an agent of a listed type is held to the agent's scope too.
    let human_via_reader = context("alice", "admin", Initiator::Human, "via")
        .agent_type("reader")
        .build();
    let error = registry
        .invoke("vault_add", add(1), &human_via_reader)
        .await
        .expect_err("the agent's scope applies");
    assert!(
        matches!(&error, InvokeError::ToolScopeDenied { agent_type: Some(t), .. } if t == "reader"),
        "{error:?}"
    );
    // An agent without a type falls back to `"*"`, here nothing.
    let error = registry
        .invoke("vault_peek", json!({}), &agent("untyped"))
        .await
        .expect_err("the fallback grants nothing");
    assert_eq!(error.kind(), ErrorKind::ToolScopeDenied);
    // A human acting directly is not governed by the table.
    registry
        .invoke("vault_add", add(1), &admin("direct"))
        .await
        .expect("humans keep today's behaviour");
}

#[tokio::test]
async fn a_gate_refusal_is_gate_refused_and_nothing_runs() {
    let registry = start(ToolRegistry::builder()).await;
    let error = registry
        .invoke("vault_guarded_add", add(13), &admin("unlucky"))
        .await
        .expect_err("the gate refuses 13");
    assert_eq!(error.kind(), ErrorKind::GateRefused);
    assert_eq!(error.details()["code"], "unlucky");
    assert_eq!(tally(&registry).await.runs, 0);
    registry
        .invoke("vault_guarded_add", add(12), &admin("lucky"))
        .await
        .expect("the gate lets 12 through");
    // A proposal is gated too: it is checked when made, not only when approved.
    let error = registry
        .propose(
            "vault_guarded_add",
            add(13),
            &agent("unlucky-proposal"),
            None,
        )
        .await
        .expect_err("the gate refuses the proposal");
    assert_eq!(error.kind(), ErrorKind::GateRefused);
}

#[tokio::test]
async fn missing_scope_ids_are_mutation_scope_missing() {
    let (registry, _threads) = with_threads().await;
    let error = registry
        .invoke("vault_scoped_add", add(1), &admin("no-scope"))
        .await
        .expect_err("needs a thread and a project");
    assert_eq!(error.kind(), ErrorKind::MutationScopeMissing);
    assert_eq!(
        error.details()["fields"],
        json!(["thread_id", "project_id"])
    );
    let thread_only = context("alice", "admin", Initiator::Human, "thread-only")
        .thread("t-alice")
        .build();
    let error = registry
        .invoke("vault_scoped_add", add(1), &thread_only)
        .await
        .expect_err("still needs a project");
    assert_eq!(error.details()["fields"], json!(["project_id"]));
    let scoped = context("alice", "admin", Initiator::Human, "scoped")
        .thread("t-alice")
        .project("p1")
        .build();
    registry
        .invoke("vault_scoped_add", add(1), &scoped)
        .await
        .expect("both present");
    assert_eq!(tally(&registry).await.runs, 1);
}

#[tokio::test]
async fn a_required_key_that_is_missing_is_idempotency_key_required() {
    let config = RegistryConfig {
        require_idempotency_key: true,
        ..RegistryConfig::default()
    };
    let registry = start(ToolRegistry::builder().config(config)).await;
    let error = registry
        .invoke("vault_add", add(1), &admin("keyless"))
        .await
        .expect_err("no key");
    assert_eq!(error.kind(), ErrorKind::IdempotencyKeyRequired);
    assert_eq!(tally(&registry).await.runs, 0);
    // Reads need no key.
    registry
        .invoke("vault_peek", json!({}), &admin("read"))
        .await
        .expect("a read");
    let keyed = context("alice", "admin", Initiator::Human, "keyed")
        .idempotency_key("k-1")
        .build();
    registry
        .invoke("vault_add", add(1), &keyed)
        .await
        .expect("keyed");
}

#[tokio::test]
async fn the_checks_run_in_order_thread_scope_category_permission_input_gate_scope_ids() {
    let scopes = AgentScopes::from_toml("[agents]\n\"*\" = [\"vault_peek\"]").expect("valid");
    let threads = Arc::new(MemoryThreads::new());
    threads.open("acme".into(), "t-alice".into(), "alice".into());
    let directory: Arc<dyn ThreadDirectory> = threads;
    let registry = start(
        ToolRegistry::builder()
            .agent_scopes(scopes)
            .threads(directory),
    )
    .await;
    let kind = |result: Result<serde_json::Value, InvokeError>| {
        result.expect_err("refused").kind().as_str()
    };
    // Everything wrong at once: the thread is reported first.
    let all_wrong = context("alice", "nobody", Initiator::Agent, "o1")
        .thread("t-bob")
        .build();
    assert_eq!(
        kind(
            registry
                .invoke(
                    "vault_scoped_add",
                    json!({"amount": "x", "amount2": 1}),
                    &all_wrong
                )
                .await
        ),
        "thread_not_owned"
    );
    // Own thread: the agent's scope next (before the category).
    let agent_in_thread = context("alice", "nobody", Initiator::Agent, "o2")
        .thread("t-alice")
        .build();
    assert_eq!(
        kind(
            registry
                .invoke("vault_scoped_add", json!({"amount": "x"}), &agent_in_thread)
                .await
        ),
        "tool_scope_denied"
    );
    // A human without the permission: permission before input.
    let human = context("alice", "nobody", Initiator::Human, "o3").build();
    assert_eq!(
        kind(
            registry
                .invoke("vault_scoped_add", json!({"amount": "x"}), &human)
                .await
        ),
        "permission_denied"
    );
    // The admin: input, then gate, then scope ids.
    assert_eq!(
        kind(
            registry
                .invoke("vault_scoped_add", json!({"amount": "x"}), &admin("o4"))
                .await
        ),
        "invalid_input"
    );
    assert_eq!(
        kind(
            registry
                .invoke("vault_guarded_add", add(13), &admin("o5"))
                .await
        ),
        "gate_refused"
    );
    assert_eq!(
        kind(
            registry
                .invoke("vault_scoped_add", add(1), &admin("o6"))
                .await
        ),
        "mutation_scope_missing"
    );
}

//! Exactly-once mutations: a retry with the same idempotency key returns the first result
//! without running the tool again, also when the calls race; the same key with other params is
//! `idempotency_conflict`; replays are audited with the first run's action id.

use std::collections::BTreeMap;

use crate::vault::{AddInput, Tally, admin, all_records, context, records_of, start, tally};
use proptest::prelude::*;
use serde_json::{Value, json};
use switchboard_audit::{ActionEvent, Outcome};
use switchboard_core::{CallContext, ErrorKind, Initiator, InvokeError};
use switchboard_registry::ToolRegistry;

fn keyed(key: &str, correlation: &str) -> CallContext {
    context("alice", "admin", Initiator::Human, correlation)
        .idempotency_key(key)
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_racing_calls_with_one_key_run_the_tool_once_and_agree() {
    let registry = start(ToolRegistry::builder()).await;
    let calls: Vec<_> = (0..100)
        .map(|index| {
            let registry = registry.clone();
            let ctx = keyed("race-1", &format!("race-{index}"));
            tokio::spawn(async move {
                registry
                    .invoke("vault_add", json!({ "amount": 5, "delay_ms": 20 }), &ctx)
                    .await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for call in calls {
        answers.push(
            call.await
                .expect("the task does not panic")
                .expect("every call succeeds"),
        );
    }
    assert!(
        answers.iter().all(|answer| *answer == answers[0]),
        "{answers:?}"
    );
    assert_eq!(answers[0], json!({ "total": 5, "runs": 1 }));
    assert_eq!(tally(&registry).await, Tally { total: 5, runs: 1 });
    // One record per attempt: one executed, 99 replayed, all with the same action id.
    let records: Vec<_> = all_records(&registry)
        .await
        .into_iter()
        .filter(|record| &*record.tool == "vault_add")
        .collect();
    assert_eq!(records.len(), 100);
    let executed = records
        .iter()
        .filter(|record| record.action.as_ref().map(|a| a.event) == Some(ActionEvent::Executed))
        .count();
    assert_eq!(executed, 1);
    let action_id = &records[0].action.as_ref().expect("linked").id;
    assert!(records.iter().all(|record| {
        record.outcome == Outcome::Ok && record.action.as_ref().map(|a| &a.id) == Some(action_id)
    }));
}

#[tokio::test]
async fn the_same_key_with_other_params_is_idempotency_conflict() {
    let registry = start(ToolRegistry::builder()).await;
    registry
        .invoke("vault_add", json!({ "amount": 1 }), &keyed("k", "first"))
        .await
        .expect("first use");
    let error = registry
        .invoke("vault_add", json!({ "amount": 2 }), &keyed("k", "second"))
        .await
        .expect_err("other params");
    assert_eq!(error.kind(), ErrorKind::IdempotencyConflict);
    assert_eq!(error.kind().as_str(), "idempotency_conflict");
    let error = registry
        .invoke(
            "vault_guarded_add",
            json!({ "amount": 1 }),
            &keyed("k", "third"),
        )
        .await
        .expect_err("another tool");
    assert_eq!(error.kind(), ErrorKind::IdempotencyConflict);
    // Key order in the params does not matter: canonical JSON.
    registry
        .invoke(
            "vault_add",
            json!({ "delay_ms": 0, "amount": 1 }),
            &keyed("k2", "a"),
        )
        .await
        .expect("first use");
    registry
        .invoke(
            "vault_add",
            json!({ "amount": 1, "delay_ms": 0 }),
            &keyed("k2", "b"),
        )
        .await
        .expect("a replay, not a conflict");
    assert_eq!(tally(&registry).await.runs, 2);
}

#[tokio::test]
async fn a_replay_is_audited_ok_with_the_first_runs_action_id() {
    let registry = start(ToolRegistry::builder()).await;
    let first = registry
        .invoke("vault_add", json!({ "amount": 7 }), &keyed("k", "first"))
        .await
        .expect("runs");
    let second = registry
        .invoke("vault_add", json!({ "amount": 7 }), &keyed("k", "retry"))
        .await
        .expect("replays");
    assert_eq!(first, second);
    let executed = &records_of(&registry, "first").await[0];
    let replayed = &records_of(&registry, "retry").await[0];
    let executed_action = executed.action.as_ref().expect("a mutation has an action");
    let replayed_action = replayed.action.as_ref().expect("a replay has an action");
    assert_eq!(executed_action.event, ActionEvent::Executed);
    assert_eq!(replayed_action.event, ActionEvent::Replayed);
    assert_eq!(executed_action.id, replayed_action.id);
    assert_eq!(replayed.outcome, Outcome::Ok);
    assert_eq!(executed.output_hash, replayed.output_hash);
    // Reads carry no action.
    tally(&registry).await;
    assert!(records_of(&registry, "peek").await[0].action.is_none());
}

#[tokio::test]
async fn without_a_key_a_retry_of_the_same_request_replays_and_a_new_request_runs() {
    let registry = start(ToolRegistry::builder()).await;
    let params = json!({ "amount": 3 });
    registry
        .invoke("vault_add", params.clone(), &admin("request-1"))
        .await
        .expect("runs");
    registry
        .invoke("vault_add", params.clone(), &admin("request-1"))
        .await
        .expect("same request: replays");
    assert_eq!(tally(&registry).await.runs, 1);
    registry
        .invoke("vault_add", params.clone(), &admin("request-2"))
        .await
        .expect("a new request runs");
    assert_eq!(tally(&registry).await.runs, 2);
    // In a thread, the thread scopes the derived key: a new request in it is a retry.
    let threads = std::sync::Arc::new(switchboard_registry::MemoryThreads::new());
    threads.open("acme".into(), "t".into(), "alice".into());
    let directory: std::sync::Arc<dyn switchboard_registry::ThreadDirectory> = threads;
    let registry = start(ToolRegistry::builder().threads(directory)).await;
    for correlation in ["t-1", "t-2"] {
        let ctx = context("alice", "admin", Initiator::Human, correlation)
            .thread("t")
            .build();
        registry
            .invoke("vault_add", params.clone(), &ctx)
            .await
            .expect("runs or replays");
    }
    assert_eq!(tally(&registry).await.runs, 1);
}

#[tokio::test]
async fn typed_retries_get_the_typed_first_result() {
    let registry = start(ToolRegistry::builder()).await;
    let input = AddInput {
        amount: 4,
        delay_ms: 0,
    };
    let first = registry
        .call::<crate::vault::Add>(input.clone(), &keyed("typed", "t1"))
        .await
        .expect("runs");
    let again = registry
        .call::<crate::vault::Add>(input, &keyed("typed", "t2"))
        .await
        .expect("replays");
    assert_eq!(first, again);
    assert_eq!(tally(&registry).await.runs, 1);
}

#[tokio::test]
async fn a_failed_first_run_is_the_answer_to_its_retries() {
    let registry = start(ToolRegistry::builder()).await;
    // `vault_wipe` is restricted: unconfirmed, it is refused before a key is claimed, so a
    // confirmed retry with the same key runs.
    let unconfirmed = keyed("wipe", "w1");
    let error = registry
        .invoke("vault_wipe", json!({}), &unconfirmed)
        .await
        .expect_err("unconfirmed");
    assert_eq!(error.kind(), ErrorKind::CategoryDenied);
    let mut confirmed = keyed("wipe", "w2");
    confirmed.confirmed = true;
    registry
        .invoke("vault_wipe", json!({}), &confirmed)
        .await
        .expect("confirmed: runs");
    assert_eq!(tally(&registry).await.runs, 1);
}

/// One step of a random schedule: call `vault_add` with key `key` and amount `amount`.
#[derive(Debug, Clone)]
struct Attempt {
    key: u8,
    amount: i64,
    delay_ms: u64,
}

fn attempts() -> impl Strategy<Value = Vec<Vec<Attempt>>> {
    let attempt = (0u8..4, 1i64..3, 0u64..3).prop_map(|(key, amount, delay_ms)| Attempt {
        key,
        amount,
        delay_ms,
    });
    // Batches run one after another; the attempts of a batch race.
    prop::collection::vec(prop::collection::vec(attempt, 1..6), 1..5)
}

async fn run_schedule(schedule: Vec<Vec<Attempt>>) -> Result<(), TestCaseError> {
    let registry = start(ToolRegistry::builder()).await;
    // The model: the params (amount, delay) that first ran for each key, and their answer.
    let mut first_params: BTreeMap<u8, (i64, u64)> = BTreeMap::new();
    let mut answers: BTreeMap<u8, Value> = BTreeMap::new();
    let mut correlation = 0;
    for batch in schedule {
        let mut calls = Vec::new();
        for attempt in &batch {
            correlation += 1;
            let registry = registry.clone();
            let ctx = keyed(&format!("key-{}", attempt.key), &format!("c{correlation}"));
            let params = json!({ "amount": attempt.amount, "delay_ms": attempt.delay_ms });
            calls.push(tokio::spawn(async move {
                registry.invoke("vault_add", params, &ctx).await
            }));
        }
        let mut results: Vec<(Attempt, Result<Value, InvokeError>)> = Vec::new();
        for (attempt, call) in batch.into_iter().zip(calls) {
            results.push((attempt, call.await.expect("no panic")));
        }
        // Within a racing batch, whichever attempt per key won decides the params.
        for (attempt, result) in &results {
            let params = (attempt.amount, attempt.delay_ms);
            if let Ok(answer) = result {
                let known = first_params.entry(attempt.key).or_insert(params);
                prop_assert_eq!(*known, params, "a success must match the first run");
                let first = answers.entry(attempt.key).or_insert_with(|| answer.clone());
                prop_assert_eq!(
                    &*first,
                    answer,
                    "every success for a key is the same answer"
                );
            }
        }
        for (attempt, result) in &results {
            if let Err(error) = result {
                prop_assert_eq!(error.kind(), ErrorKind::IdempotencyConflict);
                let known = first_params.get(&attempt.key).copied();
                prop_assert!(
                    known.is_some_and(|known| known != (attempt.amount, attempt.delay_ms))
                );
            }
        }
    }
    // The tool ran exactly once per key used, and added each key's first amount.
    let tally = tally(&registry).await;
    prop_assert_eq!(tally.runs, first_params.len() as u64);
    prop_assert_eq!(
        tally.total,
        first_params.values().map(|(amount, _)| amount).sum::<i64>()
    );
    registry.shutdown().await;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_retry_interleavings_run_each_key_once(schedule in attempts()) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(run_schedule(schedule))?;
    }
}

//! Retries under tokio's paused clock: the backoff schedule, exactly without jitter and within
//! bounds with full jitter; and the `on_failure` strategies after the last attempt.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard_registry::{RegistryConfig, ToolRegistry};
use switchboard_workflows::{
    Jitter, MemoryRunStore, NodeEvent, NodeState, OnFailure, RunState, WorkflowEvent,
};

use crate::probe;
use crate::support::*;

fn flaky(
    key: &str,
    failures: u32,
    max_attempts: u32,
    jitter: Jitter,
) -> switchboard_workflows::Node {
    let mut node = tool(
        "flaky",
        "probe_look",
        lit(json!({ "key": key, "failures": failures })),
    );
    node.retry = vec![retrier(max_attempts, jitter)];
    node
}

fn gaps(key: &str) -> Vec<Duration> {
    probe::calls(key)
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .collect()
}

#[tokio::test(start_paused = true)]
async fn retries_follow_the_backoff_schedule_exactly_without_jitter() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition("retry_none", vec![flaky("retry-none", 3, 5, Jitter::None)]);
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("retry-none");
    let outcome = engine
        .run_to_end(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);
    // 1 s, then doubled to 2 s, then 4 s capped at 3 s.
    assert_eq!(
        gaps("retry-none"),
        [
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_secs(3)
        ]
    );
    let steps = engine.steps(outcome.run, &caller).expect("readable");
    let flaky = step(&steps, "flaky", 0);
    assert_eq!(flaky.state, NodeState::Completed);
    assert_eq!(flaky.output.expect("stored")["calls"], 4);
    let retries: Vec<_> = events(&engine, outcome.run, &caller)
        .await
        .into_iter()
        .filter_map(|event| match event.event {
            WorkflowEvent::Node {
                event: NodeEvent::Retry { .. },
                state,
                retry_at,
                ..
            } => Some((state, retry_at.is_some())),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 3);
    assert!(matches!(
        retries[0],
        (NodeState::Retrying { attempt: 2, .. }, true)
    ));
    assert!(matches!(
        retries[2],
        (NodeState::Retrying { attempt: 4, .. }, true)
    ));
}

#[tokio::test(start_paused = true)]
async fn full_jitter_waits_at_most_the_computed_delay() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition("retry_full", vec![flaky("retry-full", 3, 5, Jitter::Full)]);
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("retry-full");
    let outcome = engine
        .run_to_end(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);
    let gaps = gaps("retry-full");
    assert_eq!(gaps.len(), 3);
    for (gap, cap) in gaps.iter().zip([1, 2, 3]) {
        assert!(*gap <= Duration::from_secs(cap), "{gap:?} over {cap} s");
    }
}

#[tokio::test(start_paused = true)]
async fn the_last_failed_attempt_fails_the_run_and_skip_goes_on() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let failing = definition("retry_out", vec![flaky("retry-out", 9, 3, Jitter::None)]);
    let engine = engine_with(&registry, &store, &failing);
    let caller = human("retry-out");
    let outcome = engine
        .run_to_end(Arc::clone(&failing), json!({}), &caller)
        .await
        .expect("runs");
    let RunState::Failed { error, .. } = &outcome.state else {
        panic!("fails: {:?}", outcome.state);
    };
    assert!(error.contains("flaky"), "{error}");
    assert_eq!(
        probe::calls("retry-out").len(),
        3,
        "max_attempts counts the first"
    );

    let mut skipped = flaky("retry-skip", 9, 2, Jitter::None);
    skipped.on_failure = OnFailure::Skip;
    let definition = definition(
        "retry_skip",
        vec![
            skipped,
            tool(
                "after",
                "probe_look",
                lit(json!({ "key": "retry-skip-after" })),
            ),
        ],
    );
    let engine = engine_with(&registry, &store, &definition);
    let outcome = engine
        .run_to_end(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);
    let steps = engine.steps(outcome.run, &caller).expect("readable");
    assert!(matches!(state(&steps, "flaky"), NodeState::Skipped { .. }));
    assert_eq!(state(&steps, "after"), NodeState::Completed);
}

#[tokio::test(start_paused = true)]
async fn an_escalated_node_pauses_the_run_until_a_person_resumes_it() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    // Fails twice: the first attempt escalates, the person's resume runs it again (fails),
    // and the second resume succeeds.
    let mut node = tool(
        "flaky",
        "probe_look",
        lit(json!({ "key": "escalate", "failures": 2 })),
    );
    node.on_failure = OnFailure::Escalate;
    let definition = definition("escalate", vec![node]);
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("escalate");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    assert_eq!(probe::calls("escalate").len(), 1);
    engine.resume(run, &caller).await.expect("resumes");
    tokio::time::sleep(Duration::from_millis(100)).await;
    paused(&engine, run, &caller).await;
    assert_eq!(probe::calls("escalate").len(), 2);
    engine.resume(run, &caller).await.expect("resumes");
    let outcome = wait(&engine, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(probe::calls("escalate").len(), 3);
}

/// A mutating step whose call ended in doubt (the change may have been made): a retry could
/// make it twice and an undo could undo what never happened, so the run pauses for a person
/// whichever retrier the step has. A timeout is in doubt too: the tool was stopped midway.
#[tokio::test(start_paused = true)]
async fn a_mutating_step_in_doubt_pauses_instead_of_retrying() {
    let registry = ToolRegistry::builder()
        .config(RegistryConfig {
            default_timeout: Duration::from_secs(5),
            ..RegistryConfig::default()
        })
        .start()
        .await
        .expect("the linked tools are well formed");
    let store = Arc::new(MemoryRunStore::new());
    let lost = tool(
        "lost",
        "probe_touch",
        lit(json!({ "key": "doubt-lost", "failures": 1, "in_doubt": true })),
    );
    let slow = tool(
        "slow",
        "probe_touch",
        lit(json!({ "key": "doubt-slow", "sleep_ms": 60_000 })),
    );
    let definition = definition("in_doubt", vec![lost, slow]);
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("doubt");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");

    paused(&engine, run, &caller).await;
    let record = engine.run(run, &caller).expect("readable");
    let RunState::Paused { reason } = &record.state else {
        panic!("paused, and it is {:?}", record.state);
    };
    assert!(
        reason.contains("the outcome of node `lost` is unknown")
            && reason.contains("the answer to call 1 of `doubt-lost` was lost"),
        "{reason}"
    );
    assert_eq!(probe::calls("doubt-lost").len(), 1, "not retried");
    engine.resume(run, &caller).await.expect("resumes");

    // The second step times out, which the default retrier retries for a read; for a change,
    // the run pauses again.
    let mut reason = String::new();
    for _ in 0..2000 {
        if let RunState::Paused { reason: why } = engine.run(run, &caller).expect("readable").state
            && why.contains("`slow`")
        {
            reason = why;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        reason.contains("the outcome of node `slow` is unknown"),
        "{reason:?}"
    );
    assert_eq!(probe::calls("doubt-lost").len(), 2, "run again on resume");
    assert_eq!(probe::calls("doubt-slow").len(), 1, "not retried");
    engine.cancel(run, &caller).await.expect("cancels");
    let outcome = wait(&engine, run, &caller).await;
    assert_eq!(outcome.state, RunState::Cancelled);
}

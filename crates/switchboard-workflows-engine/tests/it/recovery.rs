//! Crash and restart: an engine stopped mid-run (its tasks aborted where they are) and a new
//! engine on the same store and registry, which `recover`s: the run completes, and each
//! mutating step ran exactly once.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard_workflows::{MemoryRunStore, NodeKind, NodeState, RunState, WaitFor};

use crate::probe;
use crate::support::*;

#[tokio::test(start_paused = true)]
async fn a_step_in_flight_at_the_crash_is_not_run_twice() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "crash_in_step",
        vec![
            tool("first", "probe_touch", lit(json!({ "key": "crash-first" }))),
            tool(
                "slow",
                "probe_touch",
                lit(json!({ "key": "crash-slow", "sleep_ms": 10_000 })),
            ),
            tool("last", "probe_touch", lit(json!({ "key": "crash-last" }))),
        ],
    );
    let caller = human("crash-in-step");
    let first = engine_with(&registry, &store, &definition);
    let run = first
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    // Let the run reach the slow step, then stop the engine in the middle of it.
    for _ in 0..1000 {
        if !probe::calls("crash-slow").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(probe::calls("crash-slow").len(), 1);
    first.shutdown();
    let steps = store_steps(&store, run);
    assert!(matches!(
        state(&steps, "slow"),
        NodeState::Running { attempt: 1 }
    ));

    let second = engine_with(&registry, &store, &definition);
    assert_eq!(second.recover().await.expect("recovers"), 1);
    let outcome = wait(&second, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    for key in ["crash-first", "crash-slow", "crash-last"] {
        assert_eq!(probe::calls(key).len(), 1, "`{key}` ran once");
    }
    let steps = second.steps(run, &caller).expect("readable");
    assert_eq!(step(&steps, "slow", 0).output.expect("stored")["calls"], 1);
}

#[tokio::test(start_paused = true)]
async fn a_durable_timer_survives_a_restart() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "crash_in_wait",
        vec![
            tool(
                "before",
                "probe_touch",
                lit(json!({ "key": "wait-before" })),
            ),
            node(
                "ten_minutes",
                NodeKind::Wait(WaitFor::Duration(jiff::SignedDuration::from_mins(10))),
            ),
            tool("after", "probe_touch", lit(json!({ "key": "wait-after" }))),
        ],
    );
    let caller = human("crash-in-wait");
    let first = engine_with(&registry, &store, &definition);
    let run = first
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&first, run, &caller).await;
    let record = first.run(run, &caller).expect("readable");
    assert!(record.wake_at.is_some(), "the wake time is stored");
    first.shutdown();
    drop(first);

    let second = engine_with(&registry, &store, &definition);
    second.recover().await.expect("recovers");
    let outcome = wait(&second, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(probe::calls("wait-before").len(), 1);
    assert_eq!(probe::calls("wait-after").len(), 1);
    let calls = probe::calls("wait-after")[0] - probe::calls("wait-before")[0];
    // Each engine's clock starts from the wall clock, which moves on while tokio's clock is
    // paused: the second engine's is a few real milliseconds ahead.
    assert!(
        calls >= Duration::from_secs(599),
        "waited ten minutes: {calls:?}"
    );
}

fn store_steps(
    store: &MemoryRunStore,
    run: switchboard_workflows::RunId,
) -> Vec<switchboard_workflows::StepRecord> {
    use switchboard_workflows::RunStore;
    store.steps(run).expect("readable")
}

#[tokio::test(start_paused = true)]
async fn a_long_retry_backoff_waits_durably_across_a_restart() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let mut flaky = tool(
        "flaky",
        "probe_touch",
        lit(json!({ "key": "long-backoff", "failures": 1 })),
    );
    let mut retrier = retrier(3, switchboard_workflows::Jitter::None);
    retrier.interval = jiff::SignedDuration::from_secs(60);
    retrier.max_delay = None;
    flaky.retry = vec![retrier];
    let definition = definition("long_backoff", vec![flaky]);
    let caller = human("long-backoff");
    let first = engine_with(&registry, &store, &definition);
    let run = first
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    // The first attempt fails; the run waits for its retry without a task.
    paused(&first, run, &caller).await;
    let steps = first.steps(run, &caller).expect("readable");
    assert!(matches!(
        state(&steps, "flaky"),
        NodeState::Retrying { attempt: 2, .. }
    ));
    assert!(first.run(run, &caller).expect("readable").wake_at.is_some());
    first.shutdown();

    let second = engine_with(&registry, &store, &definition);
    second.recover().await.expect("recovers");
    let outcome = wait(&second, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    let calls = probe::calls("long-backoff");
    assert_eq!(calls.len(), 2);
    assert!(
        calls[1] - calls[0] >= Duration::from_secs(59),
        "{:?}",
        calls[1] - calls[0]
    );
}

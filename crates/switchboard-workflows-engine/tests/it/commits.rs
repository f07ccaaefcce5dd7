//! How the engine's checkpoints reach the store: a top-level step's completion goes with the
//! next checkpoint, in one commit, while a completion beside other work in flight is written
//! at once (it must not wait on that work to be durable).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use switchboard_workflows::{NodeKind, NodeState, RunState, RunStore, WorkflowEvent};

use crate::support::*;

/// A memory store counting its commits, and the count.
fn counting() -> (Arc<HookedStore>, Arc<AtomicUsize>) {
    let commits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&commits);
    let store = HookedStore::new(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    (Arc::new(store), commits)
}

fn look(id: &str, key: &str, sleep_ms: u64) -> switchboard_workflows::Node {
    tool(
        id,
        "probe_look",
        lit(json!({ "key": key, "sleep_ms": sleep_ms })),
    )
}

#[tokio::test]
async fn a_steps_completion_is_committed_with_the_next_steps_start() {
    let registry = registry().await;
    let (store, commits) = counting();
    let definition = definition(
        "three_reads",
        vec![
            look("a", "commits-a", 0),
            look("b", "commits-b", 0),
            look("c", "commits-c", 0),
        ],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("commits");
    let outcome = engine
        .run_to_end(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);

    // Every transition is an event, numbered in order, none lost.
    let events = store.inner.events(outcome.run, 0, 100).expect("readable");
    let seen: Vec<String> = events
        .iter()
        .map(|event| match &event.event {
            WorkflowEvent::Run { event, .. } => event.as_str().to_owned(),
            WorkflowEvent::Node { path, event, .. } => format!("{path} {}", event.as_str()),
        })
        .collect();
    assert_eq!(
        seen,
        [
            "start",
            "initialized",
            "a start",
            "a complete",
            "b start",
            "b complete",
            "c start",
            "c complete",
            "complete"
        ]
    );
    assert!(
        events.iter().zip(1..).all(|(event, seq)| event.seq == seq),
        "{events:?}"
    );
    // Two for the run's start, then one per step start (the one before's completion with it),
    // and the last completion with the run's.
    assert_eq!(commits.load(Ordering::SeqCst), 6);
}

#[tokio::test]
async fn a_completion_beside_work_in_flight_is_written_at_once() {
    let registry = registry().await;
    let (store, _) = counting();
    // The slow branch starts first: the fast one completes while it is in flight.
    let branches = [
        (
            "first".into(),
            block(vec![look("look", "inflight-slow", 3_000)]),
        ),
        (
            "second".into(),
            block(vec![look("look", "inflight-fast", 0)]),
        ),
    ]
    .into_iter()
    .collect();
    let definition = definition(
        "beside",
        vec![node(
            "both",
            NodeKind::Parallel {
                branches,
                concurrency: 2,
            },
        )],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("inflight");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    let mut stored = Vec::new();
    for _ in 0..200 {
        stored = store.inner.steps(run).expect("readable");
        let state = |path: &str| {
            stored
                .iter()
                .find(|step| step.key.path.as_str() == path)
                .map(|step| step.state.clone())
        };
        if state("both/second/look") == Some(NodeState::Completed) {
            assert!(
                matches!(state("both/first/look"), Some(NodeState::Running { .. })),
                "the slow branch is still in flight: {stored:?}"
            );
            let outcome = wait(&engine, run, &caller).await;
            assert_eq!(outcome.state, RunState::Completed);
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the fast branch's completion was not stored while the slow one ran: {stored:?}");
}

//! An engine that stops on purpose (a node draining) hands its runs over to the engines that
//! go on: two engines on one PostgreSQL run store, with leases far longer than the tests wait.
//!
//! - The step in flight finishes and is recorded on the stopping engine, no further node starts
//!   there, and the lease is released: the other engine takes the run over at its next sweep
//!   and finishes it, every step once.
//! - A step that outlasts the hand-over's deadline is cut off where it is, as a crash stops it:
//!   its lease is kept, so the other engine does not take the run over before it expires.
//! - A child run that ends during the hand-over cannot have its parent driven by the stopping
//!   engine: the other engine's sweep sees the child ended and continues the parent.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard_test_postgres::test_database;
use switchboard_workflows::{Definition, NodeState, RunState, RunStore};
use switchboard_workflows_engine::{Engine, EngineOptions, HandOver, LeaseOptions};
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore};

use crate::probe;
use crate::support::*;

/// Longer than any test here waits: a run is taken over in time only if its lease was released.
const LONG_LEASE: Duration = Duration::from_secs(60);

/// An engine named `name` on its own pool to `url`, leasing for [`LONG_LEASE`] and sweeping
/// every 50 ms.
fn engine_on(
    registry: &switchboard_registry::ToolRegistry,
    url: &str,
    definition: &Arc<Definition>,
    name: &str,
) -> Engine {
    let store: Arc<dyn RunStore> = Arc::new(
        PostgresRunStore::open(&PostgresOptions::new(url)).expect("the workflows database opens"),
    );
    let definition = Arc::clone(definition);
    Engine::new(
        registry.clone(),
        store,
        EngineOptions {
            loader: Some(Arc::new(move |_| Ok(Arc::clone(&definition)))),
            lease: LeaseOptions::default()
                .with_owner(name)
                .with_duration(LONG_LEASE)
                .with_sweep_every(Duration::from_millis(50)),
            ..EngineOptions::default()
        },
    )
}

/// Three mutating steps; the middle one sleeps `sleep_ms`. Each counts its real runs under its
/// own probe key, prefixed with `name`.
fn three_touches(name: &str, sleep_ms: u64) -> Arc<Definition> {
    let touch = |step: &str, sleep_ms: u64| {
        tool(
            step,
            "probe_touch",
            lit(json!({ "key": format!("{name}-{step}"), "sleep_ms": sleep_ms })),
        )
    };
    definition(
        name,
        vec![touch("first", 0), touch("slow", sleep_ms), touch("last", 0)],
    )
}

async fn slow_step_started(name: &str) {
    let key = format!("{name}-slow");
    for _ in 0..2_000 {
        if !probe::calls(&key).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the slow step never started");
}

fn calls(name: &str, step: &str) -> usize {
    probe::calls(&format!("{name}-{step}")).len()
}

#[tokio::test]
async fn a_run_handed_over_by_a_stopping_engine_is_taken_over_at_its_next_sweep() {
    let database = test_database()
        .await
        .expect("a test database (run the tests through `cargo xtask test`)");
    let registry = registry().await;
    let name = "hand-over";
    let definition = three_touches(name, 800);
    let caller = human(name);
    let node_a = engine_on(&registry, database.url(), &definition, "node-a");
    let node_b = engine_on(&registry, database.url(), &definition, "node-b");
    node_b.recover().await.expect("node b recovers (nothing)");
    let run = node_a
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts on node a");
    slow_step_started(name).await;

    // Node a drains: the slow step in flight finishes there, then the run is handed over.
    let handed = node_a.hand_over(Duration::from_secs(20)).await;
    let released = tokio::time::Instant::now();
    assert_eq!(
        handed,
        HandOver {
            released: 1,
            cut_off: 0
        }
    );
    let steps = node_b.steps(run, &caller).expect("readable");
    assert_eq!(
        step(&steps, "slow", 0).state,
        NodeState::Completed,
        "the step in flight finished and was recorded by node a"
    );
    assert_eq!(
        calls(name, "last"),
        0,
        "node a started no node once it was handing over"
    );
    assert_eq!(
        node_a.run(run, &caller).expect("readable").state,
        RunState::Running,
        "the run is left running, for another node"
    );

    let outcome = tokio::time::timeout(Duration::from_secs(5), node_b.wait(run, &caller))
        .await
        .expect("node b finishes the run long before the 60 s lease would have expired")
        .expect("readable");
    assert_eq!(outcome.state, RunState::Completed);
    assert!(released.elapsed() < Duration::from_secs(5));
    for step in ["first", "slow", "last"] {
        assert_eq!(calls(name, step), 1, "`{step}` ran exactly once");
    }
    node_a.shutdown();
    node_b.shutdown();
}

#[tokio::test]
async fn a_step_that_outlasts_the_hand_over_is_cut_off_and_keeps_its_lease() {
    let database = test_database()
        .await
        .expect("a test database (run the tests through `cargo xtask test`)");
    let registry = registry().await;
    let name = "hand-over-cut";
    let definition = three_touches(name, 3_000);
    let caller = human(name);
    let node_a = engine_on(&registry, database.url(), &definition, "node-a");
    let node_b = engine_on(&registry, database.url(), &definition, "node-b");
    node_b.recover().await.expect("node b recovers (nothing)");
    let run = node_a
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts on node a");
    slow_step_started(name).await;

    let handed = node_a.hand_over(Duration::from_millis(100)).await;
    assert_eq!(
        handed,
        HandOver {
            released: 0,
            cut_off: 1
        }
    );
    // Node b sweeps every 50 ms, but the lease of the cut-off drive is still node a's.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let steps = node_b.steps(run, &caller).expect("readable");
    assert!(
        matches!(step(&steps, "slow", 0).state, NodeState::Running { .. }),
        "the slow step was left in flight, not redriven: {steps:#?}"
    );
    assert_eq!(calls(name, "slow"), 1, "node b did not run the step again");
    node_a.shutdown();
    node_b.shutdown();
}

#[tokio::test]
async fn a_parent_whose_child_ended_during_a_hand_over_is_continued_by_another_engine() {
    let database = test_database()
        .await
        .expect("a test database (run the tests through `cargo xtask test`)");
    let registry = registry().await;
    let name = "hand-over-child";
    let child = definition(
        &format!("{name}-child"),
        vec![tool(
            "slow",
            "probe_touch",
            lit(json!({ "key": format!("{name}-slow"), "sleep_ms": 800 })),
        )],
    );
    let parent = definition(
        name,
        vec![
            node(
                "sub",
                switchboard_workflows::NodeKind::Workflow {
                    definition: Arc::clone(&child),
                    input: lit(json!({})),
                },
            ),
            tool(
                "last",
                "probe_touch",
                lit(json!({ "key": format!("{name}-last") })),
            ),
        ],
    );
    let caller = human(name);
    let node_a = engine_on(&registry, database.url(), &parent, "node-a");
    let node_b = engine_on(&registry, database.url(), &parent, "node-b");
    node_b.recover().await.expect("node b recovers (nothing)");
    let run = node_a
        .start(Arc::clone(&parent), json!({}), &caller)
        .await
        .expect("starts on node a");
    slow_step_started(name).await;
    // The child's one step finishes on node a, which ends the child; the parent waits for it,
    // paused, and node a no longer drives anything: its kick of the parent is not acted on.
    let handed = node_a.hand_over(Duration::from_secs(20)).await;
    assert_eq!(handed.cut_off, 0, "{handed:?}");
    let outcome = tokio::time::timeout(Duration::from_secs(10), node_b.wait(run, &caller))
        .await
        .expect("node b's sweep continues the parent once its child ended")
        .expect("readable");
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(calls(name, "slow"), 1);
    assert_eq!(calls(name, "last"), 1);
    node_a.shutdown();
    node_b.shutdown();
}

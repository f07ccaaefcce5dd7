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
use switchboard_core::CallContext;
use switchboard_test_postgres::{TestDatabase, test_database};
use switchboard_workflows::{Definition, NodeState, RunState, RunStore};
use switchboard_workflows_engine::{Engine, HandOver};
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore};

use crate::support::*;

/// Longer than any test here waits: a run is taken over in time only if its lease was released.
const LONG_LEASE: Duration = Duration::from_secs(60);

/// Two engines, node a and node b, each on its own pool to a fresh database, leasing for
/// [`LONG_LEASE`] and loading any run's definition as the one they were made with.
struct TwoEngines {
    caller: CallContext,
    node_a: Engine,
    node_b: Engine,
    _database: TestDatabase,
}

impl TwoEngines {
    /// The two engines, for the workflow `name`; node b has recovered (nothing), so it sweeps
    /// from then on.
    async fn new(name: &str, definition: &Arc<Definition>) -> Self {
        let database = test_database()
            .await
            .expect("a test database (run the tests through `cargo xtask test`)");
        let registry = registry().await;
        let engine_on = |owner: &str| {
            let store: Arc<dyn RunStore> = Arc::new(
                PostgresRunStore::open(&PostgresOptions::new(database.url()))
                    .expect("the workflows database opens"),
            );
            leasing_engine(&registry, store, definition, owner, LONG_LEASE)
        };
        let (node_a, node_b) = (engine_on("node-a"), engine_on("node-b"));
        node_b.recover().await.expect("node b recovers (nothing)");
        Self {
            caller: human(name),
            node_a,
            node_b,
            _database: database,
        }
    }

    fn shutdown(&self) {
        self.node_a.shutdown();
        self.node_b.shutdown();
    }
}

#[tokio::test]
async fn a_run_handed_over_by_a_stopping_engine_is_taken_over_at_its_next_sweep() {
    let name = "hand-over";
    let definition = three_touches(name, 800);
    let engines = TwoEngines::new(name, &definition).await;
    let (node_a, node_b, caller) = (&engines.node_a, &engines.node_b, &engines.caller);
    let run = start_until_slow(node_a, &definition, caller, name).await;

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
    let steps = node_b.steps(run, caller).expect("readable");
    assert_eq!(
        step(&steps, "slow", 0).state,
        NodeState::Completed,
        "the step in flight finished and was recorded by node a"
    );
    assert_eq!(
        touches(name, "last"),
        0,
        "node a started no node once it was handing over"
    );
    assert_eq!(
        node_a.run(run, caller).expect("readable").state,
        RunState::Running,
        "the run is left running, for another node"
    );

    let outcome = tokio::time::timeout(Duration::from_secs(5), node_b.wait(run, caller))
        .await
        .expect("node b finishes the run long before the 60 s lease would have expired")
        .expect("readable");
    assert_eq!(outcome.state, RunState::Completed);
    assert!(released.elapsed() < Duration::from_secs(5));
    each_ran_once(name);
    engines.shutdown();
}

#[tokio::test]
async fn a_step_that_outlasts_the_hand_over_is_cut_off_and_keeps_its_lease() {
    let name = "hand-over-cut";
    let definition = three_touches(name, 3_000);
    let engines = TwoEngines::new(name, &definition).await;
    let (node_a, node_b, caller) = (&engines.node_a, &engines.node_b, &engines.caller);
    let run = start_until_slow(node_a, &definition, caller, name).await;

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
    let steps = node_b.steps(run, caller).expect("readable");
    assert!(
        matches!(step(&steps, "slow", 0).state, NodeState::Running { .. }),
        "the slow step was left in flight, not redriven: {steps:#?}"
    );
    assert_eq!(
        touches(name, "slow"),
        1,
        "node b did not run the step again"
    );
    engines.shutdown();
}

#[tokio::test]
async fn a_parent_whose_child_ended_during_a_hand_over_is_continued_by_another_engine() {
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
    let engines = TwoEngines::new(name, &parent).await;
    let (node_a, node_b, caller) = (&engines.node_a, &engines.node_b, &engines.caller);
    let run = start_until_slow(node_a, &parent, caller, name).await;
    // The child's one step finishes on node a, which ends the child; the parent waits for it,
    // paused, and node a no longer drives anything: its kick of the parent is not acted on.
    let handed = node_a.hand_over(Duration::from_secs(20)).await;
    assert_eq!(handed.cut_off, 0, "{handed:?}");
    let outcome = tokio::time::timeout(Duration::from_secs(10), node_b.wait(run, caller))
        .await
        .expect("node b's sweep continues the parent once its child ended")
        .expect("readable");
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(touches(name, "slow"), 1);
    assert_eq!(touches(name, "last"), 1);
    engines.shutdown();
}

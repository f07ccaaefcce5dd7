//! Two engines on one PostgreSQL run store, as two nodes of a fleet run them, sharing one
//! registry (so one idempotency store, as the nodes share theirs): a run is driven by one
//! engine at a time, under its lease.
//!
//! - An engine stopped mid-step without releasing its lease (as `SIGKILL` stops a node): the
//!   other engine takes the run over only once the lease expired, and finishes it with every
//!   mutating step run exactly once.
//! - While an engine holds a live lease, the other never drives the run, though it recovers
//!   and sweeps all the while; a waiter and a watcher on the other engine follow the run
//!   through the store.
//! - An engine whose renewals fail (a node cut off from the database, or paused) keeps driving
//!   past its lease: the other takes the run over, and the stale engine's next checkpoint is
//!   refused by the fence, so it cannot write over the new holder, and it stops.
//! - A cancel asked through an engine while another drives the run takes effect once that
//!   drive ends (here: the run pauses), through the asking engine's sweep.
//!
//! Each node's store is wrapped to record the leases it took and the checkpoints refused.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use serde_json::json;
use switchboard_test_postgres::{TestDatabase, test_database};
use switchboard_workflows::{
    Checkpoint, Lease, RunId, RunState, RunStore, RunStoreError, StepRecord,
};
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore};
use tokio::time::Instant;

use crate::support::*;

/// How long the tests' leases last, and how often they are renewed.
const LEASE: Duration = Duration::from_millis(600);
const RENEW: Duration = Duration::from_millis(200);

/// One node's store: the shared database, through a pool of its own, recording what the
/// node's engine did with leases.
struct Node {
    inner: PostgresRunStore,
    /// When this node took a lease it did not hold, per run.
    taken: Mutex<Vec<(RunId, Instant)>>,
    /// Leases refused because another node held them live.
    refused: AtomicUsize,
    /// Checkpoints refused because the lease was no longer this node's.
    fenced_out: AtomicUsize,
    /// Checkpoints written.
    written: AtomicUsize,
    /// Reads of a run's steps: a drive begins with one (and recovering a paused run).
    steps_read: AtomicUsize,
    /// Renewals fail as if the database could not be reached.
    renewals_fail: AtomicBool,
}

impl Node {
    fn open(database: &TestDatabase) -> Arc<Self> {
        Arc::new(Self {
            inner: PostgresRunStore::open(&PostgresOptions::new(database.url()))
                .expect("the workflows database opens"),
            taken: Mutex::new(Vec::new()),
            refused: AtomicUsize::new(0),
            fenced_out: AtomicUsize::new(0),
            written: AtomicUsize::new(0),
            steps_read: AtomicUsize::new(0),
            renewals_fail: AtomicBool::new(false),
        })
    }

    fn taken(&self, run: RunId) -> Vec<Instant> {
        self.taken
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|(taken, _)| *taken == run)
            .map(|(_, at)| *at)
            .collect()
    }

    fn count(&self, result: &Result<impl Sized, RunStoreError>) {
        match result {
            Ok(_) => self.written.fetch_add(1, Ordering::SeqCst),
            Err(RunStoreError::LeaseLost { .. }) => self.fenced_out.fetch_add(1, Ordering::SeqCst),
            Err(_) => 0,
        };
    }
}

impl switchboard_workflows::conformance::WrappedStore for Node {
    fn inner(&self) -> &dyn RunStore {
        &self.inner
    }

    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError> {
        let result = self.inner.checkpoint(checkpoint);
        self.count(&result);
        result
    }

    fn checkpoint_all(&self, checkpoints: &[Checkpoint]) -> Result<Vec<u64>, RunStoreError> {
        let result = self.inner.checkpoint_all(checkpoints);
        self.count(&result);
        result
    }

    fn steps(&self, run: RunId) -> Result<Vec<StepRecord>, RunStoreError> {
        self.steps_read.fetch_add(1, Ordering::SeqCst);
        self.inner.steps(run)
    }

    fn acquire_lease(
        &self,
        run: RunId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<Lease>, RunStoreError> {
        let held_before = self
            .inner
            .database()
            .call({
                let id = run.to_string();
                let owner = owner.to_owned();
                move |client| async move {
                    Ok(client
                        .query_opt(
                            "SELECT 1 FROM workflows_runs WHERE id = $1 AND lease_owner = $2",
                            &[&id, &owner],
                        )
                        .await?
                        .is_some())
                }
            })
            .expect("the lease reads");
        let lease = self.inner.acquire_lease(run, owner, now, until)?;
        match &lease {
            Some(_) if !held_before => self
                .taken
                .lock()
                .expect("not poisoned")
                .push((run, Instant::now())),
            Some(_) => {}
            None => {
                self.refused.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(lease)
    }

    fn renew_lease(&self, lease: &Lease, until: Timestamp) -> Result<Lease, RunStoreError> {
        if self.renewals_fail.load(Ordering::SeqCst) {
            return Err(RunStoreError::Backend {
                action: "renewing a lease".to_owned(),
                reason: "the test cut this node off".to_owned(),
            });
        }
        self.inner.renew_lease(lease, until)
    }
}

/// An engine on `node` with the tests' short lease, renewed every `RENEW`, sweeping often.
fn engine_on(
    registry: &switchboard_registry::ToolRegistry,
    node: &Arc<Node>,
    definition: &Arc<switchboard_workflows::Definition>,
    name: &str,
) -> switchboard_workflows_engine::Engine {
    leasing_engine(
        registry,
        Arc::clone(node) as Arc<dyn RunStore>,
        definition,
        name,
        LEASE,
    )
}

/// Waits for the run's end on `engine`, at most 30 s.
async fn finished(
    engine: &switchboard_workflows_engine::Engine,
    run: RunId,
    caller: &switchboard_core::CallContext,
) -> switchboard_workflows_engine::RunOutcome {
    tokio::time::timeout(Duration::from_secs(30), engine.wait(run, caller))
        .await
        .expect("the run ends within 30 s")
        .expect("the run is readable")
}

/// Two nodes on a fresh database, sharing one registry, each with its engine, and the
/// workflow they run: [`three_touches`] named `name`.
struct TwoNodes {
    name: &'static str,
    definition: Arc<switchboard_workflows::Definition>,
    caller: switchboard_core::CallContext,
    node_a: Arc<Node>,
    node_b: Arc<Node>,
    engine_a: switchboard_workflows_engine::Engine,
    engine_b: switchboard_workflows_engine::Engine,
    _database: TestDatabase,
}

impl TwoNodes {
    async fn new(name: &'static str, sleep_ms: u64) -> Self {
        let database = test_database()
            .await
            .expect("a test database (run the tests through `cargo xtask test`)");
        let registry = registry().await;
        let (node_a, node_b) = (Node::open(&database), Node::open(&database));
        let definition = three_touches(name, sleep_ms);
        Self {
            name,
            caller: human(name),
            engine_a: engine_on(&registry, &node_a, &definition, "node-a"),
            engine_b: engine_on(&registry, &node_b, &definition, "node-b"),
            definition,
            node_a,
            node_b,
            _database: database,
        }
    }

    /// Starts the run on node a, and waits until its slow step runs.
    async fn start_on_a(&self) -> RunId {
        start_until_slow(&self.engine_a, &self.definition, &self.caller, self.name).await
    }

    /// Node b recovers first (nothing yet: it sweeps from then on), then the run starts on
    /// node a; waits until its slow step runs.
    async fn start_on_a_with_b_sweeping(&self) -> RunId {
        self.engine_b
            .recover()
            .await
            .expect("node b recovers (nothing yet)");
        self.start_on_a().await
    }
}

#[tokio::test]
async fn a_run_whose_engine_died_is_taken_over_once_its_lease_expired() {
    let nodes = TwoNodes::new("takeover", 1_500).await;
    let run = nodes.start_on_a_with_b_sweeping().await;
    // Node a dies mid-step, as SIGKILL stops it: its lease stays in the store.
    let killed = Instant::now();
    nodes.engine_a.shutdown();

    // The lease was renewed at most RENEW before: it is live for LEASE - RENEW at least.
    tokio::time::sleep(LEASE - RENEW - Duration::from_millis(100)).await;
    assert!(
        nodes.node_b.taken(run).is_empty(),
        "node b took the run over while node a's lease was live"
    );
    let outcome = finished(&nodes.engine_b, run, &nodes.caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    let taken = nodes.node_b.taken(run);
    assert_eq!(taken.len(), 1, "node b took the run over once");
    assert!(
        taken[0] - killed >= LEASE - RENEW - Duration::from_millis(20),
        "node b took the run over {:?} after node a died, before its lease expired",
        taken[0] - killed
    );
    each_ran_once(nodes.name);
    let steps = nodes.engine_b.steps(run, &nodes.caller).expect("readable");
    assert_eq!(
        step(&steps, "slow", 0).output.expect("stored")["calls"],
        1,
        "the slow step's first result was replayed to node b, not run again"
    );
    assert_eq!(nodes.node_a.fenced_out.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_run_under_a_live_lease_is_never_driven_by_another_engine() {
    // The slow step outlasts several leases: node a renews its lease all along.
    let nodes = TwoNodes::new("live-lease", 2_000).await;
    let run = nodes.start_on_a().await;
    // Node b starts now: it tries the run at once, and sweeps every 50 ms from then on.
    assert_eq!(nodes.engine_b.recover().await.expect("node b recovers"), 1);
    // A watcher on node b sees node a's run through the store: every event, then its end.
    let watched = nodes
        .engine_b
        .events(run, &nodes.caller)
        .expect("watchable on node b");
    let watched: Vec<_> = tokio::time::timeout(
        Duration::from_secs(30),
        futures::StreamExt::collect::<Vec<_>>(watched),
    )
    .await
    .expect("node b's event stream ends with the run");
    let outcome = finished(&nodes.engine_b, run, &nodes.caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(
        watched,
        nodes.node_b.events(run, 0, usize::MAX).expect("readable"),
        "node b's watcher saw every event of the run, in order"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        nodes.node_b.refused.load(Ordering::SeqCst) >= 1,
        "node b tried the run and was refused its lease"
    );
    assert!(
        nodes.node_b.taken(run).is_empty(),
        "node b took the lease of a run node a drove"
    );
    assert_eq!(
        nodes.node_b.steps_read.load(Ordering::SeqCst),
        0,
        "node b read the run's steps: it began to drive the run"
    );
    assert_eq!(
        nodes.node_b.written.load(Ordering::SeqCst)
            + nodes.node_b.fenced_out.load(Ordering::SeqCst),
        0,
        "node b tried to write a checkpoint: it drove the run"
    );
    assert_eq!(nodes.node_a.taken(run).len(), 1);
    each_ran_once(nodes.name);
}

#[tokio::test]
async fn an_engine_that_drove_past_its_lease_cannot_write_over_the_new_holder() {
    let nodes = TwoNodes::new("fenced", 1_500).await;
    let run = nodes.start_on_a_with_b_sweeping().await;
    // Node a is cut off from the database for its renewals, but its drive goes on: when the
    // slow step answers, it tries to record it, long after its lease expired.
    nodes.node_a.renewals_fail.store(true, Ordering::SeqCst);

    let outcome = finished(&nodes.engine_b, run, &nodes.caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(nodes.node_b.taken(run).len(), 1, "node b took the run over");
    for _ in 0..200 {
        if nodes.node_a.fenced_out.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        nodes.node_a.fenced_out.load(Ordering::SeqCst) >= 1,
        "node a's checkpoint after the takeover was refused by the fence"
    );
    // Node a stopped there: it never ran the last step, and nothing ran twice.
    each_ran_once(nodes.name);
    let events = nodes.engine_b.run(run, &nodes.caller).expect("readable");
    assert_eq!(events.state, RunState::Completed);
}

#[tokio::test]
async fn a_cancel_asked_while_another_engine_drives_the_run_takes_effect_when_it_pauses() {
    let registry = registry().await;
    let store = Arc::new(switchboard_workflows::MemoryRunStore::new());
    let name = "cancel-elsewhere";
    let definition = definition(
        name,
        vec![
            tool(
                "slow",
                "probe_touch",
                lit(json!({ "key": format!("{name}-slow"), "sleep_ms": 800 })),
            ),
            node(
                "later",
                switchboard_workflows::NodeKind::Wait(switchboard_workflows::WaitFor::Duration(
                    jiff::SignedDuration::from_mins(10),
                )),
            ),
        ],
    );
    let caller = human(name);
    let engine_a = engine_with(&registry, &store, &definition);
    let engine_b = engine_with(&registry, &store, &definition);
    engine_b
        .recover()
        .await
        .expect("node b recovers (nothing yet)");
    let run = start_until_slow(&engine_a, &definition, &caller, name).await;
    // Node a holds the lease: node b cannot drive the cancel now.
    engine_b
        .cancel(run, &caller)
        .await
        .expect("the cancel is taken");
    let outcome = finished(&engine_b, run, &caller).await;
    assert_eq!(outcome.state, RunState::Cancelled);
    assert_eq!(touches(name, "slow"), 1);
}

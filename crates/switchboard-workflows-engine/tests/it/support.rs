//! Shared helpers: contexts, a registry and an engine, and definitions built in Rust.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::SignedDuration;
use serde_json::{Value, json};
use switchboard_audit::{AuditQuery, AuditRecord};
use switchboard_core::{CallContext, Initiator};
use switchboard_registry::ToolRegistry;
use switchboard_workflows::{
    Block, Checkpoint, Compensation, Definition, EventRecord, Expression, Jitter, Mapping,
    MemoryRunStore, Node, NodeId, NodeKind, NodeState, OnFailure, Retrier, RetryOn, RunId,
    RunStore, RunStoreError, StepRecord,
};
use switchboard_workflows_engine::{Engine, EngineOptions, LeaseOptions, RunOutcome};

/// The longest any wait may take: reaching it means something hangs.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// A context at acme, as `user` with `role`, started by `initiator`.
pub(crate) fn context(user: &str, initiator: Initiator, correlation: &str) -> CallContext {
    CallContext::builder()
        .org("acme")
        .user(user)
        .session(format!("session-{user}"))
        .correlation(correlation)
        .role("admin")
        .initiator(initiator)
        .build()
}

/// A human admin of acme.
pub(crate) fn human(correlation: &str) -> CallContext {
    context("alice", Initiator::Human, correlation)
}

/// An agent acting for the admin of acme.
pub(crate) fn agent(correlation: &str) -> CallContext {
    context("alice", Initiator::Agent, correlation)
}

pub(crate) async fn registry() -> ToolRegistry {
    ToolRegistry::builder()
        .start()
        .await
        .expect("the linked tools are well formed")
}

/// An engine over `registry` and `store`, loading any run's definition as `definition`.
/// The tests' leases: short, so that an engine stopped mid-run (as a crash would) is taken over
/// within a second, with a renewal and a sweep several times a lease.
pub(crate) fn test_lease() -> LeaseOptions {
    LeaseOptions::default()
        .with_duration(Duration::from_millis(600))
        .with_sweep_every(Duration::from_millis(100))
}

pub(crate) fn engine_with<S: RunStore>(
    registry: &ToolRegistry,
    store: &Arc<S>,
    definition: &Arc<Definition>,
) -> Engine {
    let definition = Arc::clone(definition);
    let loader = Arc::new(move |_: &Value| Ok(Arc::clone(&definition)));
    let store: Arc<dyn RunStore> = store.clone();
    Engine::new(
        registry.clone(),
        store,
        EngineOptions {
            max_steps: None,
            loader: Some(loader),
            lease: test_lease(),
            current_trace: None,
        },
    )
}

pub(crate) fn expr(source: &str) -> Mapping {
    Mapping::Expression(Expression::parse(source).expect("the test's expression parses"))
}

pub(crate) fn lit(value: Value) -> Mapping {
    Mapping::Literal(value)
}

pub(crate) fn object<const N: usize>(fields: [(&str, Mapping); N]) -> Mapping {
    Mapping::Object(
        fields
            .into_iter()
            .map(|(name, mapping)| (name.to_owned(), mapping))
            .collect::<BTreeMap<_, _>>(),
    )
}

pub(crate) fn node(id: &str, kind: NodeKind) -> Node {
    Node {
        id: NodeId::new(id),
        description: None,
        kind,
        next: None,
        retry: Vec::new(),
        on_failure: OnFailure::default(),
        compensate: None,
    }
}

pub(crate) fn tool(id: &str, tool: &str, params: Mapping) -> Node {
    node(
        id,
        NodeKind::Tool {
            tool: tool.into(),
            params,
        },
    )
}

pub(crate) fn undo(mut node: Node, tool: &str, params: Mapping) -> Node {
    node.compensate = Some(Compensation {
        tool: tool.into(),
        params,
    });
    node
}

/// A `tool` node `id` assigning `shift_id` to `user_id`, undone by assigning it back to
/// `previous`.
pub(crate) fn reassign(id: &str, shift_id: &str, user_id: &str, previous: &str) -> Node {
    undo(
        tool(
            id,
            "roster_assign_shift",
            object([
                ("shift_id", lit(json!(shift_id))),
                ("user_id", lit(json!(user_id))),
            ]),
        ),
        "roster_assign_shift",
        object([
            ("shift_id", expr("params.shift_id")),
            ("user_id", lit(json!(previous))),
        ]),
    )
}

pub(crate) fn retrier(max_attempts: u32, jitter: Jitter) -> Retrier {
    Retrier {
        errors: vec![RetryOn::RetryableToolError],
        interval: SignedDuration::from_secs(1),
        max_attempts,
        backoff_rate: 2.0,
        max_delay: Some(SignedDuration::from_secs(3)),
        jitter,
    }
}

/// A block running `nodes` in order.
pub(crate) fn block(nodes: Vec<Node>) -> Block {
    let ids: Vec<NodeId> = nodes.iter().map(|node| node.id.clone()).collect();
    let nodes = nodes
        .into_iter()
        .enumerate()
        .map(|(index, mut node)| {
            if node.next.is_none() && !matches!(node.kind, NodeKind::End { .. }) {
                node.next = ids.get(index + 1).cloned();
            }
            node
        })
        .collect();
    Block { nodes }
}

pub(crate) fn definition(name: &str, nodes: Vec<Node>) -> Arc<Definition> {
    Arc::new(Definition {
        name: name.into(),
        description: String::new(),
        input_schema: None,
        output: None,
        max_steps: 100,
        body: block(nodes),
        document: Arc::new(json!({ "name": name })),
    })
}

pub(crate) async fn wait(engine: &Engine, run: RunId, caller: &CallContext) -> RunOutcome {
    tokio::time::timeout(PATIENCE * 100, engine.wait(run, caller))
        .await
        .expect("the run ends in time")
        .expect("the run is readable")
}

/// Waits until the run is paused.
pub(crate) async fn paused(engine: &Engine, run: RunId, caller: &CallContext) {
    for _ in 0..2000 {
        let record = engine.run(run, caller).expect("readable");
        if matches!(record.state, switchboard_workflows::RunState::Paused { .. }) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {run} did not pause");
}

pub(crate) fn step(steps: &[StepRecord], path: &str, iteration: u32) -> StepRecord {
    steps
        .iter()
        .find(|step| step.key.path.as_str() == path && step.key.iteration == iteration)
        .unwrap_or_else(|| panic!("no step {path}#{iteration} in {steps:#?}"))
        .clone()
}

pub(crate) fn state(steps: &[StepRecord], path: &str) -> NodeState {
    step(steps, path, 0).state
}

/// The audit records of one correlation id, oldest first.
pub(crate) async fn audit(registry: &ToolRegistry, correlation: &str) -> Vec<AuditRecord> {
    let mut records = registry
        .audit()
        .query(&AuditQuery::correlation(correlation))
        .await
        .expect("the audit log answers");
    records.sort_by_key(|record| record.id);
    records
}

/// The shift's assignee, read through the registry.
pub(crate) async fn assignee(registry: &ToolRegistry, shift: &str) -> Option<String> {
    let shift = registry
        .invoke(
            "roster_get_shift",
            json!({ "shift_id": shift }),
            &human("read-back"),
        )
        .await
        .expect("the shift exists");
    shift["assignee"].as_str().map(str::to_owned)
}

pub(crate) async fn events(engine: &Engine, run: RunId, caller: &CallContext) -> Vec<EventRecord> {
    use futures::StreamExt;
    let stream = engine.events(run, caller).expect("readable");
    tokio::time::timeout(PATIENCE, stream.collect::<Vec<_>>())
        .await
        .expect("the stream ends with the run")
}

/// What a [`HookedStore`] runs before each commit.
type CommitHook = dyn Fn(&[Checkpoint]) -> Result<(), RunStoreError> + Send + Sync;

/// A memory store whose every commit (a `checkpoint`, or a `checkpoint_all` of several) first
/// goes through a hook, which may count it, or refuse it as a failing store would.
pub(crate) struct HookedStore {
    pub(crate) inner: MemoryRunStore,
    hook: Box<CommitHook>,
}

impl HookedStore {
    pub(crate) fn new(
        hook: impl Fn(&[Checkpoint]) -> Result<(), RunStoreError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: MemoryRunStore::new(),
            hook: Box::new(hook),
        }
    }
}

impl switchboard_workflows::conformance::WrappedStore for HookedStore {
    fn inner(&self) -> &dyn RunStore {
        &self.inner
    }

    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError> {
        (self.hook)(std::slice::from_ref(checkpoint))?;
        self.inner.checkpoint(checkpoint)
    }

    fn checkpoint_all(&self, checkpoints: &[Checkpoint]) -> Result<Vec<u64>, RunStoreError> {
        (self.hook)(checkpoints)?;
        self.inner.checkpoint_all(checkpoints)
    }
}

/// An engine over `store` named `owner` (its lease owner), leasing for `lease` and sweeping
/// every 50 ms, loading any run's definition as `definition`: one of several engines sharing
/// a run store, as the nodes of a fleet do.
pub(crate) fn leasing_engine(
    registry: &ToolRegistry,
    store: Arc<dyn RunStore>,
    definition: &Arc<Definition>,
    owner: &str,
    lease: Duration,
) -> Engine {
    let definition = Arc::clone(definition);
    Engine::new(
        registry.clone(),
        store,
        EngineOptions {
            loader: Some(Arc::new(move |_| Ok(Arc::clone(&definition)))),
            lease: LeaseOptions::default()
                .with_owner(owner)
                .with_duration(lease)
                .with_sweep_every(Duration::from_millis(50)),
            ..EngineOptions::default()
        },
    )
}

/// Three mutating steps; the middle one sleeps `sleep_ms`. Each counts its real runs under its
/// own probe key, prefixed with `name`.
pub(crate) fn three_touches(name: &str, sleep_ms: u64) -> Arc<Definition> {
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

/// How many times the step `step` of the workflow `name` really ran (its probe key is
/// `{name}-{step}`, as [`three_touches`] names them).
pub(crate) fn touches(name: &str, step: &str) -> usize {
    crate::probe::calls(&format!("{name}-{step}")).len()
}

/// Each step of [`three_touches`] named `name` ran exactly once.
pub(crate) fn each_ran_once(name: &str) {
    for step in ["first", "slow", "last"] {
        assert_eq!(touches(name, step), 1, "`{name}-{step}` ran exactly once");
    }
}

/// Waits until the step `slow` of the workflow `name` runs (its probe key `{name}-slow` is
/// touched), at most 10 s.
pub(crate) async fn slow_step_started(name: &str) {
    for _ in 0..2_000 {
        if touches(name, "slow") > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the slow step never started");
}

/// Starts `definition` (the workflow `name`) on `engine`, and waits until its slow step runs.
pub(crate) async fn start_until_slow(
    engine: &Engine,
    definition: &Arc<Definition>,
    caller: &CallContext,
    name: &str,
) -> RunId {
    let run = engine
        .start(Arc::clone(definition), json!({}), caller)
        .await
        .expect("the run starts");
    slow_step_started(name).await;
    run
}

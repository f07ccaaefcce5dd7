//! The engine's handle: starting, waiting for, cancelling and resuming runs, reading them,
//! and their live events; plus the background tasks every engine runs (the scheduler of
//! durable timers, the watcher of proposal decisions, and, once it recovered, the sweep that
//! takes over runs whose engine died).
//!
//! Several engines may share one store (the nodes of a fleet). An engine drives a run only
//! while it holds the run's lease ([`LeaseOptions`]): it takes it before a drive, renews it
//! while driving, and releases it when the drive ends (the run finished or waits). A drive
//! whose lease cannot be taken (another engine holds a live one) does not happen; a drive
//! whose lease is lost (a renewal finds it taken over) stops, and its checkpoints would be
//! refused anyway, since each carries the lease's fence.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use futures::Stream;
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use switchboard_core::{CallContext, OrgId};
use switchboard_registry::ToolRegistry;
use switchboard_workflows::{
    Definition, EventRecord, NodeState, RunId, RunRecord, RunState, RunStore, StepRecord,
    WorkflowEvent,
};
use tokio::sync::{broadcast, mpsc};
use tokio::task::AbortHandle;
use tracing::Instrument as _;

use crate::error::{EngineError, StartError};

mod answer;
mod lease;

pub use answer::Answered;
use lease::sweep;
pub use lease::{HandOver, LeaseOptions};

/// Rebuilds a run's definition from the document its record keeps (`RunRecord::definition`),
/// when a run is resumed or recovered by an engine that did not start it. The CLI plugs the
/// validator in; a test returns its definition.
pub type DefinitionLoader =
    Arc<dyn Fn(&Value) -> Result<Arc<Definition>, String> + Send + Sync + 'static>;

/// How an engine is set up.
#[derive(Clone, Default)]
pub struct EngineOptions {
    /// The most node executions per run, in place of each definition's own `max_steps`.
    pub max_steps: Option<u32>,
    /// How runs this engine did not start get their definition back.
    pub loader: Option<DefinitionLoader>,
    /// The leases by which engines sharing a store drive each run one at a time.
    pub lease: LeaseOptions,
    /// The W3C `traceparent` of the current span, if it belongs to a trace (a process that
    /// exports spans passes `switchboard_telemetry::traceparent::current`). A run started
    /// inside a trace keeps it as its caller's `trace_parent`, so that its steps stay in that
    /// trace when the run is driven again later (after a pause, a restart, on another node).
    pub current_trace: Option<fn() -> Option<String>>,
}

impl std::fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineOptions")
            .field("max_steps", &self.max_steps)
            .field("loader", &self.loader.is_some())
            .field("lease", &self.lease)
            .field("current_trace", &self.current_trace.is_some())
            .finish()
    }
}

/// How often a waiter or an event stream reads the store again when no live event came: the
/// live events are this engine's own, and another engine sharing the store may be driving the
/// run.
const STORE_POLL: Duration = Duration::from_secs(1);

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// The run.
    pub run: RunId,
    /// Its final state: completed, failed or cancelled.
    pub state: RunState,
    /// Its output, when completed.
    pub output: Option<Value>,
}

/// A run that may be stuck: running or initializing, with no event for longer than asked.
#[derive(Debug, Clone, PartialEq)]
pub struct StuckRun {
    /// The run.
    pub run: RunId,
    /// Its organisation.
    pub org_id: OrgId,
    /// Its workflow.
    pub workflow: String,
    /// Its state.
    pub state: RunState,
    /// How long since its last checkpoint.
    pub idle: SignedDuration,
}

/// The engine's clock: the wall-clock time when the engine started, moved on by tokio's
/// clock, so that tests with a paused tokio clock move durable timers too.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    started_at: Timestamp,
    started: tokio::time::Instant,
}

impl Clock {
    fn new() -> Self {
        Self {
            started_at: Timestamp::now(),
            started: tokio::time::Instant::now(),
        }
    }

    pub(crate) fn now(&self) -> Timestamp {
        let elapsed =
            SignedDuration::try_from(self.started.elapsed()).unwrap_or(SignedDuration::MAX);
        self.started_at
            .checked_add(elapsed)
            .unwrap_or(Timestamp::MAX)
    }

    /// The tokio instant of `at`.
    fn instant(&self, at: Timestamp) -> tokio::time::Instant {
        let ahead = at.duration_since(self.now());
        let ahead = Duration::try_from(ahead).unwrap_or(Duration::ZERO);
        tokio::time::Instant::now() + ahead
    }
}

/// A run being driven by a task of this engine.
struct Active {
    /// Drive it once more when the current drive ends (something changed meanwhile).
    again: bool,
    /// Cancel it at its next node.
    cancel: bool,
    task: Option<AbortHandle>,
}

pub(crate) struct Shared {
    pub(crate) registry: ToolRegistry,
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) options: EngineOptions,
    pub(crate) clock: Clock,
    pub(crate) live: broadcast::Sender<EventRecord>,
    definitions: Mutex<HashMap<RunId, Arc<Definition>>>,
    active: Mutex<HashMap<RunId, Active>>,
    /// Runs waiting for a decision on a proposal.
    awaiting_decision: Mutex<HashSet<RunId>>,
    timers: mpsc::UnboundedSender<(Timestamp, RunId)>,
    background: Mutex<Vec<AbortHandle>>,
    /// Whether the takeover sweep was started (by the first `recover`).
    sweeping: AtomicBool,
    /// Cancels asked of runs another engine was driving: the sweep asks again until this
    /// engine gets the lease.
    cancels: Mutex<HashSet<RunId>>,
    /// Set by [`Engine::hand_over`]: no drive starts, and a drive stops before its next node.
    pub(crate) handing_over: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The workflow engine: a cheap-to-clone handle. See the crate docs for the model.
#[derive(Clone)]
pub struct Engine {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine running steps through `registry` and keeping runs in `store`. Starts its
    /// scheduler and its decision watcher: call it inside a tokio runtime. Call
    /// [`recover`](Self::recover) to continue the runs a previous process left unfinished.
    pub fn new(registry: ToolRegistry, store: Arc<dyn RunStore>, options: EngineOptions) -> Self {
        let (timers, timer_requests) = mpsc::unbounded_channel();
        let (live, _) = broadcast::channel(4096);
        let shared = Arc::new(Shared {
            registry,
            store,
            options,
            clock: Clock::new(),
            live,
            definitions: Mutex::new(HashMap::new()),
            active: Mutex::new(HashMap::new()),
            awaiting_decision: Mutex::new(HashSet::new()),
            timers,
            background: Mutex::new(Vec::new()),
            sweeping: AtomicBool::new(false),
            cancels: Mutex::new(HashSet::new()),
            handing_over: AtomicBool::new(false),
        });
        let scheduler = tokio::spawn(schedule(Arc::downgrade(&shared), timer_requests));
        let watcher = tokio::spawn(watch_decisions(
            Arc::downgrade(&shared),
            shared.registry.watch_writes(),
        ));
        lock(&shared.background).extend([scheduler.abort_handle(), watcher.abort_handle()]);
        Self { shared }
    }

    /// Starts a run of `definition` with `input`, acting as `caller`, and returns its id at
    /// once; the run goes on in a task of its own. Refused when the input does not fit the
    /// workflow's `input_schema`.
    pub async fn start(
        &self,
        definition: Arc<Definition>,
        input: Value,
        caller: &CallContext,
    ) -> Result<RunId, StartError> {
        let id = RunId::new();
        self.shared
            .create_run(id, definition, input, caller, None)?;
        // The run's first drive goes on in the span of the call that started it, so that its
        // steps' spans are children of that call's in a trace.
        self.shared.drive_soon(id, false, tracing::Span::current());
        Ok(id)
    }

    /// Starts a run and waits for its end.
    pub async fn run_to_end(
        &self,
        definition: Arc<Definition>,
        input: Value,
        caller: &CallContext,
    ) -> Result<RunOutcome, EngineError> {
        let id = self.start(definition, input, caller).await?;
        self.wait(id, caller).await
    }

    /// Waits until the run is over (completed, failed or cancelled). A paused run keeps this
    /// waiting until someone decides, resumes or cancels it.
    pub async fn wait(&self, run: RunId, caller: &CallContext) -> Result<RunOutcome, EngineError> {
        let mut live = self.shared.live.subscribe();
        loop {
            let record = self.run(run, caller)?;
            if record.state.is_terminal() {
                return Ok(RunOutcome {
                    run,
                    state: record.state,
                    output: record.output,
                });
            }
            loop {
                // Another engine may be driving the run: its events reach this one only
                // through the store, read again every `STORE_POLL`.
                let Ok(received) = tokio::time::timeout(STORE_POLL, live.recv()).await else {
                    break;
                };
                match received {
                    Ok(event) if event.run == run && is_terminal_event(&event.event) => break,
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        break;
                    }
                }
            }
        }
    }

    /// Cancels a run: at its next node if it is running, at once if it waits. The
    /// compensations of its completed steps run first (the saga), then it is `cancelled`. A
    /// run another engine is driving is cancelled once that drive ends (the run waits, or the
    /// other engine's lease expires), by this engine's sweep (after [`recover`](Self::recover)).
    pub async fn cancel(&self, run: RunId, caller: &CallContext) -> Result<(), EngineError> {
        let record = self.run(run, caller)?;
        if record.state.is_terminal() {
            return Err(EngineError::Finished {
                run,
                state: record.state.as_str(),
                action: "cancel",
            });
        }
        self.shared.request_cancel(run);
        Ok(())
    }

    /// Continues a paused run (an escalation a person has looked at, an approval), or an
    /// unfinished one after a crash.
    pub async fn resume(&self, run: RunId, caller: &CallContext) -> Result<(), EngineError> {
        let record = self.run(run, caller)?;
        if record.state.is_terminal() {
            return Err(EngineError::Finished {
                run,
                state: record.state.as_str(),
                action: "resume",
            });
        }
        self.shared.kick(run);
        // Another engine may hold the run's lease: a live one drives it, and a dead one's
        // lease expires; then this engine takes the run over.
        tokio::spawn(lease::retake(
            Arc::downgrade(&self.shared),
            run,
            record.updated_at,
        ));
        Ok(())
    }

    /// Continues every unfinished run in the store, as a process does when it starts: a
    /// running one goes on from its last checkpoint, a waiting one is scheduled (a timer) or
    /// watched (a proposal), and one escalated to a person stays paused. A run another engine
    /// drives (it holds a live lease) is left to it. Returns how many runs it looked at.
    ///
    /// It also starts the takeover sweep, once per engine: every
    /// [`LeaseOptions::sweep_every`], the unfinished runs whose lease expired (their engine
    /// died) or is free are continued the same way.
    pub async fn recover(&self) -> Result<usize, EngineError> {
        let runs = self.shared.store.unfinished_runs()?;
        for run in &runs {
            self.shared.continue_run(run, true)?;
        }
        if !self.shared.sweeping.swap(true, Ordering::SeqCst) {
            let sweep = tokio::spawn(sweep(Arc::downgrade(&self.shared)));
            lock(&self.shared.background).push(sweep.abort_handle());
        }
        Ok(runs.len())
    }

    /// The run, if it belongs to the caller's organisation.
    pub fn run(&self, run: RunId, caller: &CallContext) -> Result<RunRecord, EngineError> {
        let org = org_of(caller)?;
        match self.shared.store.run(run)? {
            Some(record) if record.org_id == org => Ok(record),
            _ => Err(EngineError::RunNotFound(run)),
        }
    }

    /// The caller's organisation's runs, newest first: of one workflow if named, unfinished
    /// ones only if asked, at most `limit`.
    pub fn runs(
        &self,
        caller: &CallContext,
        workflow: Option<&str>,
        unfinished_only: bool,
        limit: usize,
    ) -> Result<Vec<RunRecord>, EngineError> {
        let filter = switchboard_workflows::RunFilter {
            org_id: org_of(caller)?,
            workflow: workflow.map(str::to_owned),
            unfinished_only,
            limit,
        };
        Ok(self.shared.store.list_runs(&filter)?)
    }

    /// The run's steps, in key order, if it belongs to the caller's organisation.
    pub fn steps(&self, run: RunId, caller: &CallContext) -> Result<Vec<StepRecord>, EngineError> {
        self.run(run, caller)?;
        Ok(self.shared.store.steps(run)?)
    }

    /// The run's events from its first, then live as they happen, each once and in order;
    /// the stream ends after the event that ends the run.
    pub fn events(
        &self,
        run: RunId,
        caller: &CallContext,
    ) -> Result<impl Stream<Item = EventRecord> + Send + 'static, EngineError> {
        self.events_after(run, 0, caller)
    }

    /// The run's events numbered after `after` (a watcher's last seen `seq`), then live ones,
    /// as [`events`](Self::events) does; a run that ended at or before `after` has none.
    pub fn events_after(
        &self,
        run: RunId,
        after: u64,
        caller: &CallContext,
    ) -> Result<impl Stream<Item = EventRecord> + Send + 'static, EngineError> {
        self.run(run, caller)?;
        let state = EventCursor {
            shared: Arc::clone(&self.shared),
            run,
            after,
            pending: VecDeque::new(),
            live: self.shared.live.subscribe(),
            ended: false,
        };
        Ok(futures::stream::unfold(state, EventCursor::next))
    }

    /// Running or initializing runs whose last event is older than `threshold`.
    pub fn stuck_runs(&self, threshold: SignedDuration) -> Result<Vec<StuckRun>, EngineError> {
        let now = self.shared.clock.now();
        Ok(self
            .shared
            .store
            .unfinished_runs()?
            .into_iter()
            .filter(|run| matches!(run.state, RunState::Running | RunState::Initializing))
            .filter_map(|run| {
                let idle = now.duration_since(run.updated_at);
                (idle > threshold).then_some(StuckRun {
                    run: run.id,
                    org_id: run.org_id,
                    workflow: run.workflow,
                    state: run.state,
                    idle,
                })
            })
            .collect())
    }

    /// Stops this engine's tasks (runs, scheduler, watcher, sweep) where they are, as a crash
    /// would: the store keeps every run at its last checkpoint, and the leases this engine
    /// held, for another engine to take over once they expire. [`hand_over`](Self::hand_over)
    /// first lets the other engines take the runs over at once.
    pub fn shutdown(&self) {
        for handle in lock(&self.shared.background).drain(..) {
            handle.abort();
        }
        for (_, active) in lock(&self.shared.active).drain() {
            if let Some(task) = active.task {
                task.abort();
            }
        }
    }
}

fn org_of(caller: &CallContext) -> Result<OrgId, EngineError> {
    caller
        .verify()
        .map(|caller| caller.org_id)
        .map_err(|fields| EngineError::MissingContext { fields })
}

pub(crate) fn is_terminal_event(event: &WorkflowEvent) -> bool {
    matches!(event, WorkflowEvent::Run { state, .. } if state.is_terminal())
}

impl Shared {
    /// Stores a new pending run, after checking its caller and its input.
    pub(crate) fn create_run(
        &self,
        id: RunId,
        definition: Arc<Definition>,
        input: Value,
        caller: &CallContext,
        parent: Option<switchboard_workflows::ParentStep>,
    ) -> Result<(), StartError> {
        let verified = caller
            .verify()
            .map_err(|fields| StartError::MissingContext { fields })?;
        if let Some(schema) = &definition.input_schema {
            let validator =
                jsonschema::validator_for(schema).map_err(|error| StartError::InvalidSchema {
                    workflow: definition.name.to_string(),
                    reason: error.to_string(),
                })?;
            let errors: Vec<String> = validator
                .iter_errors(&input)
                .map(|error| format!("{}: {error}", error.instance_path()))
                .collect();
            if !errors.is_empty() {
                return Err(StartError::InvalidInput {
                    workflow: definition.name.to_string(),
                    errors,
                });
            }
        }
        let mut caller = caller.clone();
        caller.idempotency_key = None;
        // Started inside a trace (a call's span): the run keeps that span as its steps' parent.
        if let Some(traceparent) = self.options.current_trace.and_then(|current| current()) {
            caller.trace_parent = Some(traceparent);
        }
        let now = self.clock.now();
        let record = RunRecord {
            id,
            org_id: verified.org_id,
            workflow: definition.name.to_string(),
            definition: Arc::clone(&definition.document),
            input,
            caller,
            parent,
            state: RunState::Pending,
            output: None,
            wake_at: None,
            steps_taken: 0,
            created_at: now,
            updated_at: now,
        };
        self.store.create_run(&record)?;
        lock(&self.definitions).insert(record.id, definition);
        Ok(())
    }
    /// Drives `run` in a task of its own, or once more after its current drive.
    pub(crate) fn kick(self: &Arc<Self>, run: RunId) {
        self.drive_soon(run, false, tracing::Span::none());
    }

    /// Cancels `run` at its next node (at once if it waits), in a drive of its own.
    pub(crate) fn request_cancel(self: &Arc<Self>, run: RunId) {
        self.drive_soon(run, true, tracing::Span::none());
    }

    /// Drives `run` in a task of its own (in `span`), unless a drive of it is under way, which
    /// then goes on once more.
    fn drive_soon(self: &Arc<Self>, run: RunId, cancel: bool, span: tracing::Span) {
        if self.handing_over.load(Ordering::SeqCst) {
            // The run is left to the engines that go on (their sweep takes it).
            return;
        }
        let mut active = lock(&self.active);
        if let Some(entry) = active.get_mut(&run) {
            entry.again = true;
            entry.cancel |= cancel;
            return;
        }
        // The entry exists before the task starts, so the drive sees the cancel.
        active.insert(
            run,
            Active {
                again: false,
                cancel,
                task: None,
            },
        );
        let shared = Arc::clone(self);
        let task =
            tokio::spawn(async move { shared.drive_until_settled(run).await }.instrument(span));
        if let Some(entry) = active.get_mut(&run) {
            entry.task = Some(task.abort_handle());
        }
    }

    pub(crate) fn cancel_requested(&self, run: RunId) -> bool {
        lock(&self.active)
            .get(&run)
            .is_some_and(|entry| entry.cancel)
    }

    pub(crate) fn definition(&self, record: &RunRecord) -> Result<Arc<Definition>, String> {
        if let Some(definition) = lock(&self.definitions).get(&record.id) {
            return Ok(Arc::clone(definition));
        }
        let loader = self.options.loader.as_ref().ok_or_else(|| {
            "this engine has no definition loader (EngineOptions::loader)".to_owned()
        })?;
        let definition = loader(&record.definition)?;
        lock(&self.definitions).insert(record.id, Arc::clone(&definition));
        Ok(definition)
    }

    pub(crate) fn forget(&self, run: RunId) {
        lock(&self.definitions).remove(&run);
        lock(&self.awaiting_decision).remove(&run);
    }

    pub(crate) fn schedule(&self, at: Timestamp, run: RunId) {
        // The scheduler ends only with the engine, and then nothing is left to wake.
        let _ = self.timers.send((at, run));
    }

    pub(crate) fn await_decision(self: &Arc<Self>, run: RunId) {
        lock(&self.awaiting_decision).insert(run);
        let shared = Arc::clone(self);
        tokio::spawn(async move { shared.check_decisions(&[run]).await });
    }

    /// Kicks each run whose awaited proposal is no longer pending.
    async fn check_decisions(self: &Arc<Self>, runs: &[RunId]) {
        for &run in runs {
            if decided(self, run).await {
                lock(&self.awaiting_decision).remove(&run);
                self.kick(run);
            }
        }
    }
}

/// Whether a proposal `run` waits for has been decided (or cannot be read any more), or the
/// run is over (another engine finished it).
async fn decided(shared: &Shared, run: RunId) -> bool {
    let (Ok(Some(record)), Ok(steps)) = (shared.store.run(run), shared.store.steps(run)) else {
        return false;
    };
    if record.state.is_terminal() {
        return true;
    }
    for step in steps {
        let NodeState::WaitingApproval { proposal_id } = &step.state else {
            continue;
        };
        let id = switchboard_core::ProposalId::new(proposal_id.as_str());
        match shared.registry.proposal(&id, &record.caller).await {
            Ok(proposal) => match proposal.status {
                switchboard_registry::ProposalStatus::Pending => {}
                switchboard_registry::ProposalStatus::Approved { .. } => {
                    match shared.registry.approved_outcome(&id, &record.caller).await {
                        Ok(None) => {}
                        Ok(Some(_)) | Err(_) => return true,
                    }
                }
                _ => return true,
            },
            Err(_) => return true,
        }
    }
    false
}

/// Wakes runs whose durable timer is due: one task per engine, whatever the number of runs.
async fn schedule(shared: Weak<Shared>, mut requests: mpsc::UnboundedReceiver<(Timestamp, RunId)>) {
    let mut due: BTreeSet<(Timestamp, RunId)> = BTreeSet::new();
    loop {
        let next = due.first().copied();
        let sleep = async {
            match (next, shared.upgrade()) {
                (Some((at, _)), Some(shared)) => {
                    let instant = shared.clock.instant(at);
                    drop(shared);
                    tokio::time::sleep_until(instant).await;
                }
                _ => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            request = requests.recv() => match request {
                Some(entry) => { due.insert(entry); }
                None => return,
            },
            () = sleep => {
                let Some(shared) = shared.upgrade() else { return };
                let now = shared.clock.now();
                while let Some(&(at, run)) = due.first() {
                    if at > now {
                        break;
                    }
                    due.pop_first();
                    shared.kick(run);
                }
            }
        }
    }
}

/// Notices decisions on proposals that runs wait for: after every write the registry notes
/// (a proposal decided or expired, the approved call ended), the waiting runs are checked.
async fn watch_decisions(shared: Weak<Shared>, mut writes: tokio::sync::watch::Receiver<u64>) {
    while writes.changed().await.is_ok() {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let runs: Vec<RunId> = lock(&shared.awaiting_decision).iter().copied().collect();
        if !runs.is_empty() {
            shared.check_decisions(&runs).await;
        }
    }
}

/// Where an event stream is: stored events first, then live ones, deduplicated by number.
struct EventCursor {
    shared: Arc<Shared>,
    run: RunId,
    after: u64,
    pending: VecDeque<EventRecord>,
    live: broadcast::Receiver<EventRecord>,
    ended: bool,
}

impl EventCursor {
    const PAGE: usize = 256;

    async fn next(mut self) -> Option<(EventRecord, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.after = event.seq;
                if is_terminal_event(&event.event) {
                    self.ended = true;
                }
                return Some((event, self));
            }
            if self.ended {
                return None;
            }
            // Whatever is stored after the last event seen comes first.
            match self.shared.store.events(self.run, self.after, Self::PAGE) {
                Ok(events) if !events.is_empty() => {
                    self.pending.extend(events);
                    continue;
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::error!(%error, run = %self.run, "workflow events not read");
                    return None;
                }
            }
            match self.shared.store.run(self.run) {
                Ok(Some(record)) if record.state.is_terminal() => {
                    // Every event is written before the state it reports is read: none left.
                    if self
                        .shared
                        .store
                        .events(self.run, self.after, 1)
                        .map_or(true, |e| e.is_empty())
                    {
                        return None;
                    }
                    continue;
                }
                Ok(_) => {}
                Err(_) => return None,
            }
            loop {
                // Another engine may be driving the run: its events reach this one only
                // through the store, read again every `STORE_POLL`.
                let Ok(received) = tokio::time::timeout(STORE_POLL, self.live.recv()).await else {
                    break;
                };
                match received {
                    Ok(event) if event.run == self.run && event.seq > self.after => {
                        if event.seq == self.after + 1 {
                            self.pending.push_back(event);
                        }
                        // A gap (the event was written before this cursor subscribed):
                        // read the store again.
                        break;
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        }
    }
}

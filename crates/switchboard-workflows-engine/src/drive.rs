//! Driving one run: the interpreter of its definition's blocks, writing a checkpoint for
//! every transition before acting on it.
//!
//! A drive reads the run and its steps back from the store and walks the definition from its
//! first node. A step recorded completed is not run again: its params and output go back into
//! the scope. A step recorded in flight runs again under the same idempotency key. A drive
//! ends when the run ends, or when it must wait (a timer, a decision, a child run, a person):
//! the run is then `paused` with its wake time stored, and no task is left sleeping for it; or
//! when its engine hands its runs over, before the next node starts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use jiff::Timestamp;
use serde_json::{Map, Value, json};
use switchboard_core::{CallContext, IdempotencyKey, Initiator, InvokeError, ProposalId};
use switchboard_registry::ProposalStatus;
use switchboard_workflows::{
    Block, Checkpoint, CompensationCause, CompensationFailure, Definition, EvaluationError,
    EventRecord, Fence, Mapping, Node, NodeEvent, NodeId, NodeKind, NodePath, NodeState, OnFailure,
    ParentStep, RunChange, RunEvent, RunId, RunRecord, RunState, RunStoreError, Scope, StepKey,
    StepRecord, WaitFor, WorkflowEvent,
};
use tracing::Instrument;

use crate::engine::Shared;
use crate::error::Fault;
use crate::{mapping, retry};

mod ask;
mod call;
mod nodes;
mod saga;
mod withdraw;

/// The field of a `workflow` step's params naming its child run.
pub(crate) const CHILD_RUN: &str = "child_run";

/// Drives `run` until it ends or waits, under the lease `fence` names (every checkpoint
/// carries it, so the store refuses them once another engine took the run over); a fault is
/// logged and leaves the run at its last checkpoint.
pub(crate) async fn drive(shared: &Arc<Shared>, run: RunId, fence: &Fence) {
    let span = tracing::info_span!("workflow.run", run = %run, workflow = tracing::field::Empty);
    match drive_run(shared, run, fence).instrument(span).await {
        Ok(()) => {}
        Err(Fault::Store(RunStoreError::LeaseLost { .. })) => {
            tracing::warn!(
                %run,
                "another engine took the workflow run over: this engine stopped driving it"
            );
        }
        Err(fault) => {
            tracing::error!(%fault, %run, "the workflow run stopped at its last checkpoint");
        }
    }
}

async fn drive_run(shared: &Arc<Shared>, id: RunId, fence: &Fence) -> Result<(), Fault> {
    let Some(record) = shared.store.run(id)? else {
        return Ok(());
    };
    if record.state.is_terminal() {
        shared.forget(id);
        return Ok(());
    }
    tracing::Span::current().record("workflow", record.workflow.as_str());
    let definition = shared
        .definition(&record)
        .map_err(|reason| Fault::Definition { run: id, reason })?;
    let steps = shared.store.steps(id)?;
    let run = Run::new(shared, &record, definition, steps, fence.clone());
    let cancel = shared.cancel_requested(id);
    match &record.state {
        RunState::Compensating { .. } => run.compensate(None).await?,
        RunState::Pending | RunState::Initializing if cancel => {
            run.run_event(RunEvent::Cancel, None, None)?;
        }
        _ if cancel => run.cancel().await?,
        state => {
            match state {
                RunState::Pending => {
                    run.run_event(RunEvent::Start, None, None)?;
                    run.run_event(RunEvent::Initialized, None, None)?;
                }
                RunState::Initializing => {
                    run.run_event(RunEvent::Initialized, None, None)?;
                }
                RunState::Paused { .. } => {
                    run.run_event(RunEvent::Resume, None, None)?;
                }
                _ => {}
            }
            let flow = run
                .run_block(&run.definition.body, None, 0, run.root_scope())
                .await;
            run.settle(flow).await?;
        }
    }
    run.flush()?;
    if run.state().is_terminal() {
        shared.forget(id);
        if let Some(parent) = &record.parent {
            shared.kick(parent.run);
        }
    }
    Ok(())
}

/// When a run waiting for a proposal looks at it unasked: a moment after its expiry, so that
/// the registry, whose clock may lag the engine's a little, sees it expired.
fn after_expiry(expires_at: Timestamp) -> Timestamp {
    expires_at
        .checked_add(jiff::SignedDuration::from_secs(1))
        .unwrap_or(expires_at)
}

/// How a block ended.
enum Flow {
    /// It ran to its end: the last node's output, and the scope its nodes filled.
    Done(Value, Box<Scope>),
    /// An `end` node ended the run with this output.
    End(Value),
}

/// Why a block stopped before its end.
enum Stop {
    /// The run must wait.
    Suspend {
        reason: String,
        wake_at: Option<Timestamp>,
        awaits_decision: bool,
    },
    /// The run fails; `compensate`: its completed steps are undone first.
    Fail { error: String, compensate: bool },
    /// The run was cancelled.
    Cancelled,
    /// The engine hands its runs over ([`crate::Engine::hand_over`]): the drive stops before
    /// this node, leaving the run `running` at its last checkpoint for another engine.
    HandOver,
    /// The engine cannot go on.
    Fault(Fault),
}

impl From<Fault> for Stop {
    fn from(fault: Fault) -> Self {
        Stop::Fault(fault)
    }
}

/// What one node execution led to.
enum NodeDone {
    /// Go on: its params and output, and (a condition) where to go instead of its `next`.
    Output {
        params: Option<Value>,
        output: Value,
        next: Option<Option<NodeId>>,
    },
    /// Go on at this node of the same block (a fallback).
    Goto(NodeId),
    /// End the run with this output.
    End(Value),
}

/// A failed node execution, as its step records it.
struct Failure {
    message: String,
    detail: Value,
}

impl Failure {
    fn invoke(error: InvokeError) -> Self {
        Self {
            message: error.to_string(),
            detail: serde_json::to_value(&error).unwrap_or(Value::Null),
        }
    }

    fn expression(path: &NodePath, error: EvaluationError) -> Self {
        Self {
            message: format!("node `{path}`: {error}"),
            detail: json!({
                "kind": "expression_failed",
                "path": path.as_str(),
                "expression": error.expression,
                "reason": error.reason,
                "saw": error.scope,
            }),
        }
    }

    fn other(kind: &str, message: String) -> Self {
        Self {
            detail: json!({ "kind": kind, "message": message }),
            message,
        }
    }
}

/// Which node executions count against `max_steps`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Counting {
    No,
    Yes,
}

struct Memory {
    state: RunState,
    steps_taken: u32,
    steps: HashMap<(NodePath, u32), StepRecord>,
    next_completed_seq: u64,
    /// How many node executions are `running`: their work is in flight.
    running: usize,
    /// Completions not yet written: they go with the next checkpoint (see [`Run::write`]).
    deferred: Vec<Checkpoint>,
}

/// One drive of one run.
struct Run<'s> {
    shared: &'s Arc<Shared>,
    id: RunId,
    workflow: String,
    input: Value,
    caller: CallContext,
    definition: Arc<Definition>,
    max_steps: u32,
    /// The lease this drive holds: every checkpoint carries it.
    fence: Fence,
    memory: Mutex<Memory>,
}

impl<'s> Run<'s> {
    fn new(
        shared: &'s Arc<Shared>,
        record: &RunRecord,
        definition: Arc<Definition>,
        steps: Vec<StepRecord>,
        fence: Fence,
    ) -> Self {
        let next_completed_seq = steps
            .iter()
            .filter_map(|step| step.completed_seq)
            .max()
            .unwrap_or(0)
            + 1;
        let running = steps
            .iter()
            .filter(|step| matches!(step.state, NodeState::Running { .. }))
            .count();
        let steps = steps
            .into_iter()
            .map(|step| ((step.key.path.clone(), step.key.iteration), step))
            .collect();
        Self {
            shared,
            id: record.id,
            workflow: record.workflow.clone(),
            input: record.input.clone(),
            caller: record.caller.clone(),
            max_steps: shared.options.max_steps.unwrap_or(definition.max_steps),
            definition,
            fence,
            memory: Mutex::new(Memory {
                state: record.state.clone(),
                steps_taken: record.steps_taken,
                steps,
                next_completed_seq,
                running,
                deferred: Vec::new(),
            }),
        }
    }

    fn memory(&self) -> MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn state(&self) -> RunState {
        self.memory().state.clone()
    }

    fn root_scope(&self) -> Scope {
        let mut scope = Scope::new();
        scope
            .set("input", self.input.clone())
            .set("steps", Value::Object(Map::new()))
            .set(
                "run",
                json!({ "id": self.id.to_string(), "workflow": self.workflow }),
            );
        scope
    }

    /// Writes `checkpoint`, after the completions deferred before it and in the same store
    /// transaction, then publishes their events in order.
    ///
    /// A step's completion is deferred when no other node execution is in flight: what the
    /// drive does next is evaluate the next node and write its start, with nothing awaited in
    /// between, so both go in one commit, which halves a durable store's commits per step.
    /// Every wait (a tool call, a timer, a decision, the end of the drive) comes after a write,
    /// so no completion waits on anything but the CPU. A crash before that write loses the
    /// completion as a crash just before it would have: the step runs again under the same
    /// idempotency key, which replays its result.
    fn write(&self, memory: &mut Memory, checkpoint: Checkpoint) -> Result<(), Fault> {
        let mut batch = std::mem::take(&mut memory.deferred);
        batch.push(checkpoint);
        let seqs = match batch.as_slice() {
            [single] => vec![self.shared.store.checkpoint(single)?],
            all => self.shared.store.checkpoint_all(all)?,
        };
        for (checkpoint, seq) in batch.into_iter().zip(seqs) {
            // Nobody listening is fine: the event is stored.
            let _ = self.shared.live.send(EventRecord {
                run: self.id,
                seq,
                at: checkpoint.at,
                event: checkpoint.event,
            });
        }
        Ok(())
    }

    /// Writes the deferred completions, if any: before the drive ends.
    fn flush(&self) -> Result<(), Fault> {
        let mut memory = self.memory();
        let Some(last) = memory.deferred.pop() else {
            return Ok(());
        };
        self.write(&mut memory, last)
    }

    fn run_event(
        &self,
        event: RunEvent,
        output: Option<Value>,
        wake_at: Option<Timestamp>,
    ) -> Result<RunState, Fault> {
        let mut memory = self.memory();
        let next = memory.state.apply(event.clone())?;
        let checkpoint = Checkpoint {
            run: self.id,
            at: self.shared.clock.now(),
            run_change: Some(RunChange {
                from: memory.state.clone(),
                to: next.clone(),
                output,
                wake_at,
                steps_taken: memory.steps_taken,
            }),
            step: None,
            event: WorkflowEvent::Run {
                event,
                state: next.clone(),
            },
            fence: Some(self.fence.clone()),
        };
        self.write(&mut memory, checkpoint)?;
        memory.state = next.clone();
        Ok(next)
    }

    /// Moves one step by `event`, with `change` applied to its record, in one checkpoint.
    fn node_event(
        &self,
        path: &NodePath,
        iteration: u32,
        event: NodeEvent,
        counting: Counting,
        retry_at: Option<Timestamp>,
        change: impl FnOnce(&mut StepRecord),
    ) -> Result<NodeState, Fault> {
        let now = self.shared.clock.now();
        let mut memory = self.memory();
        let key = (path.clone(), iteration);
        let mut step = memory
            .steps
            .get(&key)
            .cloned()
            .unwrap_or_else(|| StepRecord {
                key: StepKey {
                    run: self.id,
                    path: path.clone(),
                    iteration,
                },
                state: NodeState::Pending,
                params: None,
                output: None,
                error: None,
                completed_seq: None,
                questions: Vec::new(),
                started_at: now,
                updated_at: now,
            });
        let was_running = matches!(step.state, NodeState::Running { .. });
        step.state = step.state.apply(event.clone())?;
        change(&mut step);
        step.updated_at = now;
        if step.state == NodeState::Completed {
            step.completed_seq = Some(memory.next_completed_seq);
        }
        let steps_taken = memory.steps_taken + u32::from(counting == Counting::Yes);
        let state = step.state.clone();
        let running = (memory.running + usize::from(matches!(state, NodeState::Running { .. })))
            .saturating_sub(usize::from(was_running));
        let checkpoint = Checkpoint {
            run: self.id,
            at: now,
            run_change: (counting == Counting::Yes).then(|| RunChange {
                from: memory.state.clone(),
                to: memory.state.clone(),
                output: None,
                wake_at: None,
                steps_taken,
            }),
            event: WorkflowEvent::Node {
                path: path.clone(),
                iteration,
                event,
                state: state.clone(),
                retry_at,
            },
            step: Some(step.clone()),
            fence: Some(self.fence.clone()),
        };
        if state == NodeState::Completed && checkpoint.run_change.is_none() && running == 0 {
            memory.deferred.push(checkpoint);
        } else {
            self.write(&mut memory, checkpoint)?;
        }
        if state == NodeState::Completed {
            memory.next_completed_seq += 1;
        }
        memory.running = running;
        memory.steps_taken = steps_taken;
        memory.steps.insert(key, step);
        Ok(state)
    }

    /// Refuses one more node execution once the run has made `max_steps`.
    fn take_step(&self) -> Result<(), Stop> {
        if self.memory().steps_taken >= self.max_steps {
            return Err(Stop::Fail {
                error: format!(
                    "the run reached its maximum of {} steps (attempts, iterations and \
                     compensations count): it may loop; raise `max_steps` if it needs more",
                    self.max_steps
                ),
                compensate: true,
            });
        }
        Ok(())
    }

    /// Starts an attempt unless one is in flight (resumed after a crash); returns its number.
    fn start(
        &self,
        path: &NodePath,
        iteration: u32,
        state: &NodeState,
        params: Option<&Value>,
    ) -> Result<u32, Stop> {
        if let NodeState::Running { attempt } = state {
            return Ok(*attempt);
        }
        self.take_step()?;
        let params = params.cloned();
        let state = self.node_event(
            path,
            iteration,
            NodeEvent::Start,
            Counting::Yes,
            None,
            |step| {
                if params.is_some() {
                    step.params = params;
                }
            },
        )?;
        Ok(match state {
            NodeState::Running { attempt } => attempt,
            _ => 1,
        })
    }

    fn stored(&self, path: &NodePath, iteration: u32) -> Option<StepRecord> {
        self.memory().steps.get(&(path.clone(), iteration)).cloned()
    }

    /// The run's end, from how its top block ended.
    async fn settle(&self, flow: Result<Flow, Stop>) -> Result<(), Fault> {
        match flow {
            Ok(Flow::Done(_, scope)) => {
                let output = match &self.definition.output {
                    None => Ok(Value::Null),
                    Some(mapping) => mapping::evaluate(mapping, &scope)
                        .map_err(|error| format!("the workflow's output mapping failed: {error}")),
                };
                match output {
                    Ok(output) => {
                        self.run_event(RunEvent::Complete, Some(output), None)?;
                    }
                    Err(error) => self.fail(error, true).await?,
                }
            }
            Ok(Flow::End(output)) => {
                self.run_event(RunEvent::Complete, Some(output), None)?;
            }
            Err(Stop::Suspend {
                reason,
                wake_at,
                awaits_decision,
            }) => {
                self.run_event(RunEvent::Pause { reason }, None, wake_at)?;
                if let Some(at) = wake_at {
                    self.shared.schedule(at, self.id);
                }
                if awaits_decision {
                    self.shared.await_decision(self.id);
                }
            }
            Err(Stop::Fail { error, compensate }) => self.fail(error, compensate).await?,
            Err(Stop::Cancelled) => self.cancel().await?,
            Err(Stop::HandOver) => {
                tracing::info!(run = %self.id, "the workflow run is handed over at its next node");
            }
            Err(Stop::Fault(fault)) => return Err(fault),
        }
        Ok(())
    }

    async fn fail(&self, error: String, compensate: bool) -> Result<(), Fault> {
        self.withdraw_proposals("failed").await?;
        if compensate && self.has_compensations() {
            self.compensate(Some(CompensationCause::Failed { error }))
                .await
        } else {
            self.run_event(RunEvent::Fail { error }, None, None)
                .map(drop)
        }
    }

    async fn cancel(&self) -> Result<(), Fault> {
        // A child run still going is cancelled with its parent (it undoes its own steps).
        let children: Vec<RunId> = self
            .memory()
            .steps
            .values()
            .filter(|step| matches!(step.state, NodeState::Running { .. }))
            .filter_map(|step| step.params.as_ref()?.get(CHILD_RUN)?.as_str()?.parse().ok())
            .collect();
        for child in children {
            if let Ok(Some(record)) = self.shared.store.run(child)
                && !record.state.is_terminal()
            {
                self.shared.request_cancel(child);
            }
        }
        self.withdraw_proposals("was cancelled").await?;
        if self.has_compensations() {
            self.compensate(Some(CompensationCause::Cancelled)).await
        } else {
            self.run_event(RunEvent::Cancel, None, None).map(drop)
        }
    }

    fn mutates(&self, tool: &str) -> bool {
        self.shared
            .registry
            .find(tool)
            .is_some_and(|tool| tool.category.mutates())
    }
}

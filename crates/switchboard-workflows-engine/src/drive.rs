//! Driving one run: the interpreter of its definition's blocks, writing a checkpoint for
//! every transition before acting on it.
//!
//! A drive reads the run and its steps back from the store and walks the definition from its
//! first node. A step recorded completed is not run again: its params and output go back into
//! the scope. A step recorded in flight runs again under the same idempotency key. A drive
//! ends when the run ends, or when it must wait (a timer, a decision, a child run, a person):
//! the run is then `paused` with its wake time stored, and no task is left sleeping for it.

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
    EventRecord, Mapping, Node, NodeEvent, NodeId, NodeKind, NodePath, NodeState, OnFailure,
    ParentStep, RunChange, RunEvent, RunId, RunRecord, RunState, Scope, StepKey, StepRecord,
    WaitFor, WorkflowEvent,
};
use tracing::Instrument;

use crate::engine::Shared;
use crate::error::Fault;
use crate::{mapping, retry};

/// The field of a `workflow` step's params naming its child run.
pub(crate) const CHILD_RUN: &str = "child_run";

/// Drives `run` until it ends or waits; a fault is logged and leaves the run at its last
/// checkpoint.
pub(crate) async fn drive(shared: &Arc<Shared>, run: RunId) {
    let span = tracing::info_span!("workflow.run", run = %run, workflow = tracing::field::Empty);
    if let Err(fault) = drive_run(shared, run).instrument(span).await {
        tracing::error!(%fault, %run, "the workflow run stopped at its last checkpoint");
    }
}

async fn drive_run(shared: &Arc<Shared>, id: RunId) -> Result<(), Fault> {
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
    let run = Run::new(shared, &record, definition, steps);
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
    if run.state().is_terminal() {
        shared.forget(id);
        if let Some(parent) = &record.parent {
            shared.kick(parent.run);
        }
    }
    Ok(())
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
    memory: Mutex<Memory>,
}

impl<'s> Run<'s> {
    fn new(
        shared: &'s Arc<Shared>,
        record: &RunRecord,
        definition: Arc<Definition>,
        steps: Vec<StepRecord>,
    ) -> Self {
        let next_completed_seq = steps
            .iter()
            .filter_map(|step| step.completed_seq)
            .max()
            .unwrap_or(0)
            + 1;
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
            memory: Mutex::new(Memory {
                state: record.state.clone(),
                steps_taken: record.steps_taken,
                steps,
                next_completed_seq,
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

    /// Writes the event and its new state, then publishes it.
    fn write(&self, checkpoint: &Checkpoint) -> Result<(), Fault> {
        let seq = self.shared.store.checkpoint(checkpoint)?;
        // Nobody listening is fine: the event is stored.
        let _ = self.shared.live.send(EventRecord {
            run: self.id,
            seq,
            at: checkpoint.at,
            event: checkpoint.event.clone(),
        });
        Ok(())
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
        };
        self.write(&checkpoint)?;
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
                started_at: now,
                updated_at: now,
            });
        step.state = step.state.apply(event.clone())?;
        change(&mut step);
        step.updated_at = now;
        if step.state == NodeState::Completed {
            step.completed_seq = Some(memory.next_completed_seq);
        }
        let steps_taken = memory.steps_taken + u32::from(counting == Counting::Yes);
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
                state: step.state.clone(),
                retry_at,
            },
            step: Some(step),
        };
        self.write(&checkpoint)?;
        let Some(step) = checkpoint.step else {
            return Err(Fault::Store(
                switchboard_workflows::RunStoreError::Backend {
                    action: "recording a step".to_owned(),
                    reason: "the checkpoint lost its step".to_owned(),
                },
            ));
        };
        if step.state == NodeState::Completed {
            memory.next_completed_seq += 1;
        }
        memory.steps_taken = steps_taken;
        let state = step.state.clone();
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
            Err(Stop::Fault(fault)) => return Err(fault),
        }
        Ok(())
    }

    async fn fail(&self, error: String, compensate: bool) -> Result<(), Fault> {
        if compensate && self.has_compensations() {
            self.compensate(Some(CompensationCause::Failed { error }))
                .await
        } else {
            self.run_event(RunEvent::Fail { error }, None, None)
                .map(drop)
        }
    }

    async fn cancel(&self) -> Result<(), Fault> {
        if self.has_compensations() {
            self.compensate(Some(CompensationCause::Cancelled)).await
        } else {
            self.run_event(RunEvent::Cancel, None, None).map(drop)
        }
    }

    /// The completed steps with a compensation, last completed first.
    fn compensable(&self) -> Vec<StepRecord> {
        let mut steps: Vec<StepRecord> = self
            .memory()
            .steps
            .values()
            .filter(|step| {
                matches!(step.state, NodeState::Completed | NodeState::Compensating)
                    && step.completed_seq.is_some()
            })
            .filter(|step| {
                mapping::find_node(&self.definition, step.key.path.as_str())
                    .is_some_and(|node| node.compensate.is_some())
            })
            .cloned()
            .collect();
        steps.sort_by_key(|step| std::cmp::Reverse(step.completed_seq));
        steps
    }

    fn has_compensations(&self) -> bool {
        !self.compensable().is_empty()
    }

    /// The saga: undoes the completed steps in reverse order of completion, each through the
    /// registry as the run's caller; the first failing undo stops it and fails the run with
    /// that failure attached.
    async fn compensate(&self, cause: Option<CompensationCause>) -> Result<(), Fault> {
        if let Some(cause) = cause {
            self.run_event(RunEvent::Compensate { cause }, None, None)?;
        }
        let top_steps = self.top_steps();
        for step in self.compensable() {
            let path = &step.key.path;
            let iteration = step.key.iteration;
            let Some(compensation) = mapping::find_node(&self.definition, path.as_str())
                .and_then(|node| node.compensate.as_ref())
            else {
                continue;
            };
            let span = tracing::info_span!(
                "workflow.step",
                run = %self.id,
                path = %path,
                iteration,
                compensation = true,
            );
            if step.state == NodeState::Completed {
                self.node_event(
                    path,
                    iteration,
                    NodeEvent::Compensate,
                    Counting::Yes,
                    None,
                    |_| {},
                )?;
            }
            let mut scope = self.root_scope();
            scope
                .set("steps", top_steps.clone())
                .set("params", step.params.clone().unwrap_or(Value::Null))
                .set("output", step.output.clone().unwrap_or(Value::Null));
            let result = match mapping::evaluate(&compensation.params, &scope) {
                Err(error) => Err(Failure::expression(path, error)),
                Ok(params) => {
                    let mut context = self.caller.clone();
                    context.idempotency_key = Some(IdempotencyKey::new(format!(
                        "wf:{}:{path}:{iteration}:undo",
                        self.id
                    )))
                    .filter(|_| self.mutates(&compensation.tool));
                    self.shared
                        .registry
                        .invoke(&compensation.tool, params, &context)
                        .instrument(span)
                        .await
                        .map_err(Failure::invoke)
                }
            };
            match result {
                Ok(_) => {
                    self.node_event(
                        path,
                        iteration,
                        NodeEvent::Compensated,
                        Counting::No,
                        None,
                        |_| {},
                    )?;
                }
                Err(failure) => {
                    let message = failure.message.clone();
                    self.node_event(
                        path,
                        iteration,
                        NodeEvent::CompensationFailed {
                            error: message.clone(),
                        },
                        Counting::No,
                        None,
                        |step| step.error = Some(failure.detail),
                    )?;
                    self.run_event(
                        RunEvent::CompensationFailed {
                            failure: CompensationFailure {
                                node: path.to_string(),
                                error: message,
                            },
                        },
                        None,
                        None,
                    )?;
                    return Ok(());
                }
            }
        }
        self.run_event(RunEvent::CompensationsDone, None, None)?;
        Ok(())
    }

    /// `{ id: { params, output } }` of the top block's completed steps.
    fn top_steps(&self) -> Value {
        let memory = self.memory();
        let steps = memory
            .steps
            .values()
            .filter(|step| !step.key.path.as_str().contains('/') && step.completed_seq.is_some())
            .map(|step| {
                (
                    step.key.path.to_string(),
                    json!({ "params": step.params, "output": step.output }),
                )
            })
            .collect();
        Value::Object(steps)
    }

    fn mutates(&self, tool: &str) -> bool {
        self.shared
            .registry
            .find(tool)
            .is_some_and(|tool| tool.category.mutates())
    }

    /// Runs `block` from its first node, each node's step under `prefix`.
    fn run_block<'a>(
        &'a self,
        block: &'a Block,
        prefix: Option<&'a NodePath>,
        iteration: u32,
        mut scope: Scope,
    ) -> BoxFuture<'a, Result<Flow, Stop>> {
        async move {
            let mut current = block.nodes.first();
            let mut last_output = Value::Null;
            while let Some(node) = current {
                let path = match prefix {
                    Some(prefix) => prefix.child(node.id.as_str()),
                    None => NodePath::root(&node.id),
                };
                let next = match self.exec_node(node, path, iteration, &scope).await? {
                    NodeDone::End(output) => return Ok(Flow::End(output)),
                    NodeDone::Goto(id) => Some(id),
                    NodeDone::Output {
                        params,
                        output,
                        next,
                    } => {
                        if let Some(Value::Object(steps)) = scope.get_mut("steps") {
                            steps.insert(
                                node.id.to_string(),
                                json!({ "params": params, "output": output }),
                            );
                        }
                        last_output = output;
                        next.unwrap_or_else(|| node.next.clone())
                    }
                };
                current = next.and_then(|id| block.node(&id));
            }
            Ok(Flow::Done(last_output, Box::new(scope)))
        }
        .boxed()
    }

    fn exec_node<'a>(
        &'a self,
        node: &'a Node,
        path: NodePath,
        iteration: u32,
        scope: &'a Scope,
    ) -> BoxFuture<'a, Result<NodeDone, Stop>> {
        let span = tracing::info_span!(
            "workflow.step",
            run = %self.id,
            path = %path,
            iteration,
            attempt = tracing::field::Empty,
        );
        async move {
            let stored = self.stored(&path, iteration);
            let state = stored
                .as_ref()
                .map_or(NodeState::Pending, |step| step.state.clone());
            match (&state, stored.as_ref()) {
                (
                    NodeState::Completed
                    | NodeState::Compensating
                    | NodeState::Compensated
                    | NodeState::CompensationFailed { .. },
                    Some(step),
                ) => {
                    let output = step.output.clone().unwrap_or(Value::Null);
                    let params = step.params.clone();
                    return Ok(match &node.kind {
                        NodeKind::End { .. } => NodeDone::End(output),
                        NodeKind::Condition { .. } => NodeDone::Output {
                            next: Some(chosen_next(&output)),
                            params,
                            output,
                        },
                        _ => NodeDone::Output {
                            params,
                            output,
                            next: None,
                        },
                    });
                }
                (NodeState::Skipped { .. }, Some(step)) => {
                    return Ok(NodeDone::Output {
                        params: step.params.clone(),
                        output: Value::Null,
                        next: None,
                    });
                }
                (NodeState::Failed { error }, _) => {
                    return after_failure(node, &path, error.clone());
                }
                _ => {}
            }
            if self.shared.cancel_requested(self.id) {
                return Err(Stop::Cancelled);
            }
            let stored_params = stored.and_then(|step| step.params);
            match &node.kind {
                NodeKind::Tool { tool, params } => {
                    self.exec_call(
                        node,
                        &path,
                        iteration,
                        scope,
                        state,
                        stored_params,
                        tool,
                        params,
                        None,
                        false,
                    )
                    .await
                }
                NodeKind::Approval {
                    tool,
                    params,
                    summary,
                } => {
                    self.exec_call(
                        node,
                        &path,
                        iteration,
                        scope,
                        state,
                        stored_params,
                        tool,
                        params,
                        summary.as_ref(),
                        true,
                    )
                    .await
                }
                NodeKind::Condition {
                    branches,
                    otherwise,
                } => {
                    self.start(&path, iteration, &state, None)?;
                    let mut chosen = None;
                    for branch in branches {
                        match branch.when.evaluate_bool(scope) {
                            Ok(true) => {
                                chosen = Some(branch.next.clone());
                                break;
                            }
                            Ok(false) => {}
                            Err(error) => {
                                return self.final_failure(
                                    node,
                                    &path,
                                    iteration,
                                    None,
                                    Failure::expression(&path, error),
                                    true,
                                );
                            }
                        }
                    }
                    let chosen = chosen.or_else(|| otherwise.clone());
                    let output = json!({ "next": chosen.as_ref().map(NodeId::as_str) });
                    self.complete(&path, iteration, output.clone())?;
                    Ok(NodeDone::Output {
                        params: None,
                        output,
                        next: Some(chosen),
                    })
                }
                NodeKind::Wait(wait_for) => {
                    self.exec_wait(node, &path, iteration, scope, state, wait_for)
                }
                NodeKind::End { output } => {
                    self.start(&path, iteration, &state, None)?;
                    let mapping = output.as_ref().or(self.definition.output.as_ref());
                    let output = match mapping.map(|mapping| mapping::evaluate(mapping, scope)) {
                        None => Value::Null,
                        Some(Ok(output)) => output,
                        Some(Err(error)) => {
                            return self.final_failure(
                                node,
                                &path,
                                iteration,
                                None,
                                Failure::expression(&path, error),
                                true,
                            );
                        }
                    };
                    self.complete(&path, iteration, output.clone())?;
                    Ok(NodeDone::End(output))
                }
                NodeKind::Workflow { definition, input } => self.exec_child(
                    node,
                    &path,
                    iteration,
                    scope,
                    state,
                    stored_params,
                    definition,
                    input,
                ),
                NodeKind::Foreach {
                    items,
                    item,
                    max_items,
                    concurrency,
                    body,
                } => {
                    self.start(&path, iteration, &state, None)?;
                    let list = match items.evaluate(scope) {
                        Ok(Value::Array(list)) => list,
                        Ok(other) => {
                            let failure = Failure::other(
                                "not_a_list",
                                format!(
                                    "node `{path}`: `{items}` must give a list to iterate over, \
                                     and it gave {other}"
                                ),
                            );
                            return self.final_failure(node, &path, iteration, None, failure, true);
                        }
                        Err(error) => {
                            let failure = Failure::expression(&path, error);
                            return self.final_failure(node, &path, iteration, None, failure, true);
                        }
                    };
                    if list.len() > *max_items as usize {
                        let failure = Failure::other(
                            "too_many_items",
                            format!(
                                "node `{path}`: the list has {} items, more than its max_items \
                                 of {max_items}",
                                list.len()
                            ),
                        );
                        return self.final_failure(node, &path, iteration, None, failure, true);
                    }
                    let mut runs = Vec::with_capacity(list.len());
                    for (index, value) in list.into_iter().enumerate() {
                        let mut child_scope = scope.clone();
                        child_scope
                            .set(item.to_string(), value)
                            .set("index", json!(index));
                        let index = u32::try_from(index).unwrap_or(u32::MAX);
                        runs.push(self.run_block(body, Some(&path), index, child_scope));
                    }
                    let flows: Vec<Result<Flow, Stop>> = futures::stream::iter(runs)
                        .buffered(usize::try_from(*concurrency).unwrap_or(1).max(1))
                        .collect()
                        .await;
                    let outputs = self.join(&path, iteration, flows)?;
                    match outputs {
                        Joined::End(output) => Ok(NodeDone::End(output)),
                        Joined::Outputs(outputs) => {
                            let output = Value::Array(outputs);
                            self.complete(&path, iteration, output.clone())?;
                            Ok(NodeDone::Output {
                                params: None,
                                output,
                                next: None,
                            })
                        }
                    }
                }
                NodeKind::Parallel {
                    branches,
                    concurrency,
                } => {
                    self.start(&path, iteration, &state, None)?;
                    let prefixes: Vec<NodePath> =
                        branches.iter().map(|(name, _)| path.child(name)).collect();
                    let mut runs = Vec::with_capacity(branches.len());
                    for ((_, block), prefix) in branches.iter().zip(&prefixes) {
                        runs.push(self.run_block(block, Some(prefix), iteration, scope.clone()));
                    }
                    let flows: Vec<Result<Flow, Stop>> = futures::stream::iter(runs)
                        .buffered(usize::try_from(*concurrency).unwrap_or(1).max(1))
                        .collect()
                        .await;
                    match self.join(&path, iteration, flows)? {
                        Joined::End(output) => Ok(NodeDone::End(output)),
                        Joined::Outputs(outputs) => {
                            let output: Map<String, Value> = branches
                                .iter()
                                .map(|(name, _)| name.to_string())
                                .zip(outputs)
                                .collect();
                            let output = Value::Object(output);
                            self.complete(&path, iteration, output.clone())?;
                            Ok(NodeDone::Output {
                                params: None,
                                output,
                                next: None,
                            })
                        }
                    }
                }
            }
        }
        .instrument(span)
        .boxed()
    }

    /// Joins the blocks a `foreach` or `parallel` node ran: their outputs in order, or the
    /// first reason to stop (a failure fails the node; waits are merged).
    fn join(
        &self,
        path: &NodePath,
        iteration: u32,
        flows: Vec<Result<Flow, Stop>>,
    ) -> Result<Joined, Stop> {
        let mut outputs = Vec::with_capacity(flows.len());
        let mut end = None;
        let mut stop: Option<Stop> = None;
        for flow in flows {
            match flow {
                Ok(Flow::Done(output, _)) => outputs.push(output),
                Ok(Flow::End(output)) => end = end.or(Some(output)),
                Err(next) => stop = Some(merge(stop, next)),
            }
        }
        match stop {
            Some(Stop::Fail { error, compensate }) => {
                self.node_event(
                    path,
                    iteration,
                    NodeEvent::Fail {
                        error: error.clone(),
                    },
                    Counting::No,
                    None,
                    |step| step.error = Some(json!({ "kind": "block_failed", "message": error })),
                )?;
                Err(Stop::Fail { error, compensate })
            }
            Some(other) => Err(other),
            None => Ok(match end {
                Some(output) => Joined::End(output),
                None => Joined::Outputs(outputs),
            }),
        }
    }

    fn complete(&self, path: &NodePath, iteration: u32, output: Value) -> Result<(), Fault> {
        self.node_event(
            path,
            iteration,
            NodeEvent::Complete,
            Counting::No,
            None,
            |step| step.output = Some(output),
        )
        .map(drop)
    }

    /// A `tool` or `approval` node: the call (or its proposal), with retries.
    #[allow(
        clippy::too_many_arguments,
        reason = "the node's parts, passed down as the definition holds them"
    )]
    async fn exec_call(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        scope: &Scope,
        mut state: NodeState,
        stored_params: Option<Value>,
        tool: &str,
        params: &Mapping,
        summary: Option<&switchboard_workflows::Expression>,
        always_propose: bool,
    ) -> Result<NodeDone, Stop> {
        if let NodeState::WaitingApproval { proposal_id } = &state {
            return self
                .check_decision(node, path, iteration, stored_params, proposal_id)
                .await;
        }
        let params = match stored_params {
            Some(params) => params,
            None => match mapping::evaluate(params, scope) {
                Ok(params) => params,
                Err(error) => {
                    self.start(path, iteration, &state, None)?;
                    let failure = Failure::expression(path, error);
                    return self.final_failure(node, path, iteration, None, failure, true);
                }
            },
        };
        let mutates = self.mutates(tool);
        let propose = always_propose || (mutates && self.caller.initiator == Initiator::Agent);
        loop {
            let attempt = self.start(path, iteration, &state, Some(&params))?;
            tracing::Span::current().record("attempt", attempt);
            let result = if propose {
                let summary = match summary.map(|summary| summary.evaluate(scope)) {
                    None => None,
                    Some(Ok(Value::String(text))) => Some(text),
                    Some(Ok(other)) => Some(other.to_string()),
                    Some(Err(error)) => {
                        let failure = Failure::expression(path, error);
                        return self.final_failure(
                            node,
                            path,
                            iteration,
                            Some(params),
                            failure,
                            true,
                        );
                    }
                };
                match self
                    .shared
                    .registry
                    .propose(tool, params.clone(), &self.caller, summary.as_deref())
                    .await
                {
                    Ok(proposal) => {
                        let proposal_id = proposal.id.to_string();
                        self.node_event(
                            path,
                            iteration,
                            NodeEvent::AwaitApproval {
                                proposal_id: proposal_id.clone(),
                            },
                            Counting::No,
                            None,
                            |_| {},
                        )?;
                        return Err(Stop::Suspend {
                            reason: format!(
                                "node `{path}` waits for a person to decide on proposal \
                                 {proposal_id} (`{tool}`)"
                            ),
                            wake_at: None,
                            awaits_decision: true,
                        });
                    }
                    Err(error) => Err(error),
                }
            } else {
                let mut context = self.caller.clone();
                if mutates {
                    context.idempotency_key = Some(IdempotencyKey::new(format!(
                        "wf:{}:{path}:{iteration}:{attempt}",
                        self.id
                    )));
                }
                self.shared
                    .registry
                    .invoke(tool, params.clone(), &context)
                    .await
            };
            let error = match result {
                Ok(output) => {
                    self.complete(path, iteration, output.clone())?;
                    return Ok(NodeDone::Output {
                        params: Some(params),
                        output,
                        next: None,
                    });
                }
                Err(error) => error,
            };
            let retrier = node
                .retry
                .iter()
                .find(|retrier| retry::matches(retrier, &error))
                .filter(|retrier| attempt < retrier.max_attempts);
            let Some(retrier) = retrier else {
                let failure = Failure::invoke(error);
                return self.final_failure(node, path, iteration, Some(params), failure, true);
            };
            let wait = retry::delay(retrier, attempt);
            let retry_at = self
                .shared
                .clock
                .now()
                .checked_add(
                    jiff::SignedDuration::try_from(wait).unwrap_or(jiff::SignedDuration::MAX),
                )
                .ok();
            let failure = Failure::invoke(error);
            state = self.node_event(
                path,
                iteration,
                NodeEvent::Retry {
                    error: failure.message,
                },
                Counting::No,
                retry_at,
                |step| step.error = Some(failure.detail),
            )?;
            tokio::time::sleep(wait).await;
        }
    }

    /// A node waiting for a decision on its proposal: completes with the approved call's
    /// output, fails when rejected or expired, or keeps waiting.
    async fn check_decision(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        params: Option<Value>,
        proposal_id: &str,
    ) -> Result<NodeDone, Stop> {
        let waiting = || Stop::Suspend {
            reason: format!("node `{path}` waits for a person to decide on proposal {proposal_id}"),
            wake_at: None,
            awaits_decision: true,
        };
        let id = ProposalId::new(proposal_id);
        let proposal = match self.shared.registry.proposal(&id, &self.caller).await {
            Ok(proposal) => proposal,
            Err(error) => {
                return self.final_failure(
                    node,
                    path,
                    iteration,
                    params,
                    Failure::invoke(error),
                    false,
                );
            }
        };
        let failure = match &proposal.status {
            ProposalStatus::Pending => return Err(waiting()),
            ProposalStatus::Approved { .. } => {
                match self.shared.registry.approved_outcome(&proposal).await {
                    None => return Err(waiting()),
                    Some(Ok(output)) => {
                        self.complete(path, iteration, output.clone())?;
                        return Ok(NodeDone::Output {
                            params,
                            output,
                            next: None,
                        });
                    }
                    Some(Err(error)) => Failure::invoke(error),
                }
            }
            ProposalStatus::Rejected { by, feedback, .. } => Failure::other(
                "proposal_rejected",
                format!("node `{path}`: proposal {proposal_id} was rejected by {by}: {feedback}"),
            ),
            other => Failure::other(
                "proposal_closed",
                format!(
                    "node `{path}`: proposal {proposal_id} is {}",
                    other.as_str()
                ),
            ),
        };
        self.final_failure(node, path, iteration, params, failure, false)
    }

    fn exec_wait(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        scope: &Scope,
        state: NodeState,
        wait_for: &WaitFor,
    ) -> Result<NodeDone, Stop> {
        let now = self.shared.clock.now();
        let until = match state {
            NodeState::WaitingTimer { until } => until,
            state => {
                self.start(path, iteration, &state, None)?;
                let until = match wait_for {
                    WaitFor::Duration(duration) => now.checked_add(*duration).map_err(|error| {
                        Failure::other("invalid_time", format!("node `{path}`: {error}"))
                    }),
                    WaitFor::Until(expression) => match expression.evaluate(scope) {
                        Ok(Value::String(text)) => text.parse::<Timestamp>().map_err(|error| {
                            Failure::other(
                                "invalid_time",
                                format!(
                                    "node `{path}`: `{expression}` gave `{text}`, which is not an \
                                     RFC 3339 time: {error}"
                                ),
                            )
                        }),
                        Ok(other) => Err(Failure::other(
                            "invalid_time",
                            format!(
                                "node `{path}`: `{expression}` must give an RFC 3339 time, and it \
                                 gave {other}"
                            ),
                        )),
                        Err(error) => Err(Failure::expression(path, error)),
                    },
                };
                let until = match until {
                    Ok(until) => until,
                    Err(failure) => {
                        return self.final_failure(node, path, iteration, None, failure, true);
                    }
                };
                self.node_event(
                    path,
                    iteration,
                    NodeEvent::AwaitTimer { until },
                    Counting::No,
                    None,
                    |_| {},
                )?;
                until
            }
        };
        if until <= now {
            self.complete(path, iteration, Value::Null)?;
            return Ok(NodeDone::Output {
                params: None,
                output: Value::Null,
                next: None,
            });
        }
        Err(Stop::Suspend {
            reason: format!("node `{path}` waits until {until}"),
            wake_at: Some(until),
            awaits_decision: false,
        })
    }

    /// A `workflow` node: starts its child run once, then waits for its end.
    #[allow(
        clippy::too_many_arguments,
        reason = "the node's parts, passed down as the definition holds them"
    )]
    fn exec_child(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        scope: &Scope,
        state: NodeState,
        stored_params: Option<Value>,
        definition: &Arc<Definition>,
        input: &Mapping,
    ) -> Result<NodeDone, Stop> {
        let params = match stored_params {
            Some(params) if params.get(CHILD_RUN).is_some() => params,
            _ => {
                let input = match mapping::evaluate(input, scope) {
                    Ok(input) => input,
                    Err(error) => {
                        self.start(path, iteration, &state, None)?;
                        let failure = Failure::expression(path, error);
                        return self.final_failure(node, path, iteration, None, failure, true);
                    }
                };
                let params = json!({ CHILD_RUN: RunId::new().to_string(), "input": input });
                self.start(path, iteration, &NodeState::Pending, Some(&params))?;
                params
            }
        };
        let child: Option<RunId> = params
            .get(CHILD_RUN)
            .and_then(Value::as_str)
            .and_then(|text| text.parse().ok());
        let Some(child) = child else {
            let failure = Failure::other("child_run", format!("node `{path}`: no child run id"));
            return self.final_failure(node, path, iteration, Some(params), failure, true);
        };
        let waiting = Stop::Suspend {
            reason: format!("node `{path}` waits for its child run {child}"),
            wake_at: None,
            awaits_decision: false,
        };
        match self.shared.store.run(child).map_err(Fault::from)? {
            None => {
                let parent = ParentStep {
                    run: self.id,
                    path: path.clone(),
                    iteration,
                };
                let input = params.get("input").cloned().unwrap_or(Value::Null);
                match self.shared.create_run(
                    child,
                    Arc::clone(definition),
                    input,
                    &self.caller,
                    Some(parent),
                ) {
                    Ok(()) => {
                        self.shared.kick(child);
                        Err(waiting)
                    }
                    Err(error) => {
                        let failure =
                            Failure::other("child_run", format!("node `{path}`: {error}"));
                        self.final_failure(node, path, iteration, Some(params), failure, true)
                    }
                }
            }
            Some(record) => match record.state {
                RunState::Completed => {
                    let output = record.output.unwrap_or(Value::Null);
                    self.complete(path, iteration, output.clone())?;
                    Ok(NodeDone::Output {
                        params: Some(params),
                        output,
                        next: None,
                    })
                }
                state if state.is_terminal() => {
                    let failure = Failure::other(
                        "child_run_failed",
                        format!("node `{path}`: child run {child} ended {state}"),
                    );
                    self.final_failure(node, path, iteration, Some(params), failure, true)
                }
                _ => Err(waiting),
            },
        }
    }

    /// A node's final failure (after its retries), by its `on_failure`. `running`: the node is
    /// running (else waiting for a decision, and it is failed first).
    fn final_failure(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        params: Option<Value>,
        failure: Failure,
        running: bool,
    ) -> Result<NodeDone, Stop> {
        let Failure { message, detail } = failure;
        let record_error = |step: &mut StepRecord| step.error = Some(detail);
        if running {
            match &node.on_failure {
                OnFailure::Skip => {
                    self.node_event(
                        path,
                        iteration,
                        NodeEvent::Skip { reason: message },
                        Counting::No,
                        None,
                        record_error,
                    )?;
                    return Ok(NodeDone::Output {
                        params,
                        output: Value::Null,
                        next: None,
                    });
                }
                OnFailure::Escalate => {
                    self.node_event(
                        path,
                        iteration,
                        NodeEvent::Retry {
                            error: message.clone(),
                        },
                        Counting::No,
                        None,
                        record_error,
                    )?;
                    return Err(Stop::Suspend {
                        reason: format!(
                            "node `{path}` failed and waits for a person to resume (it runs \
                             again) or cancel the run: {message}"
                        ),
                        wake_at: None,
                        awaits_decision: false,
                    });
                }
                _ => {}
            }
        }
        self.node_event(
            path,
            iteration,
            NodeEvent::Fail {
                error: message.clone(),
            },
            Counting::No,
            None,
            record_error,
        )?;
        after_failure(node, path, message)
    }
}

/// Where a run goes once `node` is recorded failed: by its `on_failure`.
fn after_failure(node: &Node, path: &NodePath, message: String) -> Result<NodeDone, Stop> {
    match &node.on_failure {
        OnFailure::Skip => Ok(NodeDone::Output {
            params: None,
            output: Value::Null,
            next: None,
        }),
        OnFailure::Fallback(id) => Ok(NodeDone::Goto(id.clone())),
        OnFailure::Fail => Err(Stop::Fail {
            error: failed_node(path, &message),
            compensate: false,
        }),
        OnFailure::Compensate | OnFailure::Escalate => Err(Stop::Fail {
            error: failed_node(path, &message),
            compensate: true,
        }),
    }
}

fn failed_node(path: &NodePath, message: &str) -> String {
    if message.starts_with("node `") {
        message.to_owned()
    } else {
        format!("node `{path}` failed: {message}")
    }
}

/// What the joined blocks of a `foreach` or `parallel` node gave.
enum Joined {
    Outputs(Vec<Value>),
    End(Value),
}

/// The stronger of two reasons to stop: a fault, then a failure, a cancel, and a wait (the
/// earliest wake time of the two).
fn merge(current: Option<Stop>, next: Stop) -> Stop {
    let Some(current) = current else {
        return next;
    };
    fn rank(stop: &Stop) -> u8 {
        match stop {
            Stop::Fault(_) => 3,
            Stop::Fail { .. } => 2,
            Stop::Cancelled => 1,
            Stop::Suspend { .. } => 0,
        }
    }
    match (current, next) {
        (
            Stop::Suspend {
                reason,
                wake_at,
                awaits_decision,
            },
            Stop::Suspend {
                wake_at: other_wake,
                awaits_decision: other_awaits,
                ..
            },
        ) => Stop::Suspend {
            reason,
            wake_at: match (wake_at, other_wake) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            awaits_decision: awaits_decision || other_awaits,
        },
        (current, next) if rank(&next) > rank(&current) => next,
        (current, _) => current,
    }
}

/// The branch a completed `condition` step chose.
fn chosen_next(output: &Value) -> Option<NodeId> {
    output
        .get("next")
        .and_then(Value::as_str)
        .map(NodeId::new)
}

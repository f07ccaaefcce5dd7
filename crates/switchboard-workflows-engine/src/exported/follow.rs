//! Following a run from a tool call until it ends or waits for a person, and what the call
//! then answers. An exported workflow's call follows the run it starts, and an answer's call
//! (`workflows_answer`) follows the run its answer set going, so both report progress and
//! answer in the same shape.

use futures::StreamExt;
use serde_json::{Value, json};
use switchboard_core::{CallContext, ToolContext, ToolError};
use switchboard_workflows::{NodeEvent, NodeState, RunId, RunState, WorkflowEvent};

use super::{ANSWER_TOOL, WORKFLOW_FAILED, WORKFLOW_UNAVAILABLE};
use crate::Engine;

/// A run to follow, from where.
pub(super) struct Following {
    /// The run.
    pub(super) run: RunId,
    /// The number of the last event already seen: the events after it are followed.
    pub(super) after: u64,
    /// How many nodes finished before (the first progress report counts on from it).
    pub(super) done: usize,
    /// The definition's node count.
    pub(super) total: usize,
}

/// The error of a run the engine could not start or follow.
pub(super) fn unavailable(error: impl std::fmt::Display) -> ToolError {
    ToolError::new(WORKFLOW_UNAVAILABLE, error.to_string())
}

/// Follows `following.run`'s events as `caller`, reporting one progress report through `ctx`
/// per node that completes or is skipped, until the run ends or pauses for a person; then
/// calls `settled` and answers as [`ended`] or [`paused`] says. A pause for something that
/// ends by itself (a timer, a child run) is followed through.
pub(super) async fn follow(
    engine: &Engine,
    ctx: &ToolContext,
    caller: &CallContext,
    following: Following,
    mut settled: impl FnMut(),
) -> Result<Value, ToolError> {
    let run = following.run;
    let mut events = Box::pin(
        engine
            .events_after(run, following.after, caller)
            .map_err(unavailable)?,
    );
    let mut done = following.done;
    while let Some(record) = events.next().await {
        match record.event {
            WorkflowEvent::Node {
                path,
                event: event @ (NodeEvent::Complete | NodeEvent::Skip { .. }),
                ..
            } => {
                done += 1;
                let verb = match event {
                    NodeEvent::Complete => "completed",
                    _ => "skipped",
                };
                let message = format!("{} {verb}", path.as_str());
                let total = following.total.max(done) as f64;
                ctx.progress(done as f64, Some(total), Some(&message));
            }
            WorkflowEvent::Run {
                state: RunState::Paused { reason },
                ..
            } => {
                if let Some(paused) = paused(engine, run, caller, &reason)? {
                    settled();
                    return Ok(paused);
                }
            }
            WorkflowEvent::Run { state, .. } if state.is_terminal() => {
                settled();
                return ended(engine, run, caller, state);
            }
            _ => {}
        }
    }
    // The stream ends after the run's last event; read where it stands.
    settled();
    let record = engine.run(run, caller).map_err(unavailable)?;
    ended(engine, run, caller, record.state)
}

/// The answer for a run that paused for a person, or `None` when it waits for something that
/// ends by itself (a timer, a child run).
pub(super) fn paused(
    engine: &Engine,
    run: RunId,
    caller: &CallContext,
    reason: &str,
) -> Result<Option<Value>, ToolError> {
    let steps = engine.steps(run, caller).map_err(unavailable)?;
    let proposal = steps.iter().find_map(|step| match &step.state {
        NodeState::WaitingApproval { proposal_id } => {
            Some((step.key.path.as_str().to_owned(), proposal_id.clone()))
        }
        _ => None,
    });
    let waits_by_itself = steps.iter().any(|step| {
        matches!(
            step.state,
            NodeState::WaitingTimer { .. } | NodeState::Running { .. } | NodeState::Retrying { .. }
        )
    });
    let questions: Vec<Value> = steps
        .iter()
        .filter_map(|step| match &step.state {
            NodeState::WaitingInput { keys, .. } => Some(
                step.questions
                    .iter()
                    .filter(|asked| keys.contains(&asked.key))
                    .map(|asked| {
                        json!({
                            "node": step.key.path.as_str(),
                            "iteration": step.key.iteration,
                            "key": asked.key,
                            "question": asked.question,
                        })
                    })
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect();
    if !questions.is_empty() {
        return Ok(Some(json!({
            "status": "paused",
            "run_id": run.to_string(),
            "reason": reason,
            "questions": questions,
            "next": format!(
                "The run waits for answers to its questions: a person or an agent of the \
                 organisation answers each with the tool `{ANSWER_TOOL}` (`{{\"run_id\": \
                 \"{run}\", \"key\": KEY, \"accept\": {{…}}}}`, or `\"decline\": true`, \
                 `\"cancel\": true`, `\"completion\": TEXT`) or with `switchboard workflow \
                 answer {run} --key KEY --accept '{{…}}'` (or `--decline`); the run continues \
                 by itself once they are answered."
            ),
        })));
    }
    Ok(match proposal {
        Some((node, proposal_id)) => Some(json!({
            "status": "paused",
            "run_id": run.to_string(),
            "reason": reason,
            "node": node,
            "proposal_id": proposal_id,
            "next": format!(
                "A person of the organisation approves or rejects proposal {proposal_id} \
                 (for example `switchboard approve {proposal_id}`); the run continues by \
                 itself once it is decided."
            ),
        })),
        None if !waits_by_itself => Some(json!({
            "status": "paused",
            "run_id": run.to_string(),
            "reason": reason,
            "next": format!("The run waits for a person: resume it or cancel it by its id, {run}."),
        })),
        None => None,
    })
}

/// The answer for a run that ended in `state`: its output when it completed, else the error
/// `workflow_failed` naming the failing node, its error and what the compensation undid.
pub(super) fn ended(
    engine: &Engine,
    run: RunId,
    caller: &CallContext,
    state: RunState,
) -> Result<Value, ToolError> {
    let record = engine.run(run, caller).map_err(unavailable)?;
    let steps = engine.steps(run, caller).map_err(unavailable)?;
    let compensated: Vec<&str> = steps
        .iter()
        .filter(|step| matches!(step.state, NodeState::Compensated))
        .map(|step| step.key.path.as_str())
        .collect();
    let undo = if compensated.is_empty() {
        "nothing was undone".to_owned()
    } else {
        format!("undone: {}", compensated.join(", "))
    };
    match state {
        RunState::Completed => Ok(record.output.unwrap_or(Value::Null)),
        RunState::Failed {
            error,
            compensation_failure,
        } => {
            let failed = steps.iter().find_map(|step| match &step.state {
                NodeState::Failed { .. } => Some(step.key.path.as_str()),
                _ => None,
            });
            // The engine's error usually names the node already.
            let node = failed
                .filter(|node| !error.contains(&format!("`{node}`")))
                .map_or_else(String::new, |node| format!(" at node `{node}`"));
            let undo = match compensation_failure {
                Some(failure) => format!(
                    "{undo}; the compensation of `{}` failed ({}), so the steps before it \
                     were not undone",
                    failure.node, failure.error
                ),
                None => undo,
            };
            Err(ToolError::new(
                WORKFLOW_FAILED,
                format!("run {run} failed{node}: {error}; {undo}"),
            ))
        }
        RunState::Cancelled => Err(ToolError::new(
            WORKFLOW_FAILED,
            format!("run {run} was cancelled; {undo}"),
        )),
        other => Err(unavailable(format!(
            "run {run} stopped being followed while {}",
            other.as_str()
        ))),
    }
}

//! A run's steps, read per node: what each renderer shows as a node's state.
//!
//! A node outside any `foreach` has at most one step (iteration 0); a node in a `foreach` body
//! has one per item, and is shown as counts (`3/5 completed, 1 failed (iteration 3)`). A
//! `foreach` node itself has one step, and its iterations are read from the steps of its body.
//!
//! Steps are grouped by their node's path in the definition ([`NodePath::node`]): the steps of
//! a node inside nested `foreach` nodes (`outer/inner[1]/send`, iteration 2) all count for
//! `outer/inner/send`, each iteration named by its items from the outermost (`1.2`).

use std::collections::BTreeMap;
use std::ops::Bound;

use serde_json::Value;

use crate::definition::NodePath;
use crate::node::NodeState;
use crate::store::{RunRecord, StepRecord};

/// How a state is coloured: one class per family of states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tone {
    /// Not run (yet).
    Pending,
    /// Completed.
    Completed,
    /// Skipped.
    Skipped,
    /// Undone, or being undone.
    Compensated,
    /// Running, retrying, or waiting for a person or a timer.
    Active,
    /// Failed.
    Failed,
    /// Its undo failed.
    CompensationFailed,
}

impl Tone {
    /// The class name the pictures use.
    pub(crate) const fn class(self) -> &'static str {
        match self {
            Tone::Pending => "pending",
            Tone::Completed => "completed",
            Tone::Skipped => "skipped",
            Tone::Compensated => "compensated",
            Tone::Active => "active",
            Tone::Failed => "failed",
            Tone::CompensationFailed => "compensation_failed",
        }
    }

    /// Every tone, in the order the pictures declare their styles.
    pub(crate) const ALL: [Tone; 7] = [
        Tone::Pending,
        Tone::Completed,
        Tone::Skipped,
        Tone::Compensated,
        Tone::Active,
        Tone::Failed,
        Tone::CompensationFailed,
    ];

    fn of(state: &NodeState) -> Tone {
        match state {
            NodeState::Pending => Tone::Pending,
            NodeState::Completed => Tone::Completed,
            NodeState::Skipped { .. } => Tone::Skipped,
            NodeState::Compensating | NodeState::Compensated => Tone::Compensated,
            NodeState::Running { .. }
            | NodeState::Retrying { .. }
            | NodeState::WaitingApproval { .. }
            | NodeState::WaitingTimer { .. }
            | NodeState::WaitingInput { .. } => Tone::Active,
            NodeState::Failed { .. } => Tone::Failed,
            NodeState::CompensationFailed { .. } => Tone::CompensationFailed,
        }
    }
}

/// A run and its steps, grouped by their node's path in the definition.
#[derive(Debug)]
pub(crate) struct RunView<'a> {
    pub(crate) run: &'a RunRecord,
    steps: BTreeMap<String, Vec<(Items, &'a StepRecord)>>,
}

/// Which execution of its node a step is: the items of the enclosing `foreach` nodes it runs
/// for, outermost first, then its own iteration.
type Items = Vec<u32>;

/// An iteration as a summary names it: `3`, or `1.2` (item 2 of the inner list, for outer
/// item 1).
fn item_label(items: &[u32]) -> String {
    items
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// What a renderer shows for one node of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeStatus {
    /// Its colour.
    pub(crate) tone: Tone,
    /// Its state in a few words (`completed`, `running (attempt 2)`, `2/3 completed, 1 failed
    /// (iteration 1)`).
    pub(crate) summary: String,
    /// The error to show, on one line, if it has one.
    pub(crate) error: Option<String>,
    /// The output to show, on one line, if it completed with one.
    pub(crate) output: Option<String>,
}

/// The longest error excerpt.
pub(crate) const ERROR_CHARS: usize = 100;
/// The longest output excerpt.
const OUTPUT_CHARS: usize = 100;
/// The most failing iterations a summary names.
const ITERATIONS_NAMED: usize = 3;

impl<'a> RunView<'a> {
    pub(crate) fn new(run: &'a RunRecord, steps: &'a [StepRecord]) -> Self {
        let mut by_path: BTreeMap<String, Vec<(Items, &StepRecord)>> = BTreeMap::new();
        for step in steps {
            let mut items = step.key.path.items();
            items.push(step.key.iteration);
            by_path
                .entry(step.key.path.node().as_str().to_owned())
                .or_default()
                .push((items, step));
        }
        for steps in by_path.values_mut() {
            steps.sort_by(|(a, _), (b, _)| a.cmp(b));
        }
        Self {
            run,
            steps: by_path,
        }
    }

    /// The status of the node at `path`. `in_foreach`: it is in a `foreach` body, so its steps
    /// are iterations, `iterations` of them in all when known.
    pub(crate) fn node(
        &self,
        path: &NodePath,
        in_foreach: Option<usize>,
        is_foreach: bool,
    ) -> NodeStatus {
        let steps = self
            .steps
            .get(path.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut status = match (steps, in_foreach) {
            ([], _) => NodeStatus {
                tone: Tone::Pending,
                summary: "not run".to_owned(),
                error: None,
                output: None,
            },
            ([(_, step)], None) => single(step),
            (steps, total) => {
                let by_iteration: BTreeMap<Items, (Tone, &StepRecord)> = steps
                    .iter()
                    .map(|(items, step)| (items.clone(), (Tone::of(&step.state), *step)))
                    .collect();
                let total = total.unwrap_or(by_iteration.len()).max(by_iteration.len());
                iteration_counts(&by_iteration, total, "completed")
            }
        };
        if is_foreach && in_foreach.is_none() {
            let iterations = self.foreach_iterations(path);
            if !iterations.is_empty() {
                let total = self.foreach_items(path).unwrap_or(iterations.len());
                let counted = iteration_counts(&iterations, total, "iterations completed");
                status.summary = format!("{}; {}", status.summary, counted.summary);
                status.error = status.error.or(counted.error);
            }
        }
        status
    }

    /// How many items the `foreach` at `path` runs, when its steps tell: their evaluated
    /// lists (`params`) or output lists, added up over its executions (one per outer item,
    /// inside another `foreach`).
    pub(crate) fn foreach_items(&self, path: &NodePath) -> Option<usize> {
        let lengths: Vec<usize> = self
            .steps
            .get(path.as_str())?
            .iter()
            .filter_map(|(_, step)| {
                [step.params.as_ref(), step.output.as_ref()]
                    .into_iter()
                    .flatten()
                    .find_map(Value::as_array)
                    .map(Vec::len)
            })
            .collect();
        (!lengths.is_empty()).then(|| lengths.iter().sum())
    }

    /// Each iteration of the `foreach` at `path` (outside any other `foreach`), with its worst
    /// tone and the step that gave it, read from the steps of its body, nested ones included:
    /// a body step's first item is the iteration it belongs to.
    fn foreach_iterations(&self, path: &NodePath) -> BTreeMap<Items, (Tone, &'a StepRecord)> {
        let prefix = format!("{}/", path.as_str());
        let mut iterations: BTreeMap<Items, (Tone, &StepRecord)> = BTreeMap::new();
        let body_steps = self
            .steps
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .take_while(|(step_path, _)| step_path.starts_with(&prefix))
            .flat_map(|(_, steps)| steps.iter());
        for (items, step) in body_steps {
            let tone = Tone::of(&step.state);
            iterations
                .entry(items.iter().take(1).copied().collect())
                .and_modify(|worst| {
                    if tone > worst.0 {
                        *worst = (tone, step);
                    }
                })
                .or_insert((tone, step));
        }
        iterations
    }
}

/// Counts per tone over iterations: `3/5 completed, 1 failed (iteration 3), 1 running`. The
/// error shown is the first failing iteration's.
fn iteration_counts(
    iterations: &BTreeMap<Items, (Tone, &StepRecord)>,
    total: usize,
    completed_word: &str,
) -> NodeStatus {
    let count = |tone: Tone| iterations.values().filter(|(of, _)| *of == tone).count();
    let mut parts = vec![format!(
        "{}/{total} {completed_word}",
        count(Tone::Completed)
    )];
    for tone in [
        Tone::Failed,
        Tone::CompensationFailed,
        Tone::Active,
        Tone::Compensated,
        Tone::Skipped,
    ] {
        let of_tone: Vec<String> = iterations
            .iter()
            .filter(|(_, (of, _))| *of == tone)
            .map(|(items, _)| item_label(items))
            .collect();
        if of_tone.is_empty() {
            continue;
        }
        let word = match tone {
            Tone::Failed => "failed",
            Tone::CompensationFailed => "compensation failed",
            Tone::Active => "running",
            Tone::Compensated => "compensated",
            _ => "skipped",
        };
        let mut part = format!("{} {word}", of_tone.len());
        if matches!(tone, Tone::Failed | Tone::CompensationFailed) {
            let named: Vec<String> = of_tone.iter().take(ITERATIONS_NAMED).cloned().collect();
            let more = if of_tone.len() > ITERATIONS_NAMED {
                ", …"
            } else {
                ""
            };
            let noun = if of_tone.len() == 1 {
                "iteration"
            } else {
                "iterations"
            };
            part.push_str(&format!(" ({noun} {}{more})", named.join(", ")));
        }
        parts.push(part);
    }
    let worst = iterations
        .values()
        .map(|(tone, _)| *tone)
        .max()
        .unwrap_or(Tone::Pending);
    let all_completed = count(Tone::Completed) == total && total > 0;
    let error = iterations
        .iter()
        .find(|(_, (tone, _))| matches!(tone, Tone::Failed | Tone::CompensationFailed))
        .and_then(|(items, (_, step))| {
            error_text(step).map(|error| format!("iteration {}: {error}", item_label(items)))
        });
    NodeStatus {
        tone: if all_completed {
            Tone::Completed
        } else {
            worst
        },
        summary: parts.join(", "),
        error: error.map(|error| super::one_line(&error, ERROR_CHARS)),
        output: None,
    }
}

/// One step's status.
fn single(step: &StepRecord) -> NodeStatus {
    let summary = match &step.state {
        NodeState::Running { attempt } => format!("running (attempt {attempt})"),
        NodeState::Retrying { attempt, .. } => format!("retrying (attempt {attempt} next)"),
        NodeState::WaitingApproval { proposal_id } => {
            format!(
                "waiting for approval of proposal {}",
                super::printable(proposal_id)
            )
        }
        NodeState::WaitingTimer { until } => format!("waiting until {until}"),
        NodeState::WaitingInput { keys, .. } => {
            let asked: Vec<String> = step
                .questions
                .iter()
                .filter(|question| keys.contains(&question.key))
                .map(|question| {
                    format!(
                        "{}: {}",
                        super::printable(&question.key),
                        super::one_line(&question.describe(), ERROR_CHARS)
                    )
                })
                .collect();
            if asked.is_empty() {
                "answered, waiting for the run to go on".to_owned()
            } else {
                format!("waiting for an answer ({})", asked.join("; "))
            }
        }
        NodeState::CompensationFailed { .. } => "compensation failed".to_owned(),
        NodeState::Skipped { reason } => {
            format!("skipped ({})", super::one_line(reason, ERROR_CHARS))
        }
        other => other.as_str().to_owned(),
    };
    NodeStatus {
        tone: Tone::of(&step.state),
        summary,
        error: error_text(step).map(|error| super::one_line(&error, ERROR_CHARS)),
        output: step
            .output
            .as_ref()
            .map(|output| super::one_line(&output.to_string(), OUTPUT_CHARS)),
    }
}

/// The error a step shows: its state's own (a failure, the last retried attempt's, a failed
/// undo), else the recorded error's message, else the recorded error as JSON.
fn error_text(step: &StepRecord) -> Option<String> {
    match &step.state {
        NodeState::Failed { error }
        | NodeState::Retrying { error, .. }
        | NodeState::CompensationFailed { error } => return Some(error.clone()),
        _ => {}
    }
    let recorded = step.error.as_ref()?;
    match recorded.get("message").and_then(Value::as_str) {
        Some(message) => Some(message.to_owned()),
        None => Some(recorded.to_string()),
    }
}

//! The state machine of one node execution within a run.
//!
//! A run executes a node once per (node path, iteration); each execution has its own state, so
//! that a restart after a crash knows, step by step, what completed (and must never run again),
//! what was in flight (and may run again only under the same idempotency key), and what is
//! waiting. Every change goes through [`NodeState::apply`], and an event not on the edges below
//! is an [`IllegalNodeTransition`], never a silent overwrite.
//!
//! ```text
//! Pending ──start──► Running{1} ──complete──► Completed ──compensate──► Compensating
//!                     │     ▲
//!               retry │     │ start
//!                     ▼     │
//!                  Retrying{2}      (each retry counts one more attempt)
//!
//! await_approval:      Running | Compensating ──► WaitingApproval
//! await_timer:         Running ──► WaitingTimer
//! await_input:         Running{n} ──► WaitingInput{n, keys}
//! answer(key):         WaitingInput{n, keys ∋ key} ──► WaitingInput{n, keys − key}
//! start:               WaitingInput{n, []} ──► Running{n}
//! complete:            Running | WaitingApproval | WaitingTimer            ──► Completed
//! fail:                Running | Retrying | Waiting* ──► Failed
//! skip:                Pending | Running                                   ──► Skipped
//! compensated:         Compensating | WaitingApproval ──► Compensated
//! compensation_failed: Compensating | WaitingApproval ──► CompensationFailed
//! ```
//!
//! The attempt number lives in the state: `start` from `Pending` is attempt 1, and each `retry`
//! counts one more, so no caller can report an attempt out of order. `WaitingApproval` and
//! `WaitingTimer` are the node's pauses: a person's decision or a durable timer ends them, by
//! completing the node (the approved call ran, the timer fired) or failing it (rejected).
//! `WaitingInput` is the pause of a tool that asked its client something (a form, a
//! completion): each answer takes its key off the list, and once none is left the same attempt
//! starts again, its tool given the answers (the step's `questions`).
//! A compensation an agent's run may not make itself (a mutating tool) waits the same way, and
//! its decision ends it `Compensated` or `CompensationFailed`.
//! `Completed` is not terminal, because a failed or cancelled run may undo it (`compensate`);
//! `Failed`, `Skipped`, `Compensated` and `CompensationFailed` are terminal.

use std::fmt;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// Where one execution of a node stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NodeState {
    /// Not started.
    Pending,
    /// Its work (a tool call, a sub-workflow...) is in flight.
    Running {
        /// Which attempt this is, from 1.
        attempt: u32,
    },
    /// The last attempt failed with a retryable error; the next attempt waits for its backoff.
    Retrying {
        /// The attempt that will run next.
        attempt: u32,
        /// How the previous attempt failed.
        error: String,
    },
    /// Waiting for a person's decision on a proposal.
    WaitingApproval {
        /// The proposal awaiting a decision.
        proposal_id: String,
    },
    /// Waiting for a durable timer.
    WaitingTimer {
        /// When the timer fires.
        until: Timestamp,
    },
    /// Its tool asked its client something, and the attempt waits for the answers: the
    /// questions are the step's (`StepRecord::questions`), under these keys.
    WaitingInput {
        /// The attempt that asked, which starts again once every question is answered.
        attempt: u32,
        /// The keys of the questions still to answer.
        keys: Vec<String>,
    },
    /// Done; its output is checkpointed. A failed or cancelled run may still compensate it.
    Completed,
    /// Failed for good. Terminal.
    Failed {
        /// How it failed.
        error: String,
    },
    /// Not run (a branch not taken, or a failure the node's strategy skips). Terminal.
    Skipped {
        /// Why it was skipped.
        reason: String,
    },
    /// Its compensation is running.
    Compensating,
    /// Its compensation ran: what it did is undone. Terminal.
    Compensated,
    /// Its compensation failed: what it did stays done. Terminal.
    CompensationFailed {
        /// How the compensation failed.
        error: String,
    },
}

/// What happens to a node execution; each is legal in some states only (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum NodeEvent {
    /// An attempt starts: the first from `Pending`, the next from `Retrying`.
    Start,
    /// The attempt failed with a retryable error; another attempt follows.
    Retry {
        /// How the attempt failed.
        error: String,
    },
    /// The node waits for a person's decision on a proposal.
    AwaitApproval {
        /// The proposal awaiting a decision.
        proposal_id: String,
    },
    /// The node waits for a durable timer.
    AwaitTimer {
        /// When the timer fires.
        until: Timestamp,
    },
    /// The node's tool asked its client these questions (by key), to be answered before the
    /// attempt runs again.
    AwaitInput {
        /// The keys of the questions.
        keys: Vec<String>,
    },
    /// One question the node waits for was answered.
    Answer {
        /// The question's key.
        key: String,
        /// Who answered it (their user id).
        by: String,
    },
    /// The node's work is done.
    Complete,
    /// The node failed for good.
    Fail {
        /// How it failed.
        error: String,
    },
    /// The node is not run, or its failure is skipped.
    Skip {
        /// Why.
        reason: String,
    },
    /// Its compensation starts.
    Compensate,
    /// Its compensation ran.
    Compensated,
    /// Its compensation failed.
    CompensationFailed {
        /// How it failed.
        error: String,
    },
}

/// An event that is not legal in the node's state; the state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a node that is {} cannot take the event `{}`", .state.as_str(), .event.as_str())]
pub struct IllegalNodeTransition {
    /// The state the event was applied to.
    pub state: NodeState,
    /// The refused event.
    pub event: NodeEvent,
}

impl NodeState {
    /// The state after `event`, or the refusal when `event` is not legal here.
    pub fn apply(&self, event: NodeEvent) -> Result<NodeState, IllegalNodeTransition> {
        use NodeEvent as Event;
        use NodeState as State;
        let next = match (self, &event) {
            (State::Pending, Event::Start) => State::Running { attempt: 1 },
            (State::Retrying { attempt, .. }, Event::Start) => State::Running { attempt: *attempt },
            (State::Running { attempt }, Event::Retry { error }) => State::Retrying {
                attempt: attempt.saturating_add(1),
                error: error.clone(),
            },
            (State::Running { .. }, Event::AwaitApproval { proposal_id }) => {
                State::WaitingApproval {
                    proposal_id: proposal_id.clone(),
                }
            }
            (State::Running { .. }, Event::AwaitTimer { until }) => {
                State::WaitingTimer { until: *until }
            }
            (State::Running { attempt }, Event::AwaitInput { keys }) if !keys.is_empty() => {
                State::WaitingInput {
                    attempt: *attempt,
                    keys: keys.clone(),
                }
            }
            (State::WaitingInput { attempt, keys }, Event::Answer { key, .. })
                if keys.contains(key) =>
            {
                State::WaitingInput {
                    attempt: *attempt,
                    keys: keys.iter().filter(|left| *left != key).cloned().collect(),
                }
            }
            (State::WaitingInput { attempt, keys }, Event::Start) if keys.is_empty() => {
                State::Running { attempt: *attempt }
            }
            (
                State::Running { .. } | State::WaitingApproval { .. } | State::WaitingTimer { .. },
                Event::Complete,
            ) => State::Completed,
            (
                State::Running { .. }
                | State::Retrying { .. }
                | State::WaitingApproval { .. }
                | State::WaitingTimer { .. }
                | State::WaitingInput { .. },
                Event::Fail { error },
            ) => State::Failed {
                error: error.clone(),
            },
            (State::Pending | State::Running { .. }, Event::Skip { reason }) => State::Skipped {
                reason: reason.clone(),
            },
            (State::Completed, Event::Compensate) => State::Compensating,
            (State::Compensating, Event::AwaitApproval { proposal_id }) => State::WaitingApproval {
                proposal_id: proposal_id.clone(),
            },
            (State::Compensating | State::WaitingApproval { .. }, Event::Compensated) => {
                State::Compensated
            }
            (
                State::Compensating | State::WaitingApproval { .. },
                Event::CompensationFailed { error },
            ) => State::CompensationFailed {
                error: error.clone(),
            },
            _ => {
                return Err(IllegalNodeTransition {
                    state: self.clone(),
                    event,
                });
            }
        };
        Ok(next)
    }

    /// Whether the execution is over: a terminal state accepts no event. `Completed` is not
    /// terminal, since its compensation may still run.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            NodeState::Failed { .. }
                | NodeState::Skipped { .. }
                | NodeState::Compensated
                | NodeState::CompensationFailed { .. }
        )
    }

    /// The state's name, as stored: `pending`, `running`, `retrying`, `waiting_approval`,
    /// `waiting_timer`, `waiting_input`, `completed`, `failed`, `skipped`, `compensating`, `compensated` or
    /// `compensation_failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            NodeState::Pending => "pending",
            NodeState::Running { .. } => "running",
            NodeState::Retrying { .. } => "retrying",
            NodeState::WaitingApproval { .. } => "waiting_approval",
            NodeState::WaitingTimer { .. } => "waiting_timer",
            NodeState::WaitingInput { .. } => "waiting_input",
            NodeState::Completed => "completed",
            NodeState::Failed { .. } => "failed",
            NodeState::Skipped { .. } => "skipped",
            NodeState::Compensating => "compensating",
            NodeState::Compensated => "compensated",
            NodeState::CompensationFailed { .. } => "compensation_failed",
        }
    }
}

impl NodeEvent {
    /// The event's name, as stored: `start`, `retry`, `await_approval`, `await_timer`,
    /// `await_input`, `answer`, `complete`, `fail`, `skip`, `compensate`, `compensated` or `compensation_failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            NodeEvent::Start => "start",
            NodeEvent::Retry { .. } => "retry",
            NodeEvent::AwaitApproval { .. } => "await_approval",
            NodeEvent::AwaitTimer { .. } => "await_timer",
            NodeEvent::AwaitInput { .. } => "await_input",
            NodeEvent::Answer { .. } => "answer",
            NodeEvent::Complete => "complete",
            NodeEvent::Fail { .. } => "fail",
            NodeEvent::Skip { .. } => "skip",
            NodeEvent::Compensate => "compensate",
            NodeEvent::Compensated => "compensated",
            NodeEvent::CompensationFailed { .. } => "compensation_failed",
        }
    }
}

impl fmt::Display for NodeState {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeState::Running { attempt } => write!(formatter, "running (attempt {attempt})"),
            NodeState::Retrying { attempt, error } => {
                write!(
                    formatter,
                    "retrying (attempt {attempt} next) after: {error}"
                )
            }
            NodeState::WaitingApproval { proposal_id } => {
                write!(formatter, "waiting for approval of proposal {proposal_id}")
            }
            NodeState::WaitingTimer { until } => write!(formatter, "waiting until {until}"),
            NodeState::WaitingInput { keys, .. } if keys.is_empty() => {
                formatter.write_str("answered, waiting for the run to go on")
            }
            NodeState::WaitingInput { keys, .. } => {
                write!(formatter, "waiting for an answer to {}", keys.join(", "))
            }
            NodeState::Failed { error } => write!(formatter, "failed: {error}"),
            NodeState::Skipped { reason } => write!(formatter, "skipped: {reason}"),
            NodeState::CompensationFailed { error } => {
                write!(formatter, "compensation failed: {error}")
            }
            other => formatter.write_str(other.as_str()),
        }
    }
}

impl fmt::Display for NodeEvent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeEvent::Retry { error } => write!(formatter, "retry after: {error}"),
            NodeEvent::AwaitApproval { proposal_id } => {
                write!(formatter, "await approval of proposal {proposal_id}")
            }
            NodeEvent::AwaitTimer { until } => write!(formatter, "await timer until {until}"),
            NodeEvent::AwaitInput { keys } => write!(formatter, "ask {}", keys.join(", ")),
            NodeEvent::Answer { key, by } => write!(formatter, "{key} answered by {by}"),
            NodeEvent::Fail { error } => write!(formatter, "fail: {error}"),
            NodeEvent::Skip { reason } => write!(formatter, "skip: {reason}"),
            NodeEvent::CompensationFailed { error } => {
                write!(formatter, "compensation failed: {error}")
            }
            other => formatter.write_str(other.as_str()),
        }
    }
}

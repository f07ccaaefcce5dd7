//! The state machine of a workflow run.
//!
//! A run's state is what a store keeps, what `workflow show` prints and what a crash-restart
//! reads back, so every change goes through [`RunState::apply`]: the only legal moves are the
//! edges below, and any other event is an [`IllegalRunTransition`] naming the state and the
//! event. A bug in the engine (completing a paused run, resuming a finished one) is then refused
//! where it happens instead of silently overwriting what the store holds.
//!
//! ```text
//! Pending ──start──► Initializing ──initialized──► Running ──complete──► Completed
//!                                                   │  ▲
//!                                             pause │  │ resume
//!                                                   ▼  │
//!                                                  Paused
//!
//! fail:        Initializing | Running | Paused          ──► Failed
//! cancel:      Pending | Initializing | Running | Paused ──► Cancelled
//! compensate:  Running | Paused ──► Compensating{cause}
//!              Compensating{failed}    ──compensations_done───► Failed
//!              Compensating{cancelled} ──compensations_done───► Cancelled
//!              Compensating{either}    ──compensation_failed──► Failed, the failure attached
//! ```
//!
//! `Compensating` is the saga's undo: the run failed or was cancelled after some steps
//! completed, and their compensations run in reverse order. It accepts nothing but the end of
//! that undo, so a run is never cancelled or failed again halfway through it; a compensation
//! that fails leaves the run `Failed` with that failure visible, never a silent half-undo.
//! `Completed`, `Failed` and `Cancelled` are terminal: they accept no event.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a workflow run stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunState {
    /// Created and stored; nothing has run yet.
    Pending,
    /// Reading its definition and input and preparing its first nodes.
    Initializing,
    /// Executing nodes.
    Running,
    /// Waiting for something outside the engine (a person's decision, an operator's resume).
    Paused {
        /// Why it waits, for the people watching it.
        reason: String,
    },
    /// Running the compensations of its completed steps, in reverse order.
    Compensating {
        /// Why it is being undone: this decides how it ends.
        cause: CompensationCause,
    },
    /// Every node it needed completed. Terminal.
    Completed,
    /// It failed. Terminal.
    Failed {
        /// What failed the run.
        error: String,
        /// The compensation that failed while undoing the run, if one did: the undo stopped
        /// there and the steps before it were not undone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compensation_failure: Option<CompensationFailure>,
    },
    /// Someone cancelled it. Terminal.
    Cancelled,
}

/// Why a run is compensating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum CompensationCause {
    /// A step failed and the run's strategy is to undo what it did.
    Failed {
        /// What failed the run.
        error: String,
    },
    /// The run was cancelled.
    Cancelled,
}

/// A compensation that failed: which node it undid and why it failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompensationFailure {
    /// The path of the node whose compensation failed.
    pub node: String,
    /// How the compensation failed.
    pub error: String,
}

/// What happens to a run; each is legal in some states only (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent {
    /// The engine picked up a pending run.
    Start,
    /// The run's definition and input are ready; nodes may run.
    Initialized,
    /// The run must wait (an approval, an escalation, an operator).
    Pause {
        /// Why it waits.
        reason: String,
    },
    /// What the run waited for arrived.
    Resume,
    /// Every node the run needed completed.
    Complete,
    /// The run failed with nothing to undo.
    Fail {
        /// What failed it.
        error: String,
    },
    /// Someone cancelled the run, with nothing to undo.
    Cancel,
    /// The run failed or was cancelled and has completed steps to undo.
    Compensate {
        /// Why it is undone.
        cause: CompensationCause,
    },
    /// Every compensation ran.
    CompensationsDone,
    /// A compensation failed; the undo stops.
    CompensationFailed {
        /// Which compensation failed, and how.
        failure: CompensationFailure,
    },
}

/// An event that is not legal in the run's state; the state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a run that is {} cannot take the event `{}`", .state.as_str(), .event.as_str())]
pub struct IllegalRunTransition {
    /// The state the event was applied to.
    pub state: RunState,
    /// The refused event.
    pub event: RunEvent,
}

/// What a cancelled run whose undo failed reports as its error.
const CANCELLED_THEN_UNDO_FAILED: &str = "the run was cancelled";

impl RunState {
    /// The state after `event`, or the refusal when `event` is not legal here.
    pub fn apply(&self, event: RunEvent) -> Result<RunState, IllegalRunTransition> {
        use RunEvent as Event;
        use RunState as State;
        let next = match (self, &event) {
            (State::Pending, Event::Start) => State::Initializing,
            (State::Initializing, Event::Initialized) | (State::Paused { .. }, Event::Resume) => {
                State::Running
            }
            (State::Running, Event::Pause { reason }) => State::Paused {
                reason: reason.clone(),
            },
            (State::Running, Event::Complete) => State::Completed,
            (
                State::Initializing | State::Running | State::Paused { .. },
                Event::Fail { error },
            ) => State::Failed {
                error: error.clone(),
                compensation_failure: None,
            },
            (
                State::Pending | State::Initializing | State::Running | State::Paused { .. },
                Event::Cancel,
            ) => State::Cancelled,
            (State::Running | State::Paused { .. }, Event::Compensate { cause }) => {
                State::Compensating {
                    cause: cause.clone(),
                }
            }
            (State::Compensating { cause }, Event::CompensationsDone) => match cause {
                CompensationCause::Failed { error } => State::Failed {
                    error: error.clone(),
                    compensation_failure: None,
                },
                CompensationCause::Cancelled => State::Cancelled,
            },
            (State::Compensating { cause }, Event::CompensationFailed { failure }) => {
                let error = match cause {
                    CompensationCause::Failed { error } => error.clone(),
                    CompensationCause::Cancelled => CANCELLED_THEN_UNDO_FAILED.to_owned(),
                };
                State::Failed {
                    error,
                    compensation_failure: Some(failure.clone()),
                }
            }
            _ => {
                return Err(IllegalRunTransition {
                    state: self.clone(),
                    event,
                });
            }
        };
        Ok(next)
    }

    /// Whether the run is over: a terminal state accepts no event.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            RunState::Completed | RunState::Failed { .. } | RunState::Cancelled
        )
    }

    /// The state's name, as stored: `pending`, `initializing`, `running`, `paused`,
    /// `compensating`, `completed`, `failed` or `cancelled`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RunState::Pending => "pending",
            RunState::Initializing => "initializing",
            RunState::Running => "running",
            RunState::Paused { .. } => "paused",
            RunState::Compensating { .. } => "compensating",
            RunState::Completed => "completed",
            RunState::Failed { .. } => "failed",
            RunState::Cancelled => "cancelled",
        }
    }
}

impl RunEvent {
    /// The event's name, as stored: `start`, `initialized`, `pause`, `resume`, `complete`,
    /// `fail`, `cancel`, `compensate`, `compensations_done` or `compensation_failed`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RunEvent::Start => "start",
            RunEvent::Initialized => "initialized",
            RunEvent::Pause { .. } => "pause",
            RunEvent::Resume => "resume",
            RunEvent::Complete => "complete",
            RunEvent::Fail { .. } => "fail",
            RunEvent::Cancel => "cancel",
            RunEvent::Compensate { .. } => "compensate",
            RunEvent::CompensationsDone => "compensations_done",
            RunEvent::CompensationFailed { .. } => "compensation_failed",
        }
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunState::Paused { reason } => write!(formatter, "paused: {reason}"),
            RunState::Compensating { cause } => write!(formatter, "compensating ({cause})"),
            RunState::Failed {
                error,
                compensation_failure: None,
            } => write!(formatter, "failed: {error}"),
            RunState::Failed {
                error,
                compensation_failure: Some(failure),
            } => write!(formatter, "failed: {error}; then {failure}"),
            other => formatter.write_str(other.as_str()),
        }
    }
}

impl fmt::Display for CompensationCause {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompensationCause::Failed { error } => write!(formatter, "after failing: {error}"),
            CompensationCause::Cancelled => formatter.write_str("after being cancelled"),
        }
    }
}

impl fmt::Display for CompensationFailure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "the compensation of node `{}` failed: {}",
            self.node, self.error
        )
    }
}

impl fmt::Display for RunEvent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunEvent::Pause { reason } => write!(formatter, "pause: {reason}"),
            RunEvent::Fail { error } => write!(formatter, "fail: {error}"),
            RunEvent::Compensate { cause } => write!(formatter, "compensate {cause}"),
            RunEvent::CompensationFailed { failure } => write!(formatter, "{failure}"),
            other => formatter.write_str(other.as_str()),
        }
    }
}

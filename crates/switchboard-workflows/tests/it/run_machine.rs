//! `RunState::apply` against the legal edges of the run machine, written out here as a table
//! independent of the implementation.

use proptest::prelude::*;
use switchboard_workflows::{
    CompensationCause, CompensationFailure, IllegalRunTransition, RunEvent, RunState,
};

/// Every legal edge of the run machine: (state, event, next state), by name.
const EDGES: &[(&str, &str, &str)] = &[
    ("pending", "start", "initializing"),
    ("pending", "cancel", "cancelled"),
    ("initializing", "initialized", "running"),
    ("initializing", "fail", "failed"),
    ("initializing", "cancel", "cancelled"),
    ("running", "pause", "paused"),
    ("running", "complete", "completed"),
    ("running", "fail", "failed"),
    ("running", "cancel", "cancelled"),
    ("running", "compensate", "compensating"),
    ("paused", "resume", "running"),
    ("paused", "fail", "failed"),
    ("paused", "cancel", "cancelled"),
    ("paused", "compensate", "compensating"),
    ("compensating_after_failure", "compensations_done", "failed"),
    (
        "compensating_after_failure",
        "compensation_failed",
        "failed",
    ),
    (
        "compensating_after_cancel",
        "compensations_done",
        "cancelled",
    ),
    ("compensating_after_cancel", "compensation_failed", "failed"),
];

/// The state's row in [`EDGES`]: its name, with the cause for `compensating`, which decides how
/// the undo ends.
fn row(state: &RunState) -> &'static str {
    match state {
        RunState::Compensating {
            cause: CompensationCause::Failed { .. },
        } => "compensating_after_failure",
        RunState::Compensating {
            cause: CompensationCause::Cancelled,
        } => "compensating_after_cancel",
        other => other.as_str(),
    }
}

/// The name of the state `event` leads to from `state`, or `None` when it is not an edge.
fn edge(state: &RunState, event: &RunEvent) -> Option<&'static str> {
    EDGES
        .iter()
        .find(|(from, on, _)| *from == row(state) && *on == event.as_str())
        .map(|(_, _, to)| *to)
}

fn failure() -> CompensationFailure {
    CompensationFailure {
        node: "assign_b".to_owned(),
        error: "roster unavailable".to_owned(),
    }
}

/// One state of each kind.
fn every_state() -> Vec<RunState> {
    vec![
        RunState::Pending,
        RunState::Initializing,
        RunState::Running,
        RunState::Paused {
            reason: "approval".to_owned(),
        },
        RunState::Compensating {
            cause: CompensationCause::Failed {
                error: "boom".to_owned(),
            },
        },
        RunState::Compensating {
            cause: CompensationCause::Cancelled,
        },
        RunState::Completed,
        RunState::Failed {
            error: "boom".to_owned(),
            compensation_failure: None,
        },
        RunState::Failed {
            error: "boom".to_owned(),
            compensation_failure: Some(failure()),
        },
        RunState::Cancelled,
    ]
}

/// One event of each kind.
fn every_event() -> Vec<RunEvent> {
    vec![
        RunEvent::Start,
        RunEvent::Initialized,
        RunEvent::Pause {
            reason: "approval".to_owned(),
        },
        RunEvent::Resume,
        RunEvent::Complete,
        RunEvent::Fail {
            error: "boom".to_owned(),
        },
        RunEvent::Cancel,
        RunEvent::Compensate {
            cause: CompensationCause::Cancelled,
        },
        RunEvent::CompensationsDone,
        RunEvent::CompensationFailed { failure: failure() },
    ]
}

#[test]
fn every_state_and_event_pair_follows_the_table() {
    let mut legal = 0;
    for state in every_state() {
        for event in every_event() {
            match (state.apply(event.clone()), edge(&state, &event)) {
                (Ok(next), Some(expected)) => {
                    assert_eq!(next.as_str(), expected, "{state:?} on {event:?}");
                    legal += 1;
                }
                (Err(refusal), None) => {
                    assert_eq!(
                        refusal,
                        IllegalRunTransition {
                            state: state.clone(),
                            event
                        }
                    );
                }
                (Ok(next), None) => panic!("{state:?} on {event:?} gave {next:?}: not an edge"),
                (Err(refusal), Some(_)) => panic!("a legal edge was refused: {refusal}"),
            }
        }
    }
    assert_eq!(legal, EDGES.len(), "every edge is exercised once");
}

#[test]
fn the_happy_path_with_a_pause() -> Result<(), IllegalRunTransition> {
    let run = RunState::Pending
        .apply(RunEvent::Start)?
        .apply(RunEvent::Initialized)?
        .apply(RunEvent::Pause {
            reason: "waiting for the manager's approval".to_owned(),
        })?;
    assert_eq!(
        run.to_string(),
        "paused: waiting for the manager's approval"
    );
    let run = run.apply(RunEvent::Resume)?.apply(RunEvent::Complete)?;
    assert_eq!(run, RunState::Completed);
    assert!(run.is_terminal());
    Ok(())
}

#[test]
fn a_compensated_failure_ends_failed_with_the_original_error() -> Result<(), IllegalRunTransition> {
    let compensating = RunState::Running.apply(RunEvent::Compensate {
        cause: CompensationCause::Failed {
            error: "assign B failed".to_owned(),
        },
    })?;
    assert_eq!(
        compensating.apply(RunEvent::CompensationsDone)?,
        RunState::Failed {
            error: "assign B failed".to_owned(),
            compensation_failure: None,
        }
    );
    Ok(())
}

#[test]
fn a_compensated_cancellation_ends_cancelled() -> Result<(), IllegalRunTransition> {
    let compensating = RunState::Paused {
        reason: "timer".to_owned(),
    }
    .apply(RunEvent::Compensate {
        cause: CompensationCause::Cancelled,
    })?;
    assert_eq!(
        compensating.apply(RunEvent::CompensationsDone)?,
        RunState::Cancelled
    );
    Ok(())
}

#[test]
fn a_failing_compensation_leaves_the_run_failed_with_the_failure_visible()
-> Result<(), IllegalRunTransition> {
    let compensating = RunState::Running.apply(RunEvent::Compensate {
        cause: CompensationCause::Cancelled,
    })?;
    let ended = compensating.apply(RunEvent::CompensationFailed { failure: failure() })?;
    assert_eq!(
        ended,
        RunState::Failed {
            error: "the run was cancelled".to_owned(),
            compensation_failure: Some(failure()),
        }
    );
    assert_eq!(
        ended.to_string(),
        "failed: the run was cancelled; then the compensation of node `assign_b` failed: \
         roster unavailable"
    );
    Ok(())
}

#[test]
fn compensation_is_not_interrupted() {
    let compensating = RunState::Compensating {
        cause: CompensationCause::Cancelled,
    };
    for event in [
        RunEvent::Cancel,
        RunEvent::Fail {
            error: "again".to_owned(),
        },
        RunEvent::Complete,
    ] {
        assert!(compensating.apply(event).is_err());
    }
}

#[test]
fn a_refusal_names_the_state_and_the_event() {
    let refusal = RunState::Pending
        .apply(RunEvent::Complete)
        .expect_err("a pending run cannot complete");
    assert_eq!(
        refusal.to_string(),
        "a run that is pending cannot take the event `complete`"
    );
}

#[test]
fn states_and_events_are_stored_as_tagged_snake_case_json() -> Result<(), serde_json::Error> {
    let state = RunState::Compensating {
        cause: CompensationCause::Failed {
            error: "boom".to_owned(),
        },
    };
    assert_eq!(
        serde_json::to_value(&state)?,
        serde_json::json!({"state": "compensating", "cause": {"cause": "failed", "error": "boom"}})
    );
    assert_eq!(
        serde_json::to_value(RunEvent::CompensationsDone)?,
        serde_json::json!({"event": "compensations_done"})
    );
    for state in every_state() {
        let json = serde_json::to_value(&state)?;
        assert_eq!(json["state"], state.as_str());
        assert_eq!(serde_json::from_value::<RunState>(json)?, state);
    }
    for event in every_event() {
        let json = serde_json::to_value(&event)?;
        assert_eq!(json["event"], event.as_str());
        assert_eq!(serde_json::from_value::<RunEvent>(json)?, event);
    }
    Ok(())
}

fn text() -> impl Strategy<Value = String> {
    "[a-z ]{0,12}"
}

fn cause() -> impl Strategy<Value = CompensationCause> {
    prop_oneof![
        text().prop_map(|error| CompensationCause::Failed { error }),
        Just(CompensationCause::Cancelled),
    ]
}

fn event() -> impl Strategy<Value = RunEvent> {
    prop_oneof![
        Just(RunEvent::Start),
        Just(RunEvent::Initialized),
        text().prop_map(|reason| RunEvent::Pause { reason }),
        Just(RunEvent::Resume),
        Just(RunEvent::Complete),
        text().prop_map(|error| RunEvent::Fail { error }),
        Just(RunEvent::Cancel),
        cause().prop_map(|cause| RunEvent::Compensate { cause }),
        Just(RunEvent::CompensationsDone),
        (text(), text()).prop_map(|(node, error)| RunEvent::CompensationFailed {
            failure: CompensationFailure { node, error },
        }),
    ]
}

proptest! {
    #[test]
    fn random_event_sequences_stay_on_the_machine(events in prop::collection::vec(event(), 0..40)) {
        let mut state = RunState::Pending;
        for event in events {
            let was_terminal = state.is_terminal();
            match state.apply(event.clone()) {
                Ok(next) => {
                    prop_assert!(!was_terminal, "terminal {state:?} took {event:?}");
                    prop_assert_eq!(edge(&state, &event), Some(next.as_str()));
                    state = next;
                }
                Err(refusal) => {
                    prop_assert_eq!(edge(&state, &event), None);
                    prop_assert_eq!(&refusal.state, &state);
                    prop_assert_eq!(&refusal.event, &event);
                }
            }
            let json = serde_json::to_string(&state).map_err(|error| TestCaseError::fail(error.to_string()))?;
            let read_back: RunState = serde_json::from_str(&json).map_err(|error| TestCaseError::fail(error.to_string()))?;
            prop_assert_eq!(&read_back, &state);
        }
    }
}

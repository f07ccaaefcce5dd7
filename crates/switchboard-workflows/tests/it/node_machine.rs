//! `NodeState::apply` against the legal edges of the node machine, written out here as a table
//! independent of the implementation.

use jiff::Timestamp;
use proptest::prelude::*;
use switchboard_workflows::{IllegalNodeTransition, NodeEvent, NodeState};

/// Every legal edge of the node machine: (state, event, next state), by name.
const EDGES: &[(&str, &str, &str)] = &[
    ("pending", "start", "running"),
    ("pending", "skip", "skipped"),
    ("running", "retry", "retrying"),
    ("running", "await_approval", "waiting_approval"),
    ("running", "await_timer", "waiting_timer"),
    ("running", "complete", "completed"),
    ("running", "fail", "failed"),
    ("running", "skip", "skipped"),
    ("retrying", "start", "running"),
    ("retrying", "fail", "failed"),
    ("waiting_approval", "complete", "completed"),
    ("waiting_approval", "fail", "failed"),
    ("waiting_approval", "compensated", "compensated"),
    (
        "waiting_approval",
        "compensation_failed",
        "compensation_failed",
    ),
    ("waiting_timer", "complete", "completed"),
    ("waiting_timer", "fail", "failed"),
    ("completed", "compensate", "compensating"),
    ("compensating", "await_approval", "waiting_approval"),
    ("compensating", "compensated", "compensated"),
    ("compensating", "compensation_failed", "compensation_failed"),
];

/// The name of the state `event` leads to from `state`, or `None` when it is not an edge.
fn edge(state: &NodeState, event: &NodeEvent) -> Option<&'static str> {
    EDGES
        .iter()
        .find(|(from, on, _)| *from == state.as_str() && *on == event.as_str())
        .map(|(_, _, to)| *to)
}

fn noon() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("a timestamp in range")
}

/// One state of each kind.
fn every_state() -> Vec<NodeState> {
    vec![
        NodeState::Pending,
        NodeState::Running { attempt: 1 },
        NodeState::Retrying {
            attempt: 2,
            error: "timeout".to_owned(),
        },
        NodeState::WaitingApproval {
            proposal_id: "prop-1".to_owned(),
        },
        NodeState::WaitingTimer { until: noon() },
        NodeState::Completed,
        NodeState::Failed {
            error: "boom".to_owned(),
        },
        NodeState::Skipped {
            reason: "branch not taken".to_owned(),
        },
        NodeState::Compensating,
        NodeState::Compensated,
        NodeState::CompensationFailed {
            error: "boom".to_owned(),
        },
    ]
}

/// One event of each kind.
fn every_event() -> Vec<NodeEvent> {
    vec![
        NodeEvent::Start,
        NodeEvent::Retry {
            error: "timeout".to_owned(),
        },
        NodeEvent::AwaitApproval {
            proposal_id: "prop-1".to_owned(),
        },
        NodeEvent::AwaitTimer { until: noon() },
        NodeEvent::Complete,
        NodeEvent::Fail {
            error: "boom".to_owned(),
        },
        NodeEvent::Skip {
            reason: "branch not taken".to_owned(),
        },
        NodeEvent::Compensate,
        NodeEvent::Compensated,
        NodeEvent::CompensationFailed {
            error: "boom".to_owned(),
        },
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
                        IllegalNodeTransition {
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
fn attempts_are_counted_by_the_machine() -> Result<(), IllegalNodeTransition> {
    let retry = || NodeEvent::Retry {
        error: "timeout".to_owned(),
    };
    let node = NodeState::Pending.apply(NodeEvent::Start)?;
    assert_eq!(node, NodeState::Running { attempt: 1 });
    let node = node.apply(retry())?;
    assert_eq!(
        node,
        NodeState::Retrying {
            attempt: 2,
            error: "timeout".to_owned(),
        }
    );
    assert_eq!(node.to_string(), "retrying (attempt 2 next) after: timeout");
    let node = node.apply(NodeEvent::Start)?.apply(retry())?;
    let node = node.apply(NodeEvent::Start)?;
    assert_eq!(node, NodeState::Running { attempt: 3 });
    assert_eq!(node.apply(NodeEvent::Complete)?, NodeState::Completed);
    Ok(())
}

#[test]
fn a_waiting_node_ends_by_its_decision_or_its_timer() -> Result<(), IllegalNodeTransition> {
    let running = NodeState::Pending.apply(NodeEvent::Start)?;
    let waiting = running.apply(NodeEvent::AwaitApproval {
        proposal_id: "prop-7".to_owned(),
    })?;
    assert_eq!(
        waiting.to_string(),
        "waiting for approval of proposal prop-7"
    );
    assert_eq!(
        waiting.apply(NodeEvent::Fail {
            error: "rejected".to_owned()
        })?,
        NodeState::Failed {
            error: "rejected".to_owned()
        }
    );
    let timer = running.apply(NodeEvent::AwaitTimer { until: noon() })?;
    assert_eq!(timer.apply(NodeEvent::Complete)?, NodeState::Completed);
    // A waiting node is not restarted behind its decision's back.
    assert!(waiting.apply(NodeEvent::Start).is_err());
    Ok(())
}

#[test]
fn a_completed_node_may_be_compensated_once() -> Result<(), IllegalNodeTransition> {
    let compensating = NodeState::Completed.apply(NodeEvent::Compensate)?;
    let compensated = compensating.apply(NodeEvent::Compensated)?;
    assert!(compensated.is_terminal());
    let refusal = compensated
        .apply(NodeEvent::Compensate)
        .expect_err("a compensated node is not compensated twice");
    assert_eq!(
        refusal.to_string(),
        "a node that is compensated cannot take the event `compensate`"
    );
    assert!(!NodeState::Completed.is_terminal());
    Ok(())
}

#[test]
fn states_and_events_are_stored_as_tagged_snake_case_json() -> Result<(), serde_json::Error> {
    assert_eq!(
        serde_json::to_value(NodeState::Retrying {
            attempt: 2,
            error: "timeout".to_owned(),
        })?,
        serde_json::json!({"state": "retrying", "attempt": 2, "error": "timeout"})
    );
    assert_eq!(
        serde_json::to_value(NodeEvent::AwaitTimer { until: noon() })?,
        serde_json::json!({"event": "await_timer", "until": "2027-01-15T08:00:00Z"})
    );
    for state in every_state() {
        let json = serde_json::to_value(&state)?;
        assert_eq!(json["state"], state.as_str());
        assert_eq!(serde_json::from_value::<NodeState>(json)?, state);
    }
    for event in every_event() {
        let json = serde_json::to_value(&event)?;
        assert_eq!(json["event"], event.as_str());
        assert_eq!(serde_json::from_value::<NodeEvent>(json)?, event);
    }
    Ok(())
}

fn text() -> impl Strategy<Value = String> {
    "[a-z ]{0,12}"
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    (0_i64..4_000_000_000)
        .prop_map(|second| Timestamp::from_second(second).expect("a timestamp in range"))
}

fn event() -> impl Strategy<Value = NodeEvent> {
    prop_oneof![
        Just(NodeEvent::Start),
        text().prop_map(|error| NodeEvent::Retry { error }),
        text().prop_map(|proposal_id| NodeEvent::AwaitApproval { proposal_id }),
        timestamp().prop_map(|until| NodeEvent::AwaitTimer { until }),
        Just(NodeEvent::Complete),
        text().prop_map(|error| NodeEvent::Fail { error }),
        text().prop_map(|reason| NodeEvent::Skip { reason }),
        Just(NodeEvent::Compensate),
        Just(NodeEvent::Compensated),
        text().prop_map(|error| NodeEvent::CompensationFailed { error }),
    ]
}

proptest! {
    #[test]
    fn random_event_sequences_stay_on_the_machine(events in prop::collection::vec(event(), 0..40)) {
        let mut state = NodeState::Pending;
        let mut starts = 0_u32;
        for event in events {
            let was_terminal = state.is_terminal();
            match state.apply(event.clone()) {
                Ok(next) => {
                    prop_assert!(!was_terminal, "terminal {state:?} took {event:?}");
                    prop_assert_eq!(edge(&state, &event), Some(next.as_str()));
                    if let NodeState::Running { attempt } = next {
                        if event == NodeEvent::Start {
                            starts += 1;
                        }
                        prop_assert_eq!(attempt, starts, "the attempt counts the starts");
                    }
                    state = next;
                }
                Err(refusal) => {
                    prop_assert_eq!(edge(&state, &event), None);
                    prop_assert_eq!(&refusal.state, &state);
                    prop_assert_eq!(&refusal.event, &event);
                }
            }
            let json = serde_json::to_string(&state).map_err(|error| TestCaseError::fail(error.to_string()))?;
            let read_back: NodeState = serde_json::from_str(&json).map_err(|error| TestCaseError::fail(error.to_string()))?;
            prop_assert_eq!(&read_back, &state);
        }
    }
}

//! Runs that wait for a person: an agent-started run reaching an execute step proposes it and
//! pauses; the approval through `ToolRegistry::approve` runs the call once and the run goes on.
//! A rejection fails the run, and what it did is undone.

use std::sync::Arc;

use serde_json::json;
use switchboard_audit::{ActionEvent, Outcome};
use switchboard_core::{InvokeError, ProposalId};
use switchboard_registry::ProposalStatus;
use switchboard_workflows::{MemoryRunStore, NodeKind, NodeState, RunState, StepRecord};

use crate::support::*;

const SHIFT_A: &str = "acme-2026-11-23-am"; // sam works it
const SHIFT_B: &str = "acme-2026-11-23-pm"; // mark works it

fn proposal_of(steps: &[StepRecord]) -> ProposalId {
    steps
        .iter()
        .find_map(|step| match &step.state {
            NodeState::WaitingApproval { proposal_id } => {
                Some(ProposalId::new(proposal_id.as_str()))
            }
            _ => None,
        })
        .expect("a step waits for a decision")
}

#[tokio::test]
async fn an_agents_execute_step_waits_for_approval_then_runs_once() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "agent_assign",
        vec![
            tool(
                "assign",
                "roster_assign_shift",
                object([
                    ("shift_id", lit(json!(SHIFT_A))),
                    ("user_id", lit(json!("mark"))),
                ]),
            ),
            tool(
                "read",
                "roster_get_shift",
                object([("shift_id", lit(json!(SHIFT_A)))]),
            ),
        ],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = agent("agent-run");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    assert_eq!(
        assignee(&registry, SHIFT_A).await.as_deref(),
        Some("sam"),
        "nothing ran yet"
    );
    let proposal = proposal_of(&engine.steps(run, &caller).expect("readable"));

    registry
        .approve(&proposal, &human("approver"))
        .await
        .expect("a human admin approves");
    let outcome = wait(&engine, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(
        step(&steps, "assign", 0).output.expect("stored")["assignee"],
        "mark"
    );
    assert_eq!(
        step(&steps, "read", 0).output.expect("stored")["assignee"],
        "mark"
    );

    // The assignment ran exactly once: the approver's call, linked to the proposal.
    let runs: Vec<_> = audit(&registry, "approver")
        .await
        .into_iter()
        .filter(|record| &*record.tool == "roster_assign_shift" && record.outcome == Outcome::Ok)
        .collect();
    assert_eq!(runs.len(), 1);
    let action = runs[0].action.as_ref().expect("linked to the proposal");
    assert_eq!(action.event, ActionEvent::Approved);
    assert_eq!(action.id.as_str(), proposal.as_str());
}

#[tokio::test]
async fn a_rejected_approval_fails_the_run_and_undoes_what_it_did() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "approve_after_assign",
        vec![
            reassign("assign", SHIFT_B, "sam", "mark"),
            node(
                "ask",
                NodeKind::Approval {
                    tool: "roster_assign_shift".into(),
                    params: object([
                        ("shift_id", lit(json!(SHIFT_A))),
                        ("user_id", lit(json!("mark"))),
                    ]),
                    summary: None,
                },
            ),
        ],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("rejected-run");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    assert_eq!(assignee(&registry, SHIFT_B).await.as_deref(), Some("sam"));
    let proposal = proposal_of(&engine.steps(run, &caller).expect("readable"));

    registry
        .reject(&proposal, "not this week", &human("approver"))
        .await
        .expect("a human admin rejects");
    let outcome = wait(&engine, run, &caller).await;
    let RunState::Failed {
        error,
        compensation_failure,
    } = &outcome.state
    else {
        panic!("fails: {:?}", outcome.state);
    };
    assert!(
        error.contains("rejected") && error.contains("not this week"),
        "{error}"
    );
    assert_eq!(*compensation_failure, None);
    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(state(&steps, "assign"), NodeState::Compensated);
    assert!(matches!(state(&steps, "ask"), NodeState::Failed { .. }));
    assert_eq!(
        assignee(&registry, SHIFT_B).await.as_deref(),
        Some("mark"),
        "undone"
    );
    assert_eq!(
        assignee(&registry, SHIFT_A).await.as_deref(),
        Some("sam"),
        "never ran"
    );
}

#[tokio::test]
async fn an_agents_rejected_step_fails_the_run_and_changes_nothing() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "agent_rejected",
        vec![
            tool(
                "read",
                "roster_get_shift",
                object([("shift_id", lit(json!(SHIFT_A)))]),
            ),
            tool(
                "assign",
                "roster_assign_shift",
                object([
                    ("shift_id", lit(json!(SHIFT_A))),
                    ("user_id", lit(json!("mark"))),
                ]),
            ),
        ],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = agent("agent-rejected");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    let proposal = proposal_of(&engine.steps(run, &caller).expect("readable"));
    registry
        .reject(&proposal, "mark is on leave", &human("approver"))
        .await
        .expect("a human admin rejects");
    let outcome = wait(&engine, run, &caller).await;
    let RunState::Failed { error, .. } = &outcome.state else {
        panic!("fails: {:?}", outcome.state);
    };
    assert!(
        error.contains("node `assign`") && error.contains("mark is on leave"),
        "{error}"
    );
    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(state(&steps, "read"), NodeState::Completed);
    assert!(matches!(state(&steps, "assign"), NodeState::Failed { .. }));
    assert_eq!(
        step(&steps, "assign", 0).error.expect("stored")["kind"],
        "proposal_rejected"
    );
    assert_eq!(assignee(&registry, SHIFT_A).await.as_deref(), Some("sam"));
}

/// Waits until a step of the run waits for a decision other than `before`, and returns it.
async fn next_proposal(
    engine: &switchboard_workflows_engine::Engine,
    run: switchboard_workflows::RunId,
    caller: &switchboard_core::CallContext,
    before: &ProposalId,
) -> ProposalId {
    for _ in 0..2000 {
        let steps = engine.steps(run, caller).expect("readable");
        let waiting = steps.iter().find_map(|step| match &step.state {
            NodeState::WaitingApproval { proposal_id } if proposal_id != before.as_str() => {
                Some(ProposalId::new(proposal_id.as_str()))
            }
            _ => None,
        });
        if let Some(proposal) = waiting {
            return proposal;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("no new proposal in run {run}");
}

#[tokio::test]
async fn an_agents_run_proposes_its_mutating_undo_and_a_person_approves_it() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "agent_undo",
        vec![
            reassign("assign", SHIFT_A, "mark", "sam"),
            tool("check", "probe_broken", lit(json!({ "key": "agent-undo" }))),
        ],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = agent("agent-undo");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    let forward = proposal_of(&engine.steps(run, &caller).expect("readable"));
    registry
        .approve(&forward, &human("approver"))
        .await
        .expect("approved");

    // `check` fails; the agent may not undo the assignment itself, so it proposes the undo.
    let undo = next_proposal(&engine, run, &caller, &forward).await;
    let record = engine.run(run, &caller).expect("readable");
    assert!(
        matches!(record.state, RunState::Compensating { .. }),
        "{:?}",
        record.state
    );
    assert_eq!(assignee(&registry, SHIFT_A).await.as_deref(), Some("mark"));
    registry
        .approve(&undo, &human("approver"))
        .await
        .expect("approved");

    let outcome = wait(&engine, run, &caller).await;
    let RunState::Failed {
        error,
        compensation_failure,
    } = &outcome.state
    else {
        panic!("fails: {:?}", outcome.state);
    };
    assert!(error.contains("node `check`"), "{error}");
    assert_eq!(*compensation_failure, None, "the undo ran");
    assert_eq!(assignee(&registry, SHIFT_A).await.as_deref(), Some("sam"));
    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(state(&steps, "assign"), NodeState::Compensated);
}

#[tokio::test]
async fn cancelling_a_run_withdraws_the_proposal_it_waits_for() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "cancel_while_waiting",
        vec![tool(
            "assign",
            "roster_assign_shift",
            object([
                ("shift_id", lit(json!(SHIFT_A))),
                ("user_id", lit(json!("mark"))),
            ]),
        )],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = agent("cancel-while-waiting");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    let proposal = proposal_of(&engine.steps(run, &caller).expect("readable"));

    engine.cancel(run, &caller).await.expect("cancels");
    let outcome = wait(&engine, run, &caller).await;
    assert_eq!(outcome.state, RunState::Cancelled);
    let closed = registry
        .proposal(&proposal, &human("look"))
        .await
        .expect("readable");
    assert!(
        matches!(
            &closed.status,
            ProposalStatus::Withdrawn { by, reason, .. }
                if by.as_str() == "alice" && reason.contains("was cancelled")
        ),
        "the proposal is withdrawn by the run's caller: {:?}",
        closed.status
    );
    let step = step(&engine.steps(run, &caller).expect("readable"), "assign", 0);
    assert!(matches!(step.state, NodeState::Failed { .. }), "{step:?}");
    assert_eq!(step.error.expect("stored")["kind"], "proposal_withdrawn");

    // A person who approves it later is told it is closed, and nothing runs.
    let refused = registry
        .approve(&proposal, &human("late-approver"))
        .await
        .expect_err("a withdrawn proposal cannot be approved");
    assert!(
        matches!(
            refused,
            InvokeError::ProposalClosed {
                status: "withdrawn",
                ..
            }
        ),
        "{refused:?}"
    );
    assert_eq!(assignee(&registry, SHIFT_A).await.as_deref(), Some("sam"));
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(
        engine.run(run, &caller).expect("readable").state,
        RunState::Cancelled,
        "the run is not resumed"
    );
    let withdrawals: Vec<_> = audit(&registry, "cancel-while-waiting")
        .await
        .into_iter()
        .filter(|record| {
            record.action.as_ref().map(|action| action.event) == Some(ActionEvent::Withdrawn)
        })
        .collect();
    assert_eq!(withdrawals.len(), 1, "the withdrawal is audited");
}

/// A person approves while the run is being cancelled: the withdrawal finds the proposal
/// approved, so its call ran; the step completes with the call's output and the saga undoes it.
/// The run is cancelled and never goes on to its next node.
#[tokio::test]
async fn a_proposal_approved_as_its_run_is_cancelled_is_undone_and_the_run_does_not_go_on() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "approved_while_cancelled",
        vec![
            undo(
                node(
                    "ask",
                    NodeKind::Approval {
                        tool: "roster_assign_shift".into(),
                        params: object([
                            ("shift_id", lit(json!(SHIFT_A))),
                            ("user_id", lit(json!("mark"))),
                        ]),
                        summary: None,
                    },
                ),
                "roster_assign_shift",
                object([
                    ("shift_id", expr("params.shift_id")),
                    ("user_id", lit(json!("sam"))),
                ]),
            ),
            tool(
                "after",
                "probe_touch",
                lit(json!({ "key": "approved-while-cancelled" })),
            ),
        ],
    );
    let caller = human("approved-while-cancelled");
    let first = engine_with(&registry, &store, &definition);
    let run = first
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&first, run, &caller).await;
    let proposal = proposal_of(&first.steps(run, &caller).expect("readable"));
    // The engine does not see the decision before the cancel arrives.
    first.shutdown();
    registry
        .approve(&proposal, &human("approver"))
        .await
        .expect("approved");
    assert_eq!(assignee(&registry, SHIFT_A).await.as_deref(), Some("mark"));

    let second = engine_with(&registry, &store, &definition);
    second.cancel(run, &caller).await.expect("cancels");
    let outcome = wait(&second, run, &caller).await;
    assert_eq!(outcome.state, RunState::Cancelled);
    let steps = second.steps(run, &caller).expect("readable");
    assert_eq!(step(&steps, "ask", 0).state, NodeState::Compensated);
    assert_eq!(
        assignee(&registry, SHIFT_A).await.as_deref(),
        Some("sam"),
        "the approved change is undone"
    );
    assert!(
        crate::probe::calls("approved-while-cancelled").is_empty(),
        "the run did not go on"
    );
    assert!(matches!(
        registry
            .proposal(&proposal, &human("look"))
            .await
            .expect("readable")
            .status,
        ProposalStatus::Approved { .. }
    ));
}

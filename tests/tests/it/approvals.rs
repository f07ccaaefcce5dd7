//! Human-in-the-loop approvals end to end, with the sample roster: the roster's gate (a locked
//! week) refuses through the registry; an agent's request for a mutation through the
//! Orchestrator is interrupted ("awaiting approval") and resumed by a manager's decision.

use serde_json::json;
use switchboard::{
    AskError, ErrorKind, Initiator, InvokeError, ProposalStatus, ResumeDecision, Resumed,
    audit::ActionEvent,
};
use switchboard_integration_tests::{audit_records, boot, ctx};

#[tokio::test]
async fn the_roster_gate_refuses_a_shift_of_the_locked_week() {
    let runtime = boot().await;
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let error = runtime
        .registry
        .invoke(
            "roster_assign_shift",
            json!({ "shift_id": "acme-2026-11-20-pm", "user_id": "sam" }),
            &mark,
        )
        .await
        .expect_err("the week of 2026-11-16 is locked");
    assert_eq!(error.kind(), ErrorKind::GateRefused);
    assert_eq!(error.details()["code"], "week_locked");
    assert_eq!(
        audit_records(&runtime.registry, &mark).await[0]
            .outcome
            .as_str(),
        "gate_refused"
    );
    // A shift of the open week is assigned as before.
    runtime
        .registry
        .invoke(
            "roster_assign_shift",
            json!({ "shift_id": "acme-2026-11-23-pm", "user_id": "sam" }),
            &ctx("acme", "mark", &["manager"], Initiator::Human),
        )
        .await
        .expect("an open week");
    // Clearing the locked week is refused too, for an admin who confirmed.
    let mut alice = ctx("acme", "alice", &["admin"], Initiator::Human);
    alice.confirmed = true;
    let error = runtime
        .registry
        .invoke(
            "roster_clear_roster",
            json!({ "week_start": "2026-11-16" }),
            &alice,
        )
        .await
        .expect_err("locked");
    assert_eq!(error.kind(), ErrorKind::GateRefused);
}

#[tokio::test]
async fn an_agents_assignment_awaits_approval_and_resumes_on_a_managers_decision() {
    let runtime = boot().await;
    let agent = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let error = runtime
        .orchestrator
        .ask("assign shift acme-2026-11-28-am to sam", &agent)
        .await
        .expect_err("an agent's mutation waits for a human");
    let AskError::AwaitingApproval { route, proposal } = &error else {
        panic!("expected awaiting approval, got {error:?}");
    };
    assert_eq!(route.tool, "roster_assign_shift");
    assert_eq!(error.kind().as_str(), "approval_required");
    let serialized = serde_json::to_value(&error).expect("serializes");
    assert_eq!(serialized["proposal_id"], json!(proposal.id));

    // Sam (staff) may not approve, not even as a human: no permission for the assignment.
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    let refused = runtime
        .orchestrator
        .resume(&proposal.id, ResumeDecision::Approve, &sam)
        .await
        .expect_err("staff cannot assign");
    assert_eq!(refused.kind(), ErrorKind::PermissionDenied);

    // Mark (manager) approves: the assignment runs once, as Mark.
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let resumed = runtime
        .orchestrator
        .resume(&proposal.id, ResumeDecision::Approve, &mark)
        .await
        .expect("a manager approves");
    let Resumed::Completed {
        proposal: done,
        result,
    } = resumed
    else {
        panic!("approved");
    };
    assert_eq!(result["assignee"], "sam");
    assert!(matches!(done.status, ProposalStatus::Approved { ref by, .. } if by == "mark"));
    let records = audit_records(&runtime.registry, &mark).await;
    let run = records
        .iter()
        .find(|record| record.action.as_ref().map(|a| a.event) == Some(ActionEvent::Approved))
        .expect("the approved run is audited under the approver's correlation id");
    assert_eq!(run.user_id.as_ref().map(|u| u.as_str()), Some("mark"));

    // A second resume finds the proposal decided: the request cannot be replayed.
    let again = runtime
        .orchestrator
        .resume(&proposal.id, ResumeDecision::Approve, &mark)
        .await
        .expect_err("decided");
    assert!(matches!(
        again,
        AskError::Invoke {
            error: InvokeError::ProposalClosed { .. },
            ..
        }
    ));
}

#[tokio::test]
async fn a_rejected_request_resumes_as_rejected_and_nothing_runs() {
    let runtime = boot().await;
    let agent = ctx("globex", "sue", &["staff"], Initiator::Agent);
    let Err(AskError::AwaitingApproval { proposal, .. }) = runtime
        .orchestrator
        .ask("assign shift globex-2026-11-28-am to sue", &agent)
        .await
    else {
        panic!("awaiting approval");
    };
    let hank = ctx("globex", "hank", &["manager"], Initiator::Human);
    let resumed = runtime
        .orchestrator
        .resume(
            &proposal.id,
            ResumeDecision::Reject {
                feedback: "Sue is off that weekend".to_owned(),
            },
            &hank,
        )
        .await
        .expect("a manager rejects");
    assert!(matches!(resumed, Resumed::Rejected { .. }));
    let shifts = runtime
        .registry
        .invoke(
            "roster_list_shifts",
            json!({ "from": "2026-11-28", "to": "2026-11-28" }),
            &hank,
        )
        .await
        .expect("a read");
    assert!(
        shifts["shifts"]
            .as_array()
            .expect("a list")
            .iter()
            .all(|shift| shift.get("assignee").is_none()),
        "{shifts}"
    );
    // Reads are not interrupted, even for an agent.
    runtime
        .orchestrator
        .ask("shifts from 2026-11-23 to 2026-11-24", &agent)
        .await
        .expect("a read runs at once");
}

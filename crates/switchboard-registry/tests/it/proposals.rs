//! Proposals and approvals: propose → approve runs the tool once as the approver; reject and
//! expiry are final; approving twice, an agent approving, and an approver without the
//! permission are refused (and leave the proposal as it was); each step is audited and linked
//! by the proposal's id.

use std::time::Duration;

use crate::vault::{admin, agent, all_records, context, start, tally};
use serde_json::json;
use switchboard_audit::{ActionEvent, Outcome};
use switchboard_core::{ErrorKind, Initiator, InvokeError};
use switchboard_registry::{AgentMutations, ProposalStatus, RegistryConfig, ToolRegistry};

fn add(amount: i64) -> serde_json::Value {
    json!({ "amount": amount })
}

#[tokio::test]
async fn propose_then_approve_runs_the_tool_once_as_the_approver() {
    let registry = start(ToolRegistry::builder()).await;
    let proposal = registry
        .propose("vault_add", add(9), &agent("proposing"), Some("add nine"))
        .await
        .expect("stored");
    assert_eq!(proposal.status, ProposalStatus::Pending);
    assert_eq!(proposal.summary, "add nine");
    assert_eq!(proposal.proposer.initiator, Initiator::Agent);
    assert_eq!(tally(&registry).await.runs, 0, "a proposal does not run");

    let approved = registry
        .approve(&proposal.id, &admin("approving"))
        .await
        .expect("a human admin approves");
    assert_eq!(approved.output, json!({ "total": 9, "runs": 1 }));
    assert!(matches!(
        &approved.proposal.status,
        ProposalStatus::Approved { by, outcome: Some(outcome), .. } if by == "alice" && outcome == "ok"
    ));
    assert_eq!(tally(&registry).await.runs, 1);

    // Approving again is refused, and the tool does not run again.
    let error = registry
        .approve(&proposal.id, &admin("approving-again"))
        .await
        .expect_err("decided");
    assert_eq!(error.kind(), ErrorKind::ProposalClosed);
    assert_eq!(error.details()["status"], "approved");
    assert_eq!(tally(&registry).await.runs, 1);

    // Proposed, approved (the run, as the approver) and the refused second approval: all
    // linked by the proposal's id.
    let linked: Vec<_> = all_records(&registry)
        .await
        .into_iter()
        .filter(|record| {
            record.action.as_ref().map(|action| action.id.as_str()) == Some(proposal.id.as_str())
        })
        .collect();
    let events: Vec<_> = linked
        .iter()
        .map(|record| (record.action.as_ref().map(|a| a.event), record.outcome))
        .collect();
    assert_eq!(
        events,
        [
            (Some(ActionEvent::Proposed), Outcome::Ok),
            (Some(ActionEvent::Approved), Outcome::Ok),
            (
                Some(ActionEvent::Approved),
                Outcome::Error(ErrorKind::ProposalClosed)
            ),
        ]
    );
    assert_eq!(linked[1].initiator, Initiator::Human);
    assert_eq!(
        linked[1].correlation_id.as_ref().map(|c| c.as_str()),
        Some("approving")
    );
}

#[tokio::test]
async fn a_rejection_is_final_and_carries_feedback() {
    let registry = start(ToolRegistry::builder()).await;
    let proposal = registry
        .propose("vault_add", add(1), &agent("p"), None)
        .await
        .expect("stored");
    let rejected = registry
        .reject(&proposal.id, "not this week", &admin("rejecting"))
        .await
        .expect("a human admin rejects");
    assert!(matches!(
        &rejected.status,
        ProposalStatus::Rejected { feedback, .. } if feedback == "not this week"
    ));
    let error = registry
        .approve(&proposal.id, &admin("too-late"))
        .await
        .expect_err("rejected");
    assert!(
        matches!(
            &error,
            InvokeError::ProposalClosed {
                status: "rejected",
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(tally(&registry).await.runs, 0);
    let rejected_record = all_records(&registry)
        .await
        .into_iter()
        .find(|record| record.action.as_ref().map(|a| a.event) == Some(ActionEvent::Rejected))
        .expect("the rejection is audited");
    assert_eq!(rejected_record.outcome, Outcome::Ok);
}

#[tokio::test]
async fn an_expired_proposal_cannot_be_approved_and_its_expiry_is_audited() {
    let config = RegistryConfig {
        proposal_ttl: Duration::from_millis(30),
        ..RegistryConfig::default()
    };
    let registry = start(ToolRegistry::builder().config(config)).await;
    let proposal = registry
        .propose("vault_add", add(1), &agent("p"), None)
        .await
        .expect("stored");
    tokio::time::sleep(Duration::from_millis(60)).await;
    let error = registry
        .approve(&proposal.id, &admin("late"))
        .await
        .expect_err("expired");
    assert!(
        matches!(
            &error,
            InvokeError::ProposalClosed {
                status: "expired",
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(tally(&registry).await.runs, 0);
    let expired: Vec<_> = all_records(&registry)
        .await
        .into_iter()
        .filter(|record| record.action.as_ref().map(|a| a.event) == Some(ActionEvent::Expired))
        .collect();
    assert_eq!(expired.len(), 1, "expired exactly once: {expired:#?}");
    // The sweep finds nothing more to expire.
    assert_eq!(registry.expire_proposals().await, 0);
    let listed = registry.proposals(&admin("list")).await.expect("listed");
    assert_eq!(listed[0].status.as_str(), "expired");
}

#[tokio::test]
async fn an_agent_can_never_approve_not_even_its_own_proposal() {
    let registry = start(ToolRegistry::builder()).await;
    let proposer = agent("p");
    let proposal = registry
        .propose("vault_add", add(1), &proposer, None)
        .await
        .expect("stored");
    let error = registry
        .approve(&proposal.id, &agent("self-approval"))
        .await
        .expect_err("an agent");
    assert_eq!(error.kind(), ErrorKind::ApprovalDenied);
    let error = registry
        .reject(&proposal.id, "no", &agent("self-rejection"))
        .await
        .expect_err("an agent");
    assert_eq!(error.kind(), ErrorKind::ApprovalDenied);
    // Still pending: a human can still decide.
    let pending = registry
        .proposal(&proposal.id, &admin("look"))
        .await
        .expect("found");
    assert!(pending.status.is_pending());
    registry
        .approve(&proposal.id, &admin("human"))
        .await
        .expect("a human approves");
}

#[tokio::test]
async fn an_approver_without_the_permission_is_refused_and_the_proposal_stays_pending() {
    let registry = start(ToolRegistry::builder()).await;
    let proposal = registry
        .propose("vault_add", add(1), &agent("p"), None)
        .await
        .expect("stored");
    // The built-in matrix gives managers nothing under `vault.`.
    let manager = context("mark", "manager", Initiator::Human, "manager").build();
    let error = registry
        .approve(&proposal.id, &manager)
        .await
        .expect_err("no permission");
    assert_eq!(error.kind(), ErrorKind::PermissionDenied);
    assert!(
        registry
            .proposal(&proposal.id, &admin("look"))
            .await
            .expect("found")
            .status
            .is_pending()
    );
    // Another organisation does not see it at all.
    let stranger = switchboard_core::CallContext::builder()
        .org("globex")
        .user("gina")
        .session("s")
        .correlation("globex")
        .role("admin")
        .initiator(Initiator::Human)
        .build();
    let error = registry
        .approve(&proposal.id, &stranger)
        .await
        .expect_err("another org");
    assert_eq!(error.kind(), ErrorKind::ProposalNotFound);
    assert_eq!(tally(&registry).await.runs, 0);
}

#[tokio::test]
async fn a_restricted_proposal_needs_a_confirmed_approver() {
    let registry = start(ToolRegistry::builder()).await;
    let proposal = registry
        .propose("vault_wipe", json!({}), &agent("p"), None)
        .await
        .expect("stored");
    let error = registry
        .approve(&proposal.id, &admin("unconfirmed"))
        .await
        .expect_err("not confirmed");
    assert_eq!(error.kind(), ErrorKind::CategoryDenied);
    let mut confirmed = admin("confirmed");
    confirmed.confirmed = true;
    registry
        .approve(&proposal.id, &confirmed)
        .await
        .expect("confirmed");
    assert_eq!(tally(&registry).await.runs, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_approvers_run_the_tool_once() {
    let registry = start(ToolRegistry::builder()).await;
    let proposal = registry
        .propose(
            "vault_add",
            json!({ "amount": 2, "delay_ms": 10 }),
            &agent("p"),
            None,
        )
        .await
        .expect("stored");
    let approvals: Vec<_> = (0..10)
        .map(|index| {
            let registry = registry.clone();
            let id = proposal.id.clone();
            tokio::spawn(async move { registry.approve(&id, &admin(&format!("a{index}"))).await })
        })
        .collect();
    let mut approved = 0;
    for approval in approvals {
        match approval.await.expect("no panic") {
            Ok(_) => approved += 1,
            Err(error) => assert_eq!(error.kind(), ErrorKind::ProposalClosed),
        }
    }
    assert_eq!(approved, 1);
    assert_eq!(tally(&registry).await.runs, 1);
}

#[tokio::test]
async fn reads_are_not_proposed_and_agents_can_be_set_to_propose_on_execute() {
    let registry = start(ToolRegistry::builder()).await;
    let error = registry
        .propose("vault_peek", json!({}), &agent("p"), None)
        .await
        .expect_err("a read");
    assert_eq!(error.kind(), ErrorKind::CategoryDenied);
    // By default an agent's execute call is refused...
    let error = registry
        .invoke("vault_add", add(1), &agent("direct"))
        .await
        .expect_err("an agent");
    assert_eq!(error.kind(), ErrorKind::CategoryDenied);

    // ...and with `AgentMutations::Propose` it is stored and answered `approval_required`.
    let config = RegistryConfig {
        agent_mutations: AgentMutations::Propose,
        ..RegistryConfig::default()
    };
    let registry = start(ToolRegistry::builder().config(config)).await;
    let error = registry
        .invoke("vault_add", add(1), &agent("direct"))
        .await
        .expect_err("needs approval");
    let InvokeError::ApprovalRequired { proposal_id, .. } = &error else {
        panic!("expected approval_required, got {error:?}");
    };
    assert_eq!(error.kind().as_str(), "approval_required");
    let stored = registry
        .proposal(proposal_id, &admin("look"))
        .await
        .expect("stored");
    assert_eq!(&*stored.tool, "vault_add");
    assert_eq!(tally(&registry).await.runs, 0);
    registry
        .approve(proposal_id, &admin("ok"))
        .await
        .expect("approved");
    assert_eq!(tally(&registry).await.runs, 1);
}

#[tokio::test]
async fn an_approved_proposals_outcome_is_read_back_in_its_organisation_only() {
    let registry = start(ToolRegistry::builder()).await;
    let proposal = registry
        .propose("vault_add", add(4), &agent("outcome"), None)
        .await
        .expect("stored");
    let pending = registry
        .approved_outcome(&proposal.id, &agent("outcome"))
        .await
        .expect("readable");
    assert_eq!(pending, None, "nothing ran yet");

    let approved = registry
        .approve(&proposal.id, &admin("approving"))
        .await
        .expect("approved");
    let outcome = registry
        .approved_outcome(&proposal.id, &agent("outcome"))
        .await
        .expect("readable");
    assert_eq!(outcome, Some(Ok(approved.output)));
    assert_eq!(
        tally(&registry).await.runs,
        1,
        "reading the outcome runs nothing"
    );

    let mut stranger = agent("outcome");
    stranger.org_id = Some("globex".into());
    let refused = registry
        .approved_outcome(&proposal.id, &stranger)
        .await
        .expect_err("another organisation never sees it");
    assert_eq!(refused.kind(), ErrorKind::ProposalNotFound);
}

#[tokio::test]
async fn a_withdrawn_proposal_is_closed_and_only_its_proposer_or_a_decider_withdraws_it() {
    let registry = start(ToolRegistry::builder()).await;
    let proposal = registry
        .propose("vault_add", add(4), &agent("withdraw-propose"), None)
        .await
        .expect("stored");

    // Another agent (another user) may neither decide nor withdraw it.
    let stranger = context("bob", "admin", Initiator::Agent, "withdraw-stranger").build();
    let refused = registry
        .withdraw(&proposal.id, "not mine", &stranger)
        .await
        .expect_err("not the proposer, and an agent cannot decide");
    assert_eq!(refused.kind(), ErrorKind::ApprovalDenied);

    // The proposer withdraws it, even as an agent.
    let withdrawn = registry
        .withdraw(&proposal.id, "the run was cancelled", &agent("withdraw"))
        .await
        .expect("the proposer withdraws");
    assert!(matches!(
        &withdrawn.status,
        ProposalStatus::Withdrawn { by, reason, .. }
            if by == "alice" && reason == "the run was cancelled"
    ));
    let error = registry
        .approve(&proposal.id, &admin("withdraw-approve"))
        .await
        .expect_err("withdrawn");
    assert_eq!(error.kind(), ErrorKind::ProposalClosed);
    assert_eq!(error.details()["status"], "withdrawn");
    assert_eq!(tally(&registry).await.runs, 0, "nothing ran");
    let events: Vec<_> = all_records(&registry)
        .await
        .into_iter()
        .filter(|record| {
            record.action.as_ref().map(|action| action.id.as_str()) == Some(proposal.id.as_str())
        })
        .map(|record| (record.action.map(|action| action.event), record.outcome))
        .collect();
    assert_eq!(
        events,
        [
            (Some(ActionEvent::Proposed), Outcome::Ok),
            (
                Some(ActionEvent::Withdrawn),
                Outcome::Error(ErrorKind::ApprovalDenied)
            ),
            (Some(ActionEvent::Withdrawn), Outcome::Ok),
            (
                Some(ActionEvent::Approved),
                Outcome::Error(ErrorKind::ProposalClosed)
            ),
        ]
    );
}

#[tokio::test]
async fn a_proposal_under_an_idempotency_key_is_made_once() {
    let registry = start(ToolRegistry::builder()).await;
    let keyed = |correlation: &str| {
        let mut context = agent(correlation);
        context.idempotency_key = Some("wf:run:step:0:1".into());
        context
    };
    let first = registry
        .propose("vault_add", add(5), &keyed("keyed-first"), None)
        .await
        .expect("stored");
    registry
        .reject(&first.id, "not now", &admin("keyed-reject"))
        .await
        .expect("rejected");
    let again = registry
        .propose("vault_add", add(5), &keyed("keyed-again"), None)
        .await
        .expect("the first proposal, as it is now");
    assert_eq!(again.id, first.id);
    assert!(matches!(again.status, ProposalStatus::Rejected { .. }));
    let conflict = registry
        .propose("vault_add", add(6), &keyed("keyed-other"), None)
        .await
        .expect_err("the key names another proposal");
    assert_eq!(conflict.kind(), ErrorKind::IdempotencyConflict);
    let listed = registry
        .proposals(&admin("keyed-list"))
        .await
        .expect("lists");
    assert_eq!(listed.len(), 1, "{listed:#?}");
}

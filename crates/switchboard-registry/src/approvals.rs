//! Proposals and human decisions: `propose`, `proposals`, `approve`, `reject`, `withdraw`,
//! `expire_proposals` on [`ToolRegistry`].
//!
//! A proposal goes through the same checks as a call up to the mutation context (context,
//! `org_id`, thread, agent scope, input, gate, scope ids) and is stored instead of run. A
//! decision needs a human principal of the proposal's organisation who holds the target tool's
//! permission (and, for a restricted tool, has confirmed): an agent can never decide, not even
//! on its own proposal. These checks run *before* the decision is recorded, so a refused
//! approver leaves the proposal pending. The decision itself is a compare-and-set in the
//! `ProposalStore`; an approval then runs the target through the normal call path with the
//! proposal id as idempotency key and action id, so the tool runs exactly once, as the
//! approver. Every decision attempt on a found proposal, and every expiry, leaves an audit
//! record linked by the proposal's id.

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

use switchboard_approvals::{
    Claim, Decision, Fingerprint, IdempotencyScope, Proposal, ProposalStatus, StoreError,
    TransitionError,
};
use switchboard_audit::{ActionEvent, AuditAction, digest_json};
use switchboard_core::{
    ActionId, CallContext, Caller, IdempotencyKey, Initiator, InvokeError, ProposalId,
};
use tracing::Instrument;

use crate::{
    audit::AuditDraft,
    invoke::{Mode, Step, audit_failed, category_refusal, finish, not_found, outcome_of},
    job::JsonRequest,
    registry::ToolRegistry,
    table::RegisteredTool,
};

/// What an approval returns: the proposal as decided, and what its tool returned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Approved {
    /// The proposal, now approved (with the run's outcome).
    pub proposal: Proposal,
    /// The target tool's output.
    pub output: Value,
}

impl ToolRegistry {
    /// Stores a call of an execute or restricted tool as a proposal instead of running it,
    /// after every check up to the mutation context (context, `org_id`, thread, agent scope,
    /// input, gate, scope ids). The proposer needs no permission for the target: the approver
    /// does. `summary` is shown to the approver (default: the tool and its params).
    pub async fn propose(
        &self,
        name: &str,
        params: Value,
        context: &CallContext,
        summary: Option<&str>,
    ) -> Result<Proposal, InvokeError> {
        let span = tracing::info_span!(
            "propose",
            tool = %switchboard_audit::clamp_tool_name(name),
            correlation_id = context.correlation_id.as_ref().map(|id| id.as_str()),
        );
        let step = self
            .run(
                name,
                JsonRequest::new(params),
                context,
                Mode::Propose { summary },
            )
            .instrument(span)
            .await?;
        match step {
            Step::Proposed(proposal) => Ok(*proposal),
            // `admit` refuses a non-mutating tool in propose mode, so this is not reached.
            Step::Output(_) => Err(not_found(name, Vec::new())),
        }
    }

    /// The proposals of the caller's organisation, newest first (overdue ones expire first).
    pub async fn proposals(&self, context: &CallContext) -> Result<Vec<Proposal>, InvokeError> {
        let caller = verify(context)?;
        self.expire_proposals().await;
        self.shared()
            .proposals
            .list(&caller.org_id)
            .map_err(store_unavailable)
    }

    /// One proposal of the caller's organisation.
    pub async fn proposal(
        &self,
        id: &ProposalId,
        context: &CallContext,
    ) -> Result<Proposal, InvokeError> {
        let caller = verify(context)?;
        self.expire_proposals().await;
        self.shared()
            .proposals
            .get(&caller.org_id, id)
            .map_err(store_unavailable)?
            .ok_or_else(|| not_found_proposal(id))
    }

    /// What the run of an approved proposal of the caller's organisation returned: its output
    /// or its error, as the idempotency store keeps them under the proposal's id. `Ok(None)`
    /// while the proposal is not approved, or approved but its run has not started yet (a
    /// write is noted when it ends: see [`watch_writes`](Self::watch_writes)); a run in flight
    /// is waited for. How a workflow whose step became a proposal learns the step's output.
    pub async fn approved_outcome(
        &self,
        id: &ProposalId,
        context: &CallContext,
    ) -> Result<Option<Result<Value, InvokeError>>, InvokeError> {
        let proposal = self.proposal(id, context).await?;
        Ok(self.outcome_of_approved(&proposal).await)
    }

    async fn outcome_of_approved(&self, proposal: &Proposal) -> Option<Result<Value, InvokeError>> {
        if !matches!(proposal.status, ProposalStatus::Approved { .. }) {
            return None;
        }
        let params = switchboard_core::digest_json(&proposal.params).ok()?;
        let scope = IdempotencyScope::new(
            proposal.org_id.clone(),
            IdempotencyKey::new(proposal.id.as_str()),
        );
        let fingerprint = Fingerprint::new(Arc::clone(&proposal.tool), params);
        let store = &self.shared().idempotency;
        loop {
            match store.claim(&scope, &fingerprint, Timestamp::now()) {
                Claim::Done(stored) => return Some(stored.result.clone()),
                // A waiter that ends without a result: the run gave the key back; claim again.
                Claim::Running(waiter) => {
                    if let Some(stored) = waiter.wait().await {
                        return Some(stored.result.clone());
                    }
                }
                // Approved, but its run has not claimed the key yet: give the key back.
                Claim::Run => {
                    store.release(&scope);
                    return None;
                }
                Claim::Conflict => return None,
            }
        }
    }

    /// Approves a pending proposal and runs its tool once, as `approver`, in the proposer's
    /// thread and project. Refused (and the proposal left pending) when the approver is not a
    /// human, lacks the tool's permission, or (restricted tools) has not confirmed.
    pub async fn approve(
        &self,
        id: &ProposalId,
        approver: &CallContext,
    ) -> Result<Approved, InvokeError> {
        let span = tracing::info_span!("approve", proposal_id = %id);
        async {
            let (proposal, caller) = self
                .decidable(id, approver, ActionEvent::Approved, ProposerMay::Not)
                .await?;
            let decision = Decision::Approve {
                by: caller.user_id.clone(),
            };
            self.decide(&proposal, approver, decision, ActionEvent::Approved)
                .await?;
            let mut run_context = approver.clone();
            run_context.thread_id = proposal.proposer.thread_id.clone();
            run_context.project_id = proposal.proposer.project_id.clone();
            run_context.idempotency_key = None;
            let ran = self
                .run(
                    &proposal.tool,
                    JsonRequest::new(Value::clone(&proposal.params)),
                    &run_context,
                    Mode::Approval {
                        proposal: &proposal.id,
                    },
                )
                .await;
            let outcome = match &ran {
                Ok(_) => "ok",
                Err(error) => error.kind().as_str(),
            };
            // The tool has run (exactly once, keyed by the proposal id) and its audit record
            // holds the outcome; a store that fails to note it on the proposal is logged, and
            // the approver still gets the run's result.
            let store = &self.shared().proposals;
            if let Err(error) = store.record_outcome(&proposal.org_id, &proposal.id, outcome) {
                tracing::error!(%error, proposal_id = %proposal.id, "the run's outcome is not on the proposal");
            }
            let output = match ran? {
                Step::Output(output) => output,
                Step::Proposed(_) => Value::Null,
            };
            let proposal = match store.get(&proposal.org_id, &proposal.id) {
                Ok(Some(current)) => current,
                Ok(None) | Err(_) => proposal,
            };
            Ok(Approved { proposal, output })
        }
        .instrument(span)
        .await
    }

    /// Rejects a pending proposal with feedback for its proposer. The same principal rules
    /// as [`approve`](Self::approve) apply.
    pub async fn reject(
        &self,
        id: &ProposalId,
        feedback: &str,
        approver: &CallContext,
    ) -> Result<Proposal, InvokeError> {
        let span = tracing::info_span!("reject", proposal_id = %id);
        async {
            let (proposal, caller) = self
                .decidable(id, approver, ActionEvent::Rejected, ProposerMay::Not)
                .await?;
            let decision = Decision::Reject {
                by: caller.user_id.clone(),
                feedback: feedback.to_owned(),
            };
            self.decide(&proposal, approver, decision, ActionEvent::Rejected)
                .await
        }
        .instrument(span)
        .await
    }

    /// Withdraws a pending proposal its proposer no longer wants (a workflow run cancelled or
    /// failed while its step waited for the decision), so that nobody approves it later; an
    /// approval afterwards is refused as `proposal_closed`. Withdrawing is not deciding: the
    /// proposer itself may withdraw (the same user of the same organisation, an agent acting
    /// for them included), as may anyone who could decide it. Like a decision it is a
    /// compare-and-set from pending, and the attempt is audited (`withdrawn`).
    pub async fn withdraw(
        &self,
        id: &ProposalId,
        reason: &str,
        context: &CallContext,
    ) -> Result<Proposal, InvokeError> {
        let span = tracing::info_span!("withdraw", proposal_id = %id);
        async {
            let (proposal, caller) = self
                .decidable(id, context, ActionEvent::Withdrawn, ProposerMay::Act)
                .await?;
            let decision = Decision::Withdraw {
                by: caller.user_id.clone(),
                reason: reason.to_owned(),
            };
            self.decide(&proposal, context, decision, ActionEvent::Withdrawn)
                .await
        }
        .instrument(span)
        .await
    }

    /// Expires every pending proposal past its expiry, auditing each; returns how many. A
    /// store that fails is logged and expires nothing now: every decision still checks the
    /// expiry itself, so an overdue proposal can never be approved.
    pub async fn expire_proposals(&self) -> usize {
        let expired = match self.shared().proposals.expire_overdue(Timestamp::now()) {
            Ok(expired) => expired,
            Err(error) => {
                tracing::error!(%error, "overdue proposals not expired");
                Vec::new()
            }
        };
        for proposal in &expired {
            self.audit_expiry(proposal).await;
        }
        if !expired.is_empty() {
            self.shared().note_write();
        }
        expired.len()
    }

    /// Finds the proposal and checks that `approver` may decide on it (or, with
    /// [`ProposerMay::Act`], is its proposer); a refusal is audited.
    async fn decidable(
        &self,
        id: &ProposalId,
        approver: &CallContext,
        event: ActionEvent,
        proposer: ProposerMay,
    ) -> Result<(Proposal, Caller), InvokeError> {
        let caller = verify(approver)?;
        let proposal = self
            .shared()
            .proposals
            .get(&caller.org_id, id)
            .map_err(store_unavailable)?
            .ok_or_else(|| not_found_proposal(id))?;
        if proposer == ProposerMay::Act && proposal.proposer.user_id == caller.user_id {
            return Ok((proposal, caller));
        }
        let table = self.shared().table.load();
        let checked = match table.get(&proposal.tool) {
            None => Err(not_found(
                &proposal.tool,
                table.similar_names(&proposal.tool),
            )),
            Some(tool) => may_decide(tool, &proposal, &caller),
        };
        if let Err(error) = checked {
            self.audit_decision(&proposal, approver, event, Err(&error))
                .await?;
            return Err(error);
        }
        Ok((proposal, caller))
    }

    /// Records `decision` (a compare-and-set from pending) and audits the attempt.
    async fn decide(
        &self,
        proposal: &Proposal,
        approver: &CallContext,
        decision: Decision,
        event: ActionEvent,
    ) -> Result<Proposal, InvokeError> {
        let decided = self.shared().proposals.decide(
            &proposal.org_id,
            &proposal.id,
            decision,
            Timestamp::now(),
        );
        let result = match decided {
            Ok(decided) => {
                self.shared().note_write();
                Ok(decided)
            }
            Err(TransitionError::Expired(expired)) => {
                self.shared().note_write();
                self.audit_expiry(&expired).await;
                Err(closed(&expired))
            }
            Err(TransitionError::Closed(current)) => Err(closed(&current)),
            Err(TransitionError::Store(error)) => Err(store_unavailable(error)),
            Err(TransitionError::NotFound | _) => Err(not_found_proposal(&proposal.id)),
        };
        match &result {
            // An approval's record is its run's (written by the call path); a rejection's is here.
            Ok(_) if event == ActionEvent::Approved => {}
            Ok(_) => {
                self.audit_decision(proposal, approver, event, Ok(()))
                    .await?
            }
            Err(error) => {
                self.audit_decision(proposal, approver, event, Err(error))
                    .await?;
            }
        }
        result
    }

    /// One record for a decision attempt, linked by the proposal's id.
    async fn audit_decision(
        &self,
        proposal: &Proposal,
        context: &CallContext,
        event: ActionEvent,
        result: Result<(), &InvokeError>,
    ) -> Result<(), InvokeError> {
        let shared = self.shared();
        let table = shared.table.load();
        let mut draft = AuditDraft::open(
            &shared.audit,
            &proposal.tool,
            table.get(&proposal.tool),
            context,
            digest_json(&proposal.params),
        )
        .await
        .map_err(|error| audit_failed(&proposal.tool, &error))?;
        draft.set_action(AuditAction::new(ActionId::new(proposal.id.as_str()), event));
        let outcome = match result {
            Ok(()) => Ok(()),
            Err(error) => Err(error.clone()),
        };
        let acknowledged = draft.close(outcome_of(&outcome), None).acknowledged().await;
        finish(acknowledged, &proposal.tool, outcome)
    }

    /// The record of an expiry, in the proposer's name.
    async fn audit_expiry(&self, proposal: &Proposal) {
        let proposer = &proposal.proposer;
        let mut context = CallContext::builder()
            .org(proposal.org_id.clone())
            .user(proposer.user_id.clone())
            .session(proposer.session_id.clone())
            .correlation(proposer.correlation_id.clone())
            .initiator(proposer.initiator)
            .build();
        context.agent_type = proposer.agent_type.clone();
        context.thread_id = proposer.thread_id.clone();
        context.project_id = proposer.project_id.clone();
        if let Err(error) = self
            .audit_decision(proposal, &context, ActionEvent::Expired, Ok(()))
            .await
        {
            tracing::error!(%error, proposal_id = %proposal.id, "expiry not audited");
        }
    }
}

/// Whether `caller` may decide on `proposal` of `tool`: a human of the proposal's org (the
/// store only finds it in that org) with the tool's permission, confirmed for restricted
/// tools.
fn may_decide(
    tool: &RegisteredTool,
    proposal: &Proposal,
    caller: &Caller,
) -> Result<(), InvokeError> {
    if caller.initiator != Initiator::Human {
        return Err(InvokeError::ApprovalDenied {
            tool: tool.name.to_string(),
            proposal_id: proposal.id.clone(),
            reason: "an agent can never approve or reject a proposal, not even its own; a human \
                     with the tool's permission must decide"
                .to_owned(),
        });
    }
    if let Some(reason) = category_refusal(tool.category(), caller) {
        return Err(InvokeError::CategoryDenied {
            tool: tool.name.to_string(),
            category: tool.category(),
            initiator: caller.initiator,
            reason: reason.to_owned(),
        });
    }
    if !tool.granted_to(&caller.roles) {
        return Err(InvokeError::PermissionDenied {
            tool: tool.name.to_string(),
            permission: tool.descriptor.permission.to_string(),
            roles: caller.roles.to_vec(),
        });
    }
    Ok(())
}

fn verify(context: &CallContext) -> Result<Caller, InvokeError> {
    context
        .verify()
        .map_err(|fields| InvokeError::MissingContext { fields })
}

fn not_found_proposal(id: &ProposalId) -> InvokeError {
    InvokeError::ProposalNotFound {
        proposal_id: id.clone(),
    }
}

/// A proposal store failure, as the caller sees it.
pub(crate) fn store_unavailable(error: StoreError) -> InvokeError {
    InvokeError::StoreUnavailable {
        store: "proposals".to_owned(),
        reason: error.to_string(),
    }
}

fn closed(proposal: &Proposal) -> InvokeError {
    InvokeError::ProposalClosed {
        proposal_id: proposal.id.clone(),
        status: proposal.status.as_str(),
    }
}

/// Whether a proposal's own proposer may act on it without the right to decide it: to
/// withdraw it, not to approve or reject it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProposerMay {
    Act,
    Not,
}

//! Closing the proposals a run no longer waits for. A run cancelled, or failing, while a step
//! waits for a decision withdraws that step's proposal first, so that nobody approves it later
//! and runs a tool for a run that no longer wants it. A proposal a person approved just before
//! (the withdrawal finds it closed) made its change: the step completes with the approved
//! call's output, and the saga undoes it like any completed step. A step waiting for an answer
//! to its tool's questions fails the same way: an answer given later is refused, as the run no
//! longer waits for it.

use super::*;

impl Run<'_> {
    /// Withdraws the pending proposal of every step still waiting for a decision (an undo's
    /// proposal is the saga's own), fails every step waiting for an answer, and records each
    /// such step's end. `why` completes "the run …", e.g. `was cancelled`.
    pub(super) async fn withdraw_proposals(&self, why: &str) -> Result<(), Fault> {
        let waiting: Vec<(NodePath, u32, String)> = self
            .memory()
            .steps
            .values()
            .filter_map(|step| match &step.state {
                NodeState::WaitingApproval { proposal_id } if step.completed_seq.is_none() => {
                    Some((
                        step.key.path.clone(),
                        step.key.iteration,
                        proposal_id.clone(),
                    ))
                }
                _ => None,
            })
            .collect();
        for (path, iteration, proposal_id) in waiting {
            let id = ProposalId::new(proposal_id.as_str());
            let reason = format!(
                "workflow run {} ({}) {why} while node `{path}` waited for this decision",
                self.id, self.workflow
            );
            let withdrawn = self
                .shared
                .registry
                .withdraw(&id, &reason, &self.caller)
                .await;
            let (kind, error) = match withdrawn {
                Ok(_) => (
                    "proposal_withdrawn",
                    format!("node `{path}`: proposal {proposal_id} withdrawn, as the run {why}"),
                ),
                Err(InvokeError::ProposalClosed {
                    status: "approved", ..
                }) => match self
                    .shared
                    .registry
                    .approved_outcome(&id, &self.caller)
                    .await
                {
                    Ok(Some(Ok(output))) => {
                        self.complete(&path, iteration, output)?;
                        continue;
                    }
                    Ok(Some(Err(error))) | Err(error) => (
                        "proposal_closed",
                        format!(
                            "node `{path}`: proposal {proposal_id} was approved as the run {why}, \
                             and its call failed: {error}"
                        ),
                    ),
                    Ok(None) => (
                        "proposal_closed",
                        format!(
                            "node `{path}`: proposal {proposal_id} was approved as the run {why}, \
                             and its call has not ended: check its outcome on the proposal"
                        ),
                    ),
                },
                Err(InvokeError::ProposalClosed { status, .. }) => (
                    "proposal_closed",
                    format!("node `{path}`: proposal {proposal_id} is {status}"),
                ),
                Err(error) => {
                    tracing::error!(
                        %error,
                        run = %self.id,
                        %proposal_id,
                        "the proposal of a run that no longer waits for it could not be withdrawn"
                    );
                    (
                        "proposal_not_withdrawn",
                        format!(
                            "node `{path}`: proposal {proposal_id} could not be withdrawn, and an \
                             approval would still run it: {error}"
                        ),
                    )
                }
            };
            self.node_event(
                &path,
                iteration,
                NodeEvent::Fail {
                    error: error.clone(),
                },
                Counting::No,
                None,
                |step| step.error = Some(json!({ "kind": kind, "message": error })),
            )?;
        }
        self.drop_questions(why)
    }

    /// Fails every step waiting for an answer to its tool's questions: its tool never ran past
    /// them, so nothing is left to undo.
    fn drop_questions(&self, why: &str) -> Result<(), Fault> {
        let waiting: Vec<(NodePath, u32)> = self
            .memory()
            .steps
            .values()
            .filter(|step| matches!(step.state, NodeState::WaitingInput { .. }))
            .map(|step| (step.key.path.clone(), step.key.iteration))
            .collect();
        for (path, iteration) in waiting {
            let error = format!(
                "node `{path}`: the run {why} while the node waited for an answer to its questions"
            );
            self.node_event(
                &path,
                iteration,
                NodeEvent::Fail {
                    error: error.clone(),
                },
                Counting::No,
                None,
                |step| step.error = Some(json!({ "kind": "questions_dropped", "message": error })),
            )?;
        }
        Ok(())
    }
}

//! The saga: undoing a failed or cancelled run's completed steps, last completed first.

use super::*;

impl Run<'_> {
    /// The completed steps with a compensation, last completed first.
    fn compensable(&self) -> Vec<StepRecord> {
        let mut steps: Vec<StepRecord> = self
            .memory()
            .steps
            .values()
            .filter(|step| {
                matches!(
                    step.state,
                    NodeState::Completed
                        | NodeState::Compensating
                        | NodeState::WaitingApproval { .. }
                ) && step.completed_seq.is_some()
            })
            .filter(|step| {
                mapping::find_node(&self.definition, step.key.path.as_str())
                    .is_some_and(|node| node.compensate.is_some())
            })
            .cloned()
            .collect();
        steps.sort_by_key(|step| std::cmp::Reverse(step.completed_seq));
        steps
    }

    pub(super) fn has_compensations(&self) -> bool {
        !self.compensable().is_empty()
    }

    /// The saga: undoes the completed steps in reverse order of completion, each through the
    /// registry as the run's caller; the first failing undo stops it and fails the run with
    /// that failure attached. An agent's run proposes a mutating undo instead, and stays
    /// `compensating` until a person decides (the decision, or the proposal's expiry, drives it
    /// on).
    pub(super) async fn compensate(&self, cause: Option<CompensationCause>) -> Result<(), Fault> {
        if let Some(cause) = cause {
            self.run_event(RunEvent::Compensate { cause }, None, None)?;
        }
        let top_steps = self.top_steps();
        for step in self.compensable() {
            let path = &step.key.path;
            let iteration = step.key.iteration;
            let Some(compensation) = mapping::find_node(&self.definition, path.as_str())
                .and_then(|node| node.compensate.as_ref())
            else {
                continue;
            };
            let span = tracing::info_span!(
                "workflow.step",
                run = %self.id,
                path = %path,
                iteration,
                compensation = true,
            );
            if step.state == NodeState::Completed {
                self.node_event(
                    path,
                    iteration,
                    NodeEvent::Compensate,
                    Counting::Yes,
                    None,
                    |_| {},
                )?;
            }
            let result = if let NodeState::WaitingApproval { proposal_id } = &step.state {
                match self.undo_decision(path, proposal_id).await {
                    UndoDecision::Pending(expires_at) => {
                        self.await_undo(expires_at);
                        return Ok(());
                    }
                    UndoDecision::Decided(result) => result,
                }
            } else {
                let mut context = self.caller.clone();
                context.idempotency_key = Some(IdempotencyKey::new(format!(
                    "wf:{}:{path}:{iteration}:undo",
                    self.id
                )));
                let mut scope = self.root_scope();
                scope
                    .set("steps", top_steps.clone())
                    .set("params", step.params.clone().unwrap_or(Value::Null))
                    .set("output", step.output.clone().unwrap_or(Value::Null));
                match mapping::evaluate(&compensation.params, &scope) {
                    Err(error) => Err(Failure::expression(path, error)),
                    Ok(params) if self.must_propose(&compensation.tool) => {
                        let summary = format!(
                            "undo node `{path}` of workflow run {} ({})",
                            self.id, self.workflow
                        );
                        // Proposed under the undo's key: a crash before the proposal is
                        // recorded finds it again instead of proposing twice.
                        match self
                            .shared
                            .registry
                            .propose(&compensation.tool, params, &context, Some(&summary))
                            .instrument(span)
                            .await
                        {
                            Ok(proposal) => {
                                self.node_event(
                                    path,
                                    iteration,
                                    NodeEvent::AwaitApproval {
                                        proposal_id: proposal.id.to_string(),
                                    },
                                    Counting::No,
                                    None,
                                    |_| {},
                                )?;
                                self.await_undo(proposal.expires_at);
                                return Ok(());
                            }
                            Err(error) => Err(Failure::invoke(error)),
                        }
                    }
                    Ok(params) => {
                        if !self.mutates(&compensation.tool) {
                            context.idempotency_key = None;
                        }
                        self.shared
                            .registry
                            .invoke(&compensation.tool, params, &context)
                            .instrument(span)
                            .await
                            .map_err(Failure::invoke)
                    }
                }
            };
            match result {
                Ok(_) => {
                    self.node_event(
                        path,
                        iteration,
                        NodeEvent::Compensated,
                        Counting::No,
                        None,
                        |_| {},
                    )?;
                }
                Err(failure) => {
                    let message = failure.message.clone();
                    self.node_event(
                        path,
                        iteration,
                        NodeEvent::CompensationFailed {
                            error: message.clone(),
                        },
                        Counting::No,
                        None,
                        |step| step.error = Some(failure.detail),
                    )?;
                    self.run_event(
                        RunEvent::CompensationFailed {
                            failure: CompensationFailure {
                                node: path.to_string(),
                                error: message,
                            },
                        },
                        None,
                        None,
                    )?;
                    return Ok(());
                }
            }
        }
        self.run_event(RunEvent::CompensationsDone, None, None)?;
        Ok(())
    }

    /// Leaves the run compensating, woken by a decision or at the proposal's expiry.
    fn await_undo(&self, expires_at: Timestamp) {
        self.shared.await_decision(self.id);
        self.shared.schedule(after_expiry(expires_at), self.id);
    }

    /// Where the proposal of an undo stands.
    async fn undo_decision(&self, path: &NodePath, proposal_id: &str) -> UndoDecision {
        let id = ProposalId::new(proposal_id);
        let proposal = match self.shared.registry.proposal(&id, &self.caller).await {
            Ok(proposal) => proposal,
            Err(error) => return UndoDecision::Decided(Err(Failure::invoke(error))),
        };
        let failure = match &proposal.status {
            ProposalStatus::Pending => return UndoDecision::Pending(proposal.expires_at),
            ProposalStatus::Approved { .. } => {
                match self
                    .shared
                    .registry
                    .approved_outcome(&id, &self.caller)
                    .await
                {
                    Ok(None) => return UndoDecision::Pending(proposal.expires_at),
                    Ok(Some(Ok(output))) => return UndoDecision::Decided(Ok(output)),
                    Ok(Some(Err(error))) | Err(error) => Failure::invoke(error),
                }
            }
            ProposalStatus::Rejected { by, feedback, .. } => Failure::other(
                "proposal_rejected",
                format!(
                    "the undo of node `{path}` (proposal {proposal_id}) was rejected by {by}: \
                     {feedback}"
                ),
            ),
            other => Failure::other(
                "proposal_closed",
                format!(
                    "the undo of node `{path}` (proposal {proposal_id}) is {}",
                    other.as_str()
                ),
            ),
        };
        UndoDecision::Decided(Err(failure))
    }

    /// Whether `tool` must be proposed rather than called: a mutating tool in an agent's run.
    pub(super) fn must_propose(&self, tool: &str) -> bool {
        self.caller.initiator == Initiator::Agent && self.mutates(tool)
    }

    /// `{ id: { params, output } }` of the top block's completed steps.
    fn top_steps(&self) -> Value {
        let memory = self.memory();
        let steps = memory
            .steps
            .values()
            .filter(|step| !step.key.path.as_str().contains('/') && step.completed_seq.is_some())
            .map(|step| {
                (
                    step.key.path.to_string(),
                    json!({ "params": step.params, "output": step.output }),
                )
            })
            .collect();
        Value::Object(steps)
    }
}

/// Where a proposed undo stands.
enum UndoDecision {
    /// Nobody decided yet (or the approved call has not ended): the proposal expires then.
    Pending(Timestamp),
    /// The undo ran (its output) or will not (why).
    Decided(Result<Value, Failure>),
}

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
                matches!(step.state, NodeState::Completed | NodeState::Compensating)
                    && step.completed_seq.is_some()
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
    /// that failure attached.
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
            let mut scope = self.root_scope();
            scope
                .set("steps", top_steps.clone())
                .set("params", step.params.clone().unwrap_or(Value::Null))
                .set("output", step.output.clone().unwrap_or(Value::Null));
            let result = match mapping::evaluate(&compensation.params, &scope) {
                Err(error) => Err(Failure::expression(path, error)),
                Ok(params) => {
                    let mut context = self.caller.clone();
                    context.idempotency_key = Some(IdempotencyKey::new(format!(
                        "wf:{}:{path}:{iteration}:undo",
                        self.id
                    )))
                    .filter(|_| self.mutates(&compensation.tool));
                    self.shared
                        .registry
                        .invoke(&compensation.tool, params, &context)
                        .instrument(span)
                        .await
                        .map_err(Failure::invoke)
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

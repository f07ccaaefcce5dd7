//! `tool` and `approval` nodes: the registry call as the run's caller (or its proposal),
//! its retries, and the decision a proposal waits for.

use std::time::Duration;

use super::*;

/// The longest retry backoff slept in the run's task; a longer one pauses the run durably,
/// woken by the scheduler.
const INLINE_BACKOFF: Duration = Duration::from_secs(5);

/// The field of a retrying step's error holding when its next attempt is due.
const RETRY_AT: &str = "retry_at";

impl Run<'_> {
    /// A `tool` or `approval` node: the call (or its proposal), with retries.
    #[allow(
        clippy::too_many_arguments,
        reason = "the node's parts, passed down as the definition holds them"
    )]
    pub(super) async fn exec_call(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        scope: &Scope,
        mut state: NodeState,
        stored_params: Option<Value>,
        tool: &str,
        params: &Mapping,
        summary: Option<&switchboard_workflows::Expression>,
        always_propose: bool,
    ) -> Result<NodeDone, Stop> {
        if let NodeState::WaitingApproval { proposal_id } = &state {
            return self
                .check_decision(node, path, iteration, stored_params, proposal_id)
                .await;
        }
        if let NodeState::WaitingInput { keys, .. } = &state {
            if !keys.is_empty() {
                let questions = Self::unanswered(self.stored(path, iteration).as_ref(), keys);
                return Err(self.waiting_for_input(path, &questions));
            }
            // Every question has its answer: the attempt that asked runs again, under its key.
            state = self.node_event(
                path,
                iteration,
                NodeEvent::Start,
                Counting::No,
                None,
                |_| {},
            )?;
        }
        let params = match stored_params {
            Some(params) => params,
            None => match mapping::evaluate(params, scope) {
                Ok(params) => params,
                Err(error) => {
                    self.start(path, iteration, &state, None)?;
                    let failure = Failure::expression(path, error);
                    return self.final_failure(node, path, iteration, None, failure, true);
                }
            },
        };
        let mutates = self.mutates(tool);
        let propose = always_propose || self.must_propose(tool);
        // A backoff still running when the run was woken (a restart, an early resume) goes on
        // durably.
        if let Some(due) = self.retry_due(path, iteration)
            && due > self.shared.clock.now()
        {
            return Err(self.backoff(path, Some(due)));
        }
        loop {
            let attempt = self.start(path, iteration, &state, Some(&params))?;
            tracing::Span::current().record("attempt", attempt);
            let result = if propose {
                let summary = match summary.map(|summary| summary.evaluate(scope)) {
                    None => None,
                    Some(Ok(Value::String(text))) => Some(text),
                    Some(Ok(other)) => Some(other.to_string()),
                    Some(Err(error)) => {
                        let failure = Failure::expression(path, error);
                        return self.final_failure(
                            node,
                            path,
                            iteration,
                            Some(params),
                            failure,
                            true,
                        );
                    }
                };
                // Under the attempt's key, a step resumed after a crash between proposing and
                // recording the proposal gets the proposal it made, not a second one.
                let mut context = self.caller.clone();
                context.idempotency_key = Some(self.attempt_key(path, iteration, attempt));
                match self
                    .shared
                    .registry
                    .propose(tool, params.clone(), &context, summary.as_deref())
                    .await
                {
                    Ok(proposal) => {
                        let proposal_id = proposal.id.to_string();
                        self.node_event(
                            path,
                            iteration,
                            NodeEvent::AwaitApproval {
                                proposal_id: proposal_id.clone(),
                            },
                            Counting::No,
                            None,
                            |_| {},
                        )?;
                        return Err(Stop::Suspend {
                            reason: format!(
                                "node `{path}` waits for a person to decide on proposal \
                                 {proposal_id} (`{tool}`)"
                            ),
                            // Woken at its expiry too, which fails the node if nobody decided.
                            wake_at: Some(after_expiry(proposal.expires_at)),
                            awaits_decision: true,
                        });
                    }
                    Err(error) => Err(error),
                }
            } else {
                // Only a mutating call carries the step's key; a read goes as the caller. Its
                // questions go to the step (see `ask.rs`).
                let asker = ask::StepAsker::for_step(self.stored(path, iteration).as_ref());
                let mut context = self.caller.clone();
                context.client = asker.link();
                if mutates {
                    context.idempotency_key = Some(self.attempt_key(path, iteration, attempt));
                }
                let result = self
                    .shared
                    .registry
                    .invoke(tool, params.clone(), &context)
                    .await;
                let asked = asker.take_pending();
                if !asked.is_empty() {
                    return Err(self.await_input(path, iteration, asked));
                }
                result
            };
            let error = match result {
                Ok(output) => {
                    self.complete(path, iteration, output.clone())?;
                    return Ok(NodeDone::Output {
                        params: Some(params),
                        output,
                        next: None,
                    });
                }
                Err(error) => error,
            };
            if mutates && !propose && error.is_in_doubt() {
                return Err(self.escalate_unknown_outcome(path, iteration, attempt, error));
            }
            let retrier = node
                .retry
                .iter()
                .find(|retrier| retry::matches(retrier, &error))
                .filter(|retrier| attempt < retrier.max_attempts);
            let Some(retrier) = retrier else {
                let failure = Failure::invoke(error);
                return self.final_failure(node, path, iteration, Some(params), failure, true);
            };
            // A rate limit's retry-after is the least wait: an earlier retry is refused again.
            let wait = retry::delay(retrier, attempt).max(error.retry_after().unwrap_or_default());
            let retry_at = self
                .shared
                .clock
                .now()
                .checked_add(
                    jiff::SignedDuration::try_from(wait).unwrap_or(jiff::SignedDuration::MAX),
                )
                .ok();
            let Failure {
                message,
                mut detail,
            } = Failure::invoke(error);
            if let (Value::Object(fields), Some(at)) = (&mut detail, retry_at) {
                fields.insert(RETRY_AT.to_owned(), Value::String(at.to_string()));
            }
            state = self.node_event(
                path,
                iteration,
                NodeEvent::Retry { error: message },
                Counting::No,
                retry_at,
                |step| step.error = Some(detail),
            )?;
            if wait > INLINE_BACKOFF {
                return Err(self.backoff(path, retry_at));
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// The idempotency key of one attempt of a mutating step: the same across crashes, another
    /// for each attempt.
    fn attempt_key(&self, path: &NodePath, iteration: u32, attempt: u32) -> IdempotencyKey {
        IdempotencyKey::new(format!("wf:{}:{path}:{iteration}:{attempt}", self.id))
    }

    /// An attempt whose outcome nobody knows (it was in flight when the process stopped, the
    /// connection to the system making the change ended mid-call, the tool timed out): neither
    /// retried, which could make the change twice, nor failed, which could undo a change that
    /// was never made. The step is left retrying with no due time and the run pauses for a
    /// person, who checks the target system and then resumes (the next attempt runs under its
    /// own key) or cancels.
    fn escalate_unknown_outcome(
        &self,
        path: &NodePath,
        iteration: u32,
        attempt: u32,
        error: InvokeError,
    ) -> Stop {
        let Failure { message, detail } = Failure::invoke(error);
        let retried = self.node_event(
            path,
            iteration,
            NodeEvent::Retry {
                error: message.clone(),
            },
            Counting::No,
            None,
            |step| step.error = Some(detail),
        );
        if let Err(fault) = retried {
            return Stop::Fault(fault);
        }
        let key = self.attempt_key(path, iteration, attempt);
        Stop::Suspend {
            reason: format!(
                "the outcome of node `{path}` is unknown: whether its attempt {attempt} \
                 (idempotency key `{key}`) made its change is not known ({message}). Check the \
                 target system, then resume the run to run the step again under a new key \
                 (attempt {next}), or cancel the run",
                next = attempt + 1
            ),
            wake_at: None,
            awaits_decision: false,
        }
    }

    /// When the next attempt of a retrying step is due, as its last error records it (none:
    /// not a backoff, or an escalation a person resumed).
    fn retry_due(&self, path: &NodePath, iteration: u32) -> Option<Timestamp> {
        let step = self.stored(path, iteration)?;
        if !matches!(step.state, NodeState::Retrying { .. }) {
            return None;
        }
        step.error?.get(RETRY_AT)?.as_str()?.parse().ok()
    }

    fn backoff(&self, path: &NodePath, retry_at: Option<Timestamp>) -> Stop {
        Stop::Suspend {
            reason: format!(
                "node `{path}` retries at {}",
                retry_at.map_or_else(|| "once resumed".to_owned(), |at| at.to_string())
            ),
            wake_at: retry_at,
            awaits_decision: false,
        }
    }

    /// A node waiting for a decision on its proposal: completes with the approved call's
    /// output, fails when rejected, expired or withdrawn, or keeps waiting.
    async fn check_decision(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        params: Option<Value>,
        proposal_id: &str,
    ) -> Result<NodeDone, Stop> {
        let id = ProposalId::new(proposal_id);
        let proposal = match self.shared.registry.proposal(&id, &self.caller).await {
            Ok(proposal) => proposal,
            Err(error) => {
                return self.final_failure(
                    node,
                    path,
                    iteration,
                    params,
                    Failure::invoke(error),
                    false,
                );
            }
        };
        let waiting = || Stop::Suspend {
            reason: format!("node `{path}` waits for a person to decide on proposal {proposal_id}"),
            wake_at: Some(after_expiry(proposal.expires_at)),
            awaits_decision: true,
        };
        let failure = match &proposal.status {
            ProposalStatus::Pending => return Err(waiting()),
            ProposalStatus::Approved { .. } => {
                match self
                    .shared
                    .registry
                    .approved_outcome(&id, &self.caller)
                    .await
                {
                    Ok(None) => return Err(waiting()),
                    Ok(Some(Ok(output))) => {
                        self.complete(path, iteration, output.clone())?;
                        return Ok(NodeDone::Output {
                            params,
                            output,
                            next: None,
                        });
                    }
                    Ok(Some(Err(error))) | Err(error) => Failure::invoke(error),
                }
            }
            ProposalStatus::Rejected { by, feedback, .. } => Failure::other(
                "proposal_rejected",
                format!("node `{path}`: proposal {proposal_id} was rejected by {by}: {feedback}"),
            ),
            other => Failure::other(
                "proposal_closed",
                format!(
                    "node `{path}`: proposal {proposal_id} is {}",
                    other.as_str()
                ),
            ),
        };
        self.final_failure(node, path, iteration, params, failure, false)
    }
}

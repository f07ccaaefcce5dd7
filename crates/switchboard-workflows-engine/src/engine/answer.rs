//! Answering a run's question: what a step's tool asked its client (a form, a completion),
//! answered by a person or an agent of the run's organisation.
//!
//! The answer is one checkpoint: the step's record with the answer (who gave it and when)
//! and its state past [`NodeEvent::Answer`], written only while the run is still the paused
//! run that was read (a compare-and-set on its state, as every checkpoint makes), so an answer
//! never lands in a run an engine moved meanwhile. Once the step has every answer, the run is
//! resumed as [`Engine::resume`] resumes it: on this engine, or on the engine holding its lease
//! (another node of a fleet), whose sweep also finds a step whose questions are all answered.

use std::sync::Arc;
use std::time::Duration;

use switchboard_core::CallContext;
use switchboard_core::ask::{ElicitAction, ElicitReply, Elicitation, Question, Reply};
use switchboard_workflows::{
    Checkpoint, EventRecord, NodeEvent, NodePath, NodeState, RunChange, RunId, RunState,
    RunStoreError, StepAnswer, StepRecord, WorkflowEvent,
};

use super::{Engine, lease};
use crate::error::EngineError;

/// How often an answer is tried again when the run moved while it was written.
const TRIES: usize = 20;

/// How long an answer waits before trying again.
const AGAIN_AFTER: Duration = Duration::from_millis(50);

/// What an answer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The step that asked.
    pub node: NodePath,
    /// Its iteration.
    pub iteration: u32,
    /// The question answered.
    pub key: String,
    /// The step's questions still without an answer: the run goes on once there are none.
    pub remaining: Vec<String>,
    /// The number of the answer's event in the run: what the answer set going comes after it
    /// ([`Engine::events_after`]).
    pub seq: u64,
}

impl Answered {
    /// Whether the run was resumed (the step had every answer).
    pub fn resumed(&self) -> bool {
        self.remaining.is_empty()
    }
}

impl Engine {
    /// Answers question `question` of `run` with `reply`, as `caller` (a person or an agent of
    /// the run's organisation). `question` is the key a step waits for (`ask-1`), or
    /// `NODE#ITERATION:KEY` when several steps wait under one key; `None` names the only one.
    /// A form's accepted content is checked against the form's schema; a declined or cancelled
    /// form is an answer too, which the tool reads and acts on. Once the step has every
    /// answer, the run goes on: the step's tool runs again, under the same idempotency key,
    /// and gets the answers.
    ///
    /// Refused with [`EngineError::NotWaitingForInput`] when the run waits for no answer,
    /// [`EngineError::UnknownQuestion`] when `question` names none it waits for,
    /// [`EngineError::BadAnswer`] when `reply` does not fit its question, and
    /// [`EngineError::Finished`] when the run is over.
    pub async fn answer(
        &self,
        run: RunId,
        question: Option<&str>,
        reply: Reply,
        caller: &CallContext,
    ) -> Result<Answered, EngineError> {
        let by = caller
            .verify()
            .map_err(|fields| EngineError::MissingContext { fields })?
            .user_id;
        for _ in 0..TRIES {
            let record = self.run(run, caller)?;
            if record.state.is_terminal() {
                return Err(EngineError::Finished {
                    run,
                    state: record.state.as_str(),
                    action: "answer",
                });
            }
            let steps = self.shared.store.steps(run)?;
            let (step, key) = waiting_step(run, &record.state, &steps, question)?;
            let asked = step
                .questions
                .iter()
                .position(|asked| asked.key == key)
                .ok_or_else(|| EngineError::UnknownQuestion {
                    key: Some(key.clone()),
                    run,
                    pending: pending_keys(&steps),
                })?;
            let reply =
                fitted(&step.questions[asked].question, reply.clone()).map_err(|reason| {
                    EngineError::BadAnswer {
                        run,
                        key: key.clone(),
                        reason,
                    }
                })?;
            if !matches!(record.state, RunState::Paused { .. }) {
                // An engine is driving the run (it resumed it a moment ago): it pauses again.
                tokio::time::sleep(AGAIN_AFTER).await;
                continue;
            }
            let event = NodeEvent::Answer {
                key: key.clone(),
                by: by.as_str().to_owned(),
            };
            let state =
                step.state
                    .apply(event.clone())
                    .map_err(|_| EngineError::UnknownQuestion {
                        key: Some(key.clone()),
                        run,
                        pending: pending_keys(&steps),
                    })?;
            let now = self.shared.clock.now();
            let mut answered = step.clone();
            answered.state = state.clone();
            answered.questions[asked].answer = Some(StepAnswer {
                reply,
                by: by.as_str().to_owned(),
                at: now,
            });
            answered.updated_at = now;
            let checkpoint = Checkpoint {
                run,
                at: now,
                run_change: Some(RunChange {
                    from: record.state.clone(),
                    to: record.state.clone(),
                    output: record.output.clone(),
                    wake_at: record.wake_at,
                    steps_taken: record.steps_taken,
                }),
                step: Some(answered),
                event: WorkflowEvent::Node {
                    path: step.key.path.clone(),
                    iteration: step.key.iteration,
                    event,
                    state: state.clone(),
                    retry_at: None,
                },
                fence: None,
            };
            let seq = match self.shared.store.checkpoint(&checkpoint) {
                Ok(seq) => seq,
                Err(RunStoreError::StateChanged { .. }) => {
                    tokio::time::sleep(AGAIN_AFTER).await;
                    continue;
                }
                Err(error) => return Err(error.into()),
            };
            // Nobody listening is fine: the event is stored.
            let _ = self.shared.live.send(EventRecord {
                run,
                seq,
                at: now,
                event: checkpoint.event,
            });
            let remaining = match state {
                NodeState::WaitingInput { keys, .. } => keys,
                _ => Vec::new(),
            };
            tracing::info!(%run, node = %step.key.path, %key, "a workflow run's question was answered");
            if remaining.is_empty() {
                self.shared.kick(run);
                tokio::spawn(lease::retake(Arc::downgrade(&self.shared), run, now));
            }
            return Ok(Answered {
                node: step.key.path.clone(),
                iteration: step.key.iteration,
                key,
                remaining,
                seq,
            });
        }
        Err(EngineError::Busy { run })
    }
}

/// The step waiting for the question `question` names, and the question's key.
fn waiting_step<'a>(
    run: RunId,
    state: &RunState,
    steps: &'a [StepRecord],
    question: Option<&str>,
) -> Result<(&'a StepRecord, String), EngineError> {
    let waiting: Vec<(&StepRecord, &String)> = steps
        .iter()
        .filter_map(|step| match &step.state {
            NodeState::WaitingInput { keys, .. } => Some(keys.iter().map(move |key| (step, key))),
            _ => None,
        })
        .flatten()
        .collect();
    if waiting.is_empty() {
        return Err(EngineError::NotWaitingForInput {
            run,
            state: state.to_string(),
        });
    }
    let matching: Vec<&(&StepRecord, &String)> = match question {
        None => waiting.iter().collect(),
        Some(named) => waiting
            .iter()
            .filter(|(step, key)| *key == named || qualified(step, key) == named)
            .collect(),
    };
    match matching.as_slice() {
        [(step, key)] => Ok((step, (*key).clone())),
        _ => Err(EngineError::UnknownQuestion {
            key: question.map(str::to_owned),
            run,
            pending: pending_keys(steps),
        }),
    }
}

/// A question's key with its step: `NODE#ITERATION:KEY`.
fn qualified(step: &StepRecord, key: &str) -> String {
    format!("{}#{}:{key}", step.key.path, step.key.iteration)
}

/// Every question the run's steps wait for, each qualified by its step.
fn pending_keys(steps: &[StepRecord]) -> Vec<String> {
    steps
        .iter()
        .filter_map(|step| match &step.state {
            NodeState::WaitingInput { keys, .. } => {
                Some(keys.iter().map(move |key| qualified(step, key)))
            }
            _ => None,
        })
        .flatten()
        .collect()
}

/// `reply` as the answer to `question`, or why it cannot be: of the question's kind, a form's
/// accepted content valid against the form's schema (a declined or cancelled form carries no
/// content), a page's answer without content.
fn fitted(question: &Question, reply: Reply) -> Result<Reply, String> {
    match (question, reply) {
        (
            Question::Elicit(Elicitation::Form {
                requested_schema, ..
            }),
            Reply::Elicit(ElicitReply { action, content }),
        ) => match action {
            ElicitAction::Accept => {
                let content = content.unwrap_or_else(|| serde_json::json!({}));
                let validator = jsonschema::validator_for(requested_schema)
                    .map_err(|error| format!("the form's schema does not compile: {error}"))?;
                let errors: Vec<String> = validator
                    .iter_errors(&content)
                    .map(|error| {
                        let at = error.instance_path().to_string();
                        if at.is_empty() {
                            error.to_string()
                        } else {
                            format!("{at}: {error}")
                        }
                    })
                    .collect();
                if errors.is_empty() {
                    Ok(Reply::Elicit(ElicitReply {
                        action,
                        content: Some(content),
                    }))
                } else {
                    Err(errors.join("; "))
                }
            }
            ElicitAction::Decline | ElicitAction::Cancel => Ok(Reply::Elicit(ElicitReply {
                action,
                content: None,
            })),
        },
        (Question::Elicit(Elicitation::Url { .. }), Reply::Elicit(ElicitReply { action, .. })) => {
            Ok(Reply::Elicit(ElicitReply {
                action,
                content: None,
            }))
        }
        (Question::Sample(_), reply @ Reply::Sample(_)) => Ok(reply),
        (Question::Roots, reply @ Reply::Roots { .. }) => Ok(reply),
        (question, _) => Err(format!(
            "it is {}: answer it with {}",
            match question {
                Question::Elicit(Elicitation::Form { .. }) => "a form",
                Question::Elicit(Elicitation::Url { .. }) => "a page to open",
                Question::Sample(_) => "a completion",
                Question::Roots => "a request for roots",
            },
            match question {
                Question::Elicit(_) => "accept (with the form's content), decline or cancel",
                Question::Sample(_) => "the model's answer (role, content, model)",
                Question::Roots => "a list of roots",
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form() -> Question {
        Question::Elicit(Elicitation::Form {
            message: "Go ahead?".to_owned(),
            requested_schema: json!({
                "type": "object",
                "properties": { "go": { "type": "boolean" } },
                "required": ["go"],
            }),
        })
    }

    fn elicit(action: ElicitAction, content: Option<serde_json::Value>) -> Reply {
        Reply::Elicit(ElicitReply { action, content })
    }

    #[test]
    fn a_form_takes_content_its_schema_accepts_and_a_decline_without_content() {
        assert_eq!(
            fitted(
                &form(),
                elicit(ElicitAction::Accept, Some(json!({"go": true})))
            ),
            Ok(elicit(ElicitAction::Accept, Some(json!({"go": true}))))
        );
        let refused = fitted(
            &form(),
            elicit(ElicitAction::Accept, Some(json!({"go": "yes"}))),
        )
        .expect_err("a string is no boolean");
        assert!(refused.contains("/go"), "{refused}");
        assert!(fitted(&form(), elicit(ElicitAction::Accept, None)).is_err());
        assert_eq!(
            fitted(
                &form(),
                elicit(ElicitAction::Decline, Some(json!({"go": 1})))
            ),
            Ok(elicit(ElicitAction::Decline, None))
        );
    }

    #[test]
    fn an_answer_of_another_kind_is_refused_with_what_fits() {
        let refused = fitted(&form(), Reply::Roots { roots: Vec::new() })
            .expect_err("roots do not answer a form");
        assert!(refused.contains("a form"), "{refused}");
        assert!(refused.contains("decline"), "{refused}");
    }
}

//! The run-time tool `workflows_answer`: an agent or a person answers, over MCP or any other
//! caller of the registry, a question a run's step asked its client (a form, a completion),
//! as `switchboard workflow answer` and [`Engine::answer`] do.
//!
//! **Category `execute`.** An answer changes a run: it is stored with the step, and the run
//! goes on, its next steps acting as the run's stored caller, who may be a person. A form that
//! asks "swap these shifts?" is that person's confirmation, so an agent may not give it on its
//! own any more than it may make the change: like any `execute` tool, an agent's call is
//! refused (`category_denied`), becomes a proposal a person approves
//! (`AgentMutations::Propose`), or is approved by the person at the client
//! (`approve_by_elicitation`); a person's call answers at once. `restricted` would ask more
//! than the answer does: each later step is still checked against its own category as the
//! run's caller.
//!
//! **Organisation.** The run is looked up in the caller's organisation (from the context,
//! never from the input): a run of another organisation is an unknown run, as a run that does
//! not exist is.
//!
//! **What the call answers.** What the workflow's own call would answer from there, without
//! waiting for a person: the run's output once it completes, the error `workflow_failed` when
//! it fails or is cancelled, and `{"status": "paused", ...}` when it waits for a person again
//! (a further question, a proposal), or still waits for other answers of the same step. A call
//! dropped while it follows the run leaves the run going.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use switchboard_core::ask::{ElicitAction, ElicitReply, Reply, SampleContent, SampleRole, Sampled};
use switchboard_core::{
    BoxFuture, CallContext, Category, TaskSupport, ToolContext, ToolDescriptor, ToolError,
    ToolOrigin,
};
use switchboard_registry::{Exposure, RuntimeTool, RuntimeToolSpec};
use switchboard_workflows::{NodeState, RunId, RunState};

use super::follow::{Following, follow, paused, unavailable};
use super::{EXPORTED_CALL_TIMEOUT, EXPORTED_DOMAIN, node_count};
use crate::{Engine, EngineError};

/// The name of the run-time tool that answers a run's question.
pub const ANSWER_TOOL: &str = "workflows_answer";

/// The permission `workflows_answer` needs.
pub const ANSWER_PERMISSION: &str = "workflows.answer";

/// The code of the error of an answer that was not taken: the run waits for no answer, or
/// for none under the key given, or the reply does not fit its question; nothing was stored.
pub const ANSWER_REFUSED: &str = "answer_refused";

/// The code of the error of an answer to a run the caller's organisation has not.
pub const UNKNOWN_RUN: &str = "unknown_run";

/// What a completion answer names as its model when the call names none and the caller is no
/// agent.
const PERSON_MODEL: &str = "person";

impl Engine {
    /// The run-time tool [`ANSWER_TOOL`], answering runs of this engine's store
    /// ([`register_exported`](Self::register_exported) registers it).
    pub fn answer_tool(&self) -> RuntimeToolSpec {
        let input_schema = json!({
            "type": "object",
            "properties": {
                "run_id": {
                    "type": "string",
                    "description": "The paused run's id (its `run_id`)."
                },
                "key": {
                    "type": "string",
                    "description": "The question's key (`ask-1`, as the paused run lists it), or `NODE#ITERATION:KEY` when several steps wait under one key; needed only when the run waits for several questions."
                },
                "accept": {
                    "type": "object",
                    "description": "Accept a form with this content: the form's fields, as its schema asks (`{}` for a page to open)."
                },
                "decline": {
                    "type": "boolean",
                    "description": "`true`: decline the question; the step's tool reads the refusal and decides what to do."
                },
                "cancel": {
                    "type": "boolean",
                    "description": "`true`: dismiss the question without choosing."
                },
                "completion": {
                    "type": "string",
                    "description": "Answer a completion request (sampling) with this text."
                },
                "model": {
                    "type": "string",
                    "description": "The model a `completion` names (default: the caller's agent type, else `person`)."
                }
            },
            "required": ["run_id"],
            "additionalProperties": false
        });
        let descriptor = ToolDescriptor {
            name: Cow::Borrowed(ANSWER_TOOL),
            title: Some(Cow::Borrowed("Answer a workflow run's question")),
            domain: Cow::Borrowed(EXPORTED_DOMAIN),
            category: Category::Execute,
            permission: Cow::Borrowed(ANSWER_PERMISSION),
            description: Cow::Borrowed(
                "Answers a question a paused workflow run waits for (a form: `accept` with its \
                 fields, `decline` or `cancel`; a completion request: `completion`), then \
                 follows the run: answers its output once it completes, or how it is paused \
                 again. Give exactly one of `accept`, `decline`, `cancel` and `completion`.",
            ),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: Some(EXPORTED_CALL_TIMEOUT),
            input_schema: Arc::new(input_schema),
            output_schema: None,
            tasks: TaskSupport::Optional,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "switchboard-workflows-engine (answers to runs' questions)".to_owned(),
            },
        };
        RuntimeToolSpec {
            descriptor,
            tool: Arc::new(AnswerTool {
                engine: self.clone(),
            }),
            exposure: Exposure::Listed,
        }
    }
}

/// `workflows_answer`'s body.
struct AnswerTool {
    engine: Engine,
}

impl RuntimeTool for AnswerTool {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.answer(ctx, params))
    }
}

impl AnswerTool {
    async fn answer(&self, ctx: &ToolContext, params: Value) -> Result<Value, ToolError> {
        let caller = CallContext::from(ctx.caller());
        let answer = Answer::of(&params, &caller)?;
        let record = self.engine.run(answer.run, &caller).map_err(refusal)?;
        let answered = self
            .engine
            .answer(answer.run, answer.key.as_deref(), answer.reply, &caller)
            .await
            .map_err(refusal)?;
        if !answered.resumed() {
            // The step waits for its other answers: the run stays paused.
            let reason = match self.engine.run(answer.run, &caller).map_err(refusal)?.state {
                RunState::Paused { reason } => reason,
                other => other.to_string(),
            };
            return paused(&self.engine, answer.run, &caller, &reason)?.ok_or_else(|| {
                unavailable(format!("run {} stopped waiting for answers", answer.run))
            });
        }
        let steps = self.engine.steps(answer.run, &caller).map_err(refusal)?;
        let done = steps
            .iter()
            .filter(|step| matches!(step.state, NodeState::Completed | NodeState::Skipped { .. }))
            .count();
        let following = Following {
            run: answer.run,
            after: answered.seq,
            done,
            total: node_count(&record.definition),
        };
        follow(&self.engine, ctx, &caller, following, || {}).await
    }
}

/// An answer as the call's input gives it.
#[derive(Debug, PartialEq)]
struct Answer {
    run: RunId,
    key: Option<String>,
    reply: Reply,
}

impl Answer {
    /// The answer `params` give, as `caller` gives it (a completion without a model names the
    /// caller's agent type, or `person`).
    fn of(params: &Value, caller: &CallContext) -> Result<Self, ToolError> {
        let empty = Map::new();
        let fields = params.as_object().unwrap_or(&empty);
        let text = |name: &str| fields.get(name).and_then(Value::as_str);
        let run_text = text("run_id").unwrap_or_default();
        let run = run_text.trim().parse().map_err(|_| {
            ToolError::new(
                UNKNOWN_RUN,
                format!(
                    "`{run_text}` is not a run id (a UUID, as a paused run's `run_id` gives it)"
                ),
            )
        })?;
        let flag = |name: &str| fields.get(name).and_then(Value::as_bool) == Some(true);
        let elicit = |action, content| Reply::Elicit(ElicitReply { action, content });
        let mut replies = Vec::new();
        if let Some(content) = fields.get("accept") {
            replies.push(elicit(ElicitAction::Accept, Some(content.clone())));
        }
        if flag("decline") {
            replies.push(elicit(ElicitAction::Decline, None));
        }
        if flag("cancel") {
            replies.push(elicit(ElicitAction::Cancel, None));
        }
        if let Some(completion) = text("completion") {
            let model = text("model").map(str::to_owned).unwrap_or_else(|| {
                caller.agent_type.as_ref().map_or_else(
                    || PERSON_MODEL.to_owned(),
                    |agent| agent.as_str().to_owned(),
                )
            });
            replies.push(Reply::Sample(Sampled {
                role: SampleRole::Assistant,
                content: SampleContent::text(completion),
                model,
                stop_reason: Some("endTurn".to_owned()),
            }));
        } else if fields.contains_key("model") {
            return Err(ToolError::new(
                ANSWER_REFUSED,
                "`model` names the model of a `completion`: give the completion too",
            ));
        }
        let mut replies = replies.into_iter();
        match (replies.next(), replies.next()) {
            (Some(reply), None) => Ok(Self {
                run,
                key: text("key").map(str::to_owned),
                reply,
            }),
            (first, _) => Err(ToolError::new(
                ANSWER_REFUSED,
                format!(
                    "give {} answer: `accept` (the form's fields), `decline: true`, \
                     `cancel: true` or `completion` (a completion's text)",
                    if first.is_some() { "one" } else { "the" }
                ),
            )),
        }
    }
}

/// The tool's error for an answer the engine did not take.
fn refusal(error: EngineError) -> ToolError {
    match error {
        EngineError::RunNotFound(_) => ToolError::new(UNKNOWN_RUN, error.to_string()),
        EngineError::Finished { .. }
        | EngineError::NotWaitingForInput { .. }
        | EngineError::UnknownQuestion { .. }
        | EngineError::BadAnswer { .. } => ToolError::new(ANSWER_REFUSED, error.to_string()),
        EngineError::Busy { .. } => unavailable(error).retryable(),
        _ => unavailable(error),
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::AgentType;

    use super::*;

    const RUN: &str = "0193f1c2-7d4e-7a51-9b7e-3c1f0e6d2a10";

    fn answer(params: Value) -> Result<Answer, ToolError> {
        Answer::of(&params, &CallContext::default())
    }

    fn elicit(action: ElicitAction, content: Option<Value>) -> Reply {
        Reply::Elicit(ElicitReply { action, content })
    }

    #[test]
    fn each_reply_of_the_cli_has_its_field() {
        let run: RunId = RUN.parse().expect("a run id");
        assert_eq!(
            answer(json!({"run_id": RUN, "key": "ask-2", "accept": {"go": true}})),
            Ok(Answer {
                run,
                key: Some("ask-2".to_owned()),
                reply: elicit(ElicitAction::Accept, Some(json!({"go": true}))),
            })
        );
        assert_eq!(
            answer(json!({"run_id": RUN, "decline": true})).map(|answer| answer.reply),
            Ok(elicit(ElicitAction::Decline, None))
        );
        assert_eq!(
            answer(json!({"run_id": RUN, "cancel": true, "decline": false}))
                .map(|answer| answer.reply),
            Ok(elicit(ElicitAction::Cancel, None))
        );
        let Ok(Answer {
            reply: Reply::Sample(sampled),
            key: None,
            ..
        }) = answer(json!({"run_id": RUN, "completion": "A quiet week.", "model": "m1"}))
        else {
            panic!("a completion");
        };
        assert_eq!(sampled.text(), Some("A quiet week."));
        assert_eq!(sampled.model, "m1");
    }

    #[test]
    fn a_completion_without_a_model_names_the_callers_agent_type_or_a_person() {
        let model = |caller: &CallContext| match Answer::of(
            &json!({"run_id": RUN, "completion": "yes"}),
            caller,
        ) {
            Ok(Answer {
                reply: Reply::Sample(sampled),
                ..
            }) => sampled.model,
            other => panic!("a completion: {other:?}"),
        };
        assert_eq!(model(&CallContext::default()), "person");
        let agent = CallContext {
            agent_type: Some(AgentType::from("planner")),
            ..CallContext::default()
        };
        assert_eq!(model(&agent), "planner");
    }

    #[test]
    fn no_reply_or_two_replies_are_refused_with_what_fits() {
        for params in [
            json!({"run_id": RUN}),
            json!({"run_id": RUN, "decline": false}),
            json!({"run_id": RUN, "decline": true, "cancel": true}),
            json!({"run_id": RUN, "accept": {}, "completion": "no"}),
        ] {
            let refused = answer(params.clone()).expect_err("not one reply");
            assert_eq!(refused.code(), ANSWER_REFUSED, "{params}");
            assert!(refused.message().contains("`decline: true`"), "{refused:?}");
        }
        let refused = answer(json!({"run_id": RUN, "decline": true, "model": "m"}))
            .expect_err("a model without a completion");
        assert_eq!(refused.code(), ANSWER_REFUSED);
    }

    #[test]
    fn a_run_id_that_is_no_uuid_is_an_unknown_run() {
        let refused = answer(json!({"run_id": "run-1", "decline": true})).expect_err("no UUID");
        assert_eq!(refused.code(), UNKNOWN_RUN);
        assert!(refused.message().contains("`run-1`"), "{refused:?}");
    }

    #[test]
    fn the_engines_refusals_keep_their_meaning() {
        let run = RunId::new();
        assert_eq!(refusal(EngineError::RunNotFound(run)).code(), UNKNOWN_RUN);
        let not_waiting = refusal(EngineError::NotWaitingForInput {
            run,
            state: "running".to_owned(),
        });
        assert_eq!(not_waiting.code(), ANSWER_REFUSED);
        let busy = refusal(EngineError::Busy { run });
        assert!(busy.is_retryable(), "{busy:?}");
    }
}

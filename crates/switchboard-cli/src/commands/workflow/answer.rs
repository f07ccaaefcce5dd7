//! `switchboard workflow answer RUN`: answers a question a run's step asked its client (a
//! form, a completion). A run has no client, so a step whose tool asks pauses the run with
//! the question stored; this command gives the answer (`--accept JSON`, `--decline`,
//! `--cancel`, `--completion TEXT`) as the identity given, and once the step has every
//! answer, follows the run in the foreground as `resume` does. A paused run's report lists the
//! questions it waits for and the commands that answer them.

use serde::Serialize;
use switchboard_core::ask::{
    ElicitAction, ElicitReply, Question, Reply, SampleContent, SampleRole, Sampled,
};
use switchboard_workflows::{NodeState, StepRecord};

use super::{Session, engine_error, follow, last_seq, parse_run_id};
use crate::{
    app::{Exit, UsageError},
    args::WorkflowAnswerArgs,
    escape::escape_controls,
    output, params,
};

/// A question a paused run waits for, as its report shows it.
#[derive(Debug, Serialize)]
pub(super) struct WaitingQuestion {
    node: String,
    iteration: u32,
    key: String,
    /// The question in a line.
    asks: String,
    question: Question,
}

/// The questions `steps` wait for, in step order.
pub(super) fn waiting_questions(steps: &[StepRecord]) -> Vec<WaitingQuestion> {
    steps
        .iter()
        .filter_map(|step| match &step.state {
            NodeState::WaitingInput { keys, .. } => Some(
                step.questions
                    .iter()
                    .filter(|asked| keys.contains(&asked.key))
                    .map(|asked| WaitingQuestion {
                        node: step.key.path.as_str().to_owned(),
                        iteration: step.key.iteration,
                        key: asked.key.clone(),
                        asks: escape_controls(&asked.describe()).into_owned(),
                        question: asked.question.clone(),
                    }),
            ),
            _ => None,
        })
        .flatten()
        .collect()
}

impl WaitingQuestion {
    /// The command that answers it, completed by `rest` (the identity and store flags).
    pub(super) fn command(&self, run: &str, rest: &str) -> String {
        let reply = match &self.question {
            Question::Sample(_) => "--completion TEXT",
            _ => "--accept '{…}'    (or --decline, --cancel)",
        };
        format!(
            "switchboard workflow answer {run} --key {} {rest} {reply}",
            escape_controls(&self.key)
        )
    }

    /// The question as the report's text shows it.
    pub(super) fn line(&self) -> String {
        format!(
            "question {} of {}#{}: {}",
            escape_controls(&self.key),
            escape_controls(&self.node),
            self.iteration,
            self.asks
        )
    }
}

/// What `answer --json` prints when the step still waits for other answers.
#[derive(Debug, Serialize)]
struct StillWaiting {
    run: String,
    node: String,
    iteration: u32,
    answered: String,
    remaining: Vec<String>,
}

/// `workflow answer RUN`.
pub(super) async fn answer(session: &Session, args: WorkflowAnswerArgs) -> anyhow::Result<Exit> {
    let run = parse_run_id(&args.run.run)?;
    let reply = reply_of(&args)?;
    let caller = args.run.session.identity.into_identity().context;
    let seen = last_seq(session, run)?;
    let answered = session
        .engine
        .answer(run, args.key.as_deref(), reply, &caller)
        .await
        .map_err(engine_error)?;
    if answered.resumed() {
        return follow(session, run, &caller, seen, args.run.watch, args.run.json).await;
    }
    let still = StillWaiting {
        run: run.to_string(),
        node: answered.node.as_str().to_owned(),
        iteration: answered.iteration,
        answered: answered.key,
        remaining: answered.remaining,
    };
    if args.run.json {
        output::write_stdout(&output::to_json(&still)?);
    } else {
        output::write_stdout(&format!(
            "answered {} of {}#{}; the step still waits for: {}\n",
            escape_controls(&still.answered),
            escape_controls(&still.node),
            still.iteration,
            escape_controls(&still.remaining.join(", "))
        ));
    }
    Ok(Exit::Paused)
}

/// The answer the flags give.
fn reply_of(args: &WorkflowAnswerArgs) -> Result<Reply, UsageError> {
    let elicit = |action, content| Reply::Elicit(ElicitReply { action, content });
    if let Some(text) = &args.accept {
        let content = params::parse(text, "--accept")?;
        if !content.is_object() {
            return Err(UsageError::new(
                "--accept takes a JSON object, the form's fields (`{}` for a page to open)",
            ));
        }
        return Ok(elicit(ElicitAction::Accept, Some(content)));
    }
    if args.decline {
        return Ok(elicit(ElicitAction::Decline, None));
    }
    if args.cancel {
        return Ok(elicit(ElicitAction::Cancel, None));
    }
    match &args.completion {
        Some(text) => Ok(Reply::Sample(Sampled {
            role: SampleRole::Assistant,
            content: SampleContent::text(text.clone()),
            model: args.model.clone(),
            stop_reason: Some("endTurn".to_owned()),
        })),
        None => Err(UsageError::new(
            "give the answer: --accept JSON, --decline, --cancel or --completion TEXT",
        )),
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use serde_json::json;
    use switchboard_core::ask::{Elicitation, SampleRequest};
    use switchboard_workflows::{NodePath, RunId, StepAnswer, StepKey, StepQuestion};

    use super::*;

    fn asked(key: &str, question: Question, answered: bool) -> StepQuestion {
        StepQuestion {
            key: key.to_owned(),
            question,
            answer: answered.then(|| StepAnswer {
                reply: Reply::Elicit(ElicitReply {
                    action: ElicitAction::Decline,
                    content: None,
                }),
                by: "mark".to_owned(),
                at: Timestamp::UNIX_EPOCH,
            }),
        }
    }

    #[test]
    fn a_paused_report_lists_the_unanswered_questions_with_the_commands_that_answer_them() {
        let form = Question::Elicit(Elicitation::Form {
            message: "Swap with\u{1b}[31m whom?".to_owned(),
            requested_schema: json!({"type": "object"}),
        });
        let step = StepRecord {
            key: StepKey {
                run: RunId::new(),
                path: NodePath::new("pick"),
                iteration: 2,
            },
            state: NodeState::WaitingInput {
                attempt: 1,
                keys: vec!["ask-2".to_owned(), "summary".to_owned()],
            },
            params: None,
            output: None,
            error: None,
            completed_seq: None,
            questions: vec![
                asked("ask-1", form.clone(), true),
                asked("ask-2", form, false),
                asked(
                    "summary",
                    Question::Sample(SampleRequest::new("Summarise", 10)),
                    false,
                ),
            ],
            started_at: Timestamp::UNIX_EPOCH,
            updated_at: Timestamp::UNIX_EPOCH,
        };
        let questions = waiting_questions(std::slice::from_ref(&step));
        let keys: Vec<&str> = questions.iter().map(|asked| asked.key.as_str()).collect();
        assert_eq!(keys, ["ask-2", "summary"], "the answered one is not listed");
        assert_eq!(
            questions[0].line(),
            "question ask-2 of pick#2: form: Swap with\\u{1b}[31m whom?"
        );
        assert_eq!(
            questions[0].command("RUN", "--org acme"),
            "switchboard workflow answer RUN --key ask-2 --org acme --accept '{…}'    (or \
             --decline, --cancel)"
        );
        assert!(
            questions[1]
                .command("RUN", "--org acme")
                .ends_with("--completion TEXT")
        );
    }
}

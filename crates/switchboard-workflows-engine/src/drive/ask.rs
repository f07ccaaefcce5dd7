//! A step whose tool asks its client something (`ctx.elicit`, `ctx.sample`): a run has no
//! client, so the question is stored with the step and the run pauses until a person or an
//! agent answers it ([`Engine::answer`](crate::Engine::answer)), as it pauses for a decision
//! on a proposal.
//!
//! Each call of a step's tool goes with a [`StepAsker`] as its client: it answers what the step
//! already has an answer for (by the question's key, `ask-1`, `ask-2`, … in the order the tool
//! asks one at a time, or the tool's own keys), and fails the first question without one with
//! [`AskError::InputRequired`], which the tool passes on with `?`. The call ends there; the
//! registry frees a mutating call's idempotency key for the next round (the tool asks before
//! it changes anything), and the step waits ([`NodeState::WaitingInput`]) with its questions
//! stored. Once every question has its answer, the same attempt runs again under the same key,
//! its tool given the answers: a declined or cancelled form is an answer too, which the tool
//! reads as `Answer::Declined` or `Answer::Cancelled` and acts on.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use switchboard_core::BoxFuture;
use switchboard_core::ask::{
    AskError, Capability, ClientHandler, ClientLink, ElicitReply, Elicitation, Keyed, Question,
    Reply, SampleRequest, Sampled,
};
use switchboard_workflows::{StepQuestion, StepRecord};

use super::*;

/// The client of one call of a step's tool: the step's answers, and the questions still
/// without one.
#[derive(Debug, Default)]
pub(super) struct StepAsker {
    /// The answers the step has, by question key.
    answers: BTreeMap<String, Reply>,
    /// The questions this call asked that have no answer yet, in order.
    pending: Mutex<Vec<Keyed>>,
}

impl StepAsker {
    /// The client of a call of `step`'s tool (none yet: a step that never asked).
    pub(super) fn for_step(step: Option<&StepRecord>) -> Arc<Self> {
        let answers = step
            .map(|step| {
                step.questions
                    .iter()
                    .filter_map(|asked| {
                        let answer = asked.answer.as_ref()?;
                        Some((asked.key.clone(), answer.reply.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Arc::new(Self {
            answers,
            pending: Mutex::default(),
        })
    }

    /// The link a call's context carries to this client.
    pub(super) fn link(self: &Arc<Self>) -> ClientLink {
        ClientLink::new(Arc::clone(self) as Arc<dyn ClientHandler>)
    }

    /// The questions the call left without an answer (none: it asked nothing new).
    pub(super) fn take_pending(&self) -> Vec<Keyed> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The stored answer to `keyed`, if it answers a question of that kind.
    fn answer(&self, keyed: &Keyed) -> Option<Reply> {
        let reply = self.answers.get(&keyed.key)?;
        let fits = matches!(
            (&keyed.question, reply),
            (Question::Elicit(_), Reply::Elicit(_))
                | (Question::Sample(_), Reply::Sample(_))
                | (Question::Roots, Reply::Roots { .. })
        );
        if !fits {
            tracing::warn!(
                key = %keyed.key,
                "a step's stored answer is not of its question's kind: asked again"
            );
        }
        fits.then(|| reply.clone())
    }
}

impl ClientHandler for StepAsker {
    fn elicit<'a>(
        &'a self,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, AskError>> {
        Box::pin(switchboard_core::ask::elicit_as_batch(self, request))
    }

    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, AskError>> {
        Box::pin(switchboard_core::ask::sample_as_batch(self, request))
    }

    fn ask_all<'a>(
        &'a self,
        questions: &'a [Keyed],
    ) -> BoxFuture<'a, Result<Vec<Reply>, AskError>> {
        Box::pin(async move {
            if let Some(roots) = questions
                .iter()
                .find(|keyed| matches!(keyed.question, Question::Roots))
            {
                return Err(AskError::Unsupported {
                    capability: roots.question.capability(),
                });
            }
            let mut replies = Vec::with_capacity(questions.len());
            let mut missing = Vec::new();
            for keyed in questions {
                match self.answer(keyed) {
                    Some(reply) => replies.push(reply),
                    None => missing.push(keyed.clone()),
                }
            }
            if missing.is_empty() {
                return Ok(replies);
            }
            let keys = missing.iter().map(|keyed| keyed.key.clone()).collect();
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(missing);
            Err(AskError::InputRequired { keys })
        })
    }

    /// Forms, pages and completions: a person or an agent answers them. A run has no roots.
    fn can(&self, capability: Capability) -> bool {
        !matches!(capability, Capability::Roots)
    }

    fn awaits_input(&self) -> bool {
        !self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }
}

impl Run<'_> {
    /// The step's tool asked `asked` and has no answer yet: the step waits for them, stored
    /// with it (an answer given in an earlier round that did not fit is asked again), and the
    /// run pauses.
    pub(super) fn await_input(&self, path: &NodePath, iteration: u32, asked: Vec<Keyed>) -> Stop {
        let keys: Vec<String> = asked.iter().map(|keyed| keyed.key.clone()).collect();
        let mut described = Vec::with_capacity(asked.len());
        let waiting = self.node_event(
            path,
            iteration,
            NodeEvent::AwaitInput { keys: keys.clone() },
            Counting::No,
            None,
            |step| {
                for keyed in asked {
                    let question = StepQuestion {
                        key: keyed.key,
                        question: keyed.question,
                        answer: None,
                    };
                    described.push(format!("{} ({})", question.key, question.describe()));
                    match step
                        .questions
                        .iter_mut()
                        .find(|stored| stored.key == question.key)
                    {
                        Some(stored) => *stored = question,
                        None => step.questions.push(question),
                    }
                }
            },
        );
        if let Err(fault) = waiting {
            return Stop::Fault(fault);
        }
        self.waiting_for_input(path, &described.join("; "))
    }

    /// The pause of a step waiting for the answers to `questions` (as a person reads them).
    pub(super) fn waiting_for_input(&self, path: &NodePath, questions: &str) -> Stop {
        Stop::Suspend {
            reason: format!(
                "node `{path}` waits for an answer to {questions}: answer it with `switchboard \
                 workflow answer {run}` (or `Engine::answer`)",
                run = self.id
            ),
            wake_at: None,
            awaits_decision: false,
        }
    }

    /// The still unanswered questions of a step, as a person reads them.
    pub(super) fn unanswered(step: Option<&StepRecord>, keys: &[String]) -> String {
        step.map(|step| {
            step.questions
                .iter()
                .filter(|question| keys.contains(&question.key))
                .map(|question| format!("{} ({})", question.key, question.describe()))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_else(|| keys.join(", "))
    }
}

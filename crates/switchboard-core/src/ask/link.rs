//! A call's link to whoever answers its questions, and the log of what it asked.
//!
//! One link per call: the MCP server makes one for each `tools/call`, the registry one for a
//! call that brings none when a handler is installed. The log is what the call's audit record
//! lists, so it lives in the link, which the caller and the registry both hold.

use std::{
    fmt,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::Instant,
};

use super::{
    AskError, AskOutcome, AskRecord, ClientHandler, ElicitAction, ElicitReply, Elicitation, Keyed,
    Question, Reply, Root, SampleRequest, Sampled,
};
use crate::digest::digest_of;

/// Where a call's questions go, and the log of what they were: cheap to clone (shares both).
///
/// A link is not part of who is calling: it is never serialised, and every link compares equal
/// to every other, so that contexts and callers compare by their identity fields alone.
#[derive(Clone, Default)]
pub struct ClientLink {
    inner: Option<Arc<LinkInner>>,
}

struct LinkInner {
    handler: Arc<dyn ClientHandler>,
    asked: Mutex<Vec<AskRecord>>,
    /// How many questions were asked one at a time: the next one's key is `ask-<n + 1>`.
    singles: AtomicUsize,
}

impl ClientLink {
    /// No client: every question fails with [`AskError::NoClient`]. The default.
    pub const fn none() -> Self {
        Self { inner: None }
    }

    /// Questions go to `handler`, with a fresh log. Make one link per call: the log is the
    /// call's.
    pub fn new(handler: Arc<dyn ClientHandler>) -> Self {
        Self {
            inner: Some(Arc::new(LinkInner {
                handler,
                asked: Mutex::new(Vec::new()),
                singles: AtomicUsize::new(0),
            })),
        }
    }

    /// Whether questions go anywhere.
    pub fn is_active(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether the call must end so that the client can answer (see
    /// [`ClientHandler::awaits_input`]).
    pub fn awaits_input(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|inner| inner.handler.awaits_input())
    }

    /// Whether the client can answer questions that need `capability` (see
    /// [`ClientHandler::can`]); never without a handler.
    pub fn can(&self, capability: super::Capability) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|inner| inner.handler.can(capability))
    }

    /// Begins the call's task where the call's task begins at the tool's word (see
    /// [`ClientHandler::begin_task`]); at once without a handler.
    pub async fn begin_task(&self) -> Result<(), AskError> {
        match &self.inner {
            Some(inner) => inner.handler.begin_task().await,
            None => Ok(()),
        }
    }

    /// What the call asked so far, in order.
    pub fn asked(&self) -> Vec<AskRecord> {
        match &self.inner {
            Some(inner) => inner
                .asked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            None => Vec::new(),
        }
    }

    /// Asks `questions` together, and answers them in order. Every question is logged with
    /// how it ended; questions with no handler to go to fail at once and are not logged (they
    /// never left the process).
    pub async fn ask_all(&self, questions: &[Keyed]) -> Result<Vec<Reply>, AskError> {
        let Some(inner) = &self.inner else {
            return Err(AskError::NoClient {
                capability: questions
                    .first()
                    .map_or(super::Capability::ElicitationForm, |keyed| {
                        keyed.question.capability()
                    }),
            });
        };
        let started = Instant::now();
        let answer = inner.handler.ask_all(questions).await;
        inner.note(questions, &answer, started);
        answer
    }

    /// Asks the person at the client.
    pub async fn elicit(&self, request: &Elicitation) -> Result<ElicitReply, AskError> {
        match self.ask_one(Question::Elicit(request.clone())).await? {
            Reply::Elicit(reply) => Ok(reply),
            other => Err(mismatch("an elicitation", &other)),
        }
    }

    /// Asks the client's model.
    pub async fn sample(&self, request: &SampleRequest) -> Result<Sampled, AskError> {
        match self.ask_one(Question::Sample(request.clone())).await? {
            Reply::Sample(sampled) => Ok(sampled),
            other => Err(mismatch("a sampling request", &other)),
        }
    }

    /// Asks the client for its roots.
    pub async fn list_roots(&self) -> Result<Vec<Root>, AskError> {
        match self.ask_one(Question::Roots).await? {
            Reply::Roots { roots } => Ok(roots),
            other => Err(mismatch("a roots request", &other)),
        }
    }

    /// One question, under the next `ask-<n>` key.
    async fn ask_one(&self, question: Question) -> Result<Reply, AskError> {
        let number = self
            .inner
            .as_ref()
            .map_or(0, |inner| inner.singles.fetch_add(1, Ordering::Relaxed) + 1);
        let asked = [Keyed::new(format!("ask-{number}"), question)];
        let mut replies = self.ask_all(&asked).await?;
        replies
            .pop()
            .ok_or_else(|| AskError::BadAnswer("the client gave no answer".to_owned()))
    }
}

fn mismatch(asked: &str, reply: &Reply) -> AskError {
    AskError::BadAnswer(format!("{asked} was answered with {reply:?}"))
}

impl LinkInner {
    fn note(&self, questions: &[Keyed], answer: &Result<Vec<Reply>, AskError>, started: Instant) {
        let duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        for (index, keyed) in questions.iter().enumerate() {
            let (outcome, answer_hash, error) = match answer {
                Ok(replies) => match replies.get(index) {
                    Some(reply) => {
                        let (outcome, hash) = outcome_of(reply);
                        (outcome, hash, None)
                    }
                    None => (
                        AskOutcome::Failed,
                        None,
                        Some("bad_client_answer".to_owned()),
                    ),
                },
                Err(AskError::InputRequired { .. }) => (AskOutcome::Pending, None, None),
                Err(error) => (AskOutcome::Failed, None, Some(error.code().to_owned())),
            };
            asked.push(AskRecord {
                kind: keyed.question.kind(),
                outcome,
                error,
                request_hash: digest_of(&keyed.question).ok(),
                answer_hash,
                duration_us,
            });
        }
    }
}

/// How a reply ends its question, and the digest of what it says.
fn outcome_of(reply: &Reply) -> (AskOutcome, Option<crate::digest::Digest>) {
    match reply {
        Reply::Elicit(reply) => (
            match reply.action {
                ElicitAction::Accept => AskOutcome::Accepted,
                ElicitAction::Decline => AskOutcome::Declined,
                ElicitAction::Cancel => AskOutcome::Cancelled,
            },
            reply
                .content
                .as_ref()
                .and_then(|content| digest_of(content).ok()),
        ),
        Reply::Sample(sampled) => (AskOutcome::Answered, digest_of(sampled).ok()),
        Reply::Roots { roots } => (AskOutcome::Answered, digest_of(roots).ok()),
    }
}

impl fmt::Debug for ClientLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientLink")
            .field("active", &self.is_active())
            .finish()
    }
}

/// Every link equals every other: a link says where questions go, not who calls.
impl PartialEq for ClientLink {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for ClientLink {}

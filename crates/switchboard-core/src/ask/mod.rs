//! A tool asking the client: a form for the person at the client (elicitation), or a completion
//! from the client's model (sampling).
//!
//! A tool asks through its [`ToolContext`](crate::ToolContext) (`ctx.elicit`, `ctx.sample`); the
//! question goes to the [`ClientLink`] its caller put in the [`CallContext`](crate::CallContext),
//! the way progress reports go to a [`ProgressNotifier`](crate::ProgressNotifier). The MCP server
//! sets a link on every `tools/call`, answered by the client over the protocol; an embedding
//! service may install a [`ClientHandler`] of its own on the registry, used when the caller set
//! none. Without either, a question fails with [`AskError::NoClient`], which the tool sees as an
//! error it can handle or pass on with `?`.
//!
//! Every question that reaches a handler, and how it was answered, is noted in the link's
//! [`AskRecord`]s; the registry puts them in the call's one audit record. Only digests are
//! kept, never the text: a form may hold what a person would not want in a log.
//!
//! This crate has no async runtime, so timeouts belong to the handler (the MCP server bounds
//! each question; a handler of one's own must bound its own).

mod form;

use std::{
    fmt,
    sync::{Arc, Mutex, PoisonError},
    time::Instant,
};

pub use form::{FormError, form_schema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    digest::{Digest, digest_of},
    error::ToolError,
    tool::BoxFuture,
};

/// A question for the person at the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Elicitation {
    /// A form the client shows: a flat object schema of strings, numbers, booleans and enums
    /// (see [`form_schema`]).
    Form {
        /// What the person is asked, in a sentence.
        message: String,
        /// The form's JSON Schema.
        requested_schema: Value,
    },
    /// A page the client opens in the browser, for anything that must not pass through the
    /// client (a password, a payment, an OAuth consent). The answer carries no content: the
    /// page itself tells the server what happened.
    Url {
        /// Why the person should open the page.
        message: String,
        /// The page.
        url: String,
        /// The server's id for this question, which the page's own traffic names.
        elicitation_id: String,
    },
}

impl Elicitation {
    /// Which capability the client needs to answer it.
    pub fn capability(&self) -> Capability {
        match self {
            Self::Form { .. } => Capability::ElicitationForm,
            Self::Url { .. } => Capability::ElicitationUrl,
        }
    }
}

/// What the person did with a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitAction {
    /// Answered it (a form's content comes with it).
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

/// A client's answer to an [`Elicitation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitReply {
    /// What the person did.
    pub action: ElicitAction,
    /// The form's content, when accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

/// What a tool gets back from `ctx.elicit`: the person's answer, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<T> {
    /// The person answered; `T` is the form's content.
    Accepted(T),
    /// The person said no.
    Declined,
    /// The person dismissed the question.
    Cancelled,
}

impl<T> Answer<T> {
    /// The answer, if the person gave one.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accepted(value) => Some(value),
            Self::Declined | Self::Cancelled => None,
        }
    }
}

/// Who speaks a message in a sampling conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleRole {
    /// The user (the tool, speaking for it).
    User,
    /// The model.
    Assistant,
}

/// One piece of a sampling message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SampleContent {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The bytes, base64.
        data: String,
        /// Its media type (`image/png`).
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The bytes, base64.
        data: String,
        /// Its media type (`audio/wav`).
        mime_type: String,
    },
}

impl SampleContent {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The text, when this is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            Self::Image { .. } | Self::Audio { .. } => None,
        }
    }
}

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleMessage {
    /// Who speaks it.
    pub role: SampleRole,
    /// What it says.
    pub content: SampleContent,
}

impl SampleMessage {
    /// A user message of text.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: SampleRole::User,
            content: SampleContent::text(text),
        }
    }
}

/// A completion asked of the client's model. The client (and its user) may change or refuse
/// it; nothing here binds the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleRequest {
    /// The conversation so far.
    pub messages: Vec<SampleMessage>,
    /// A system prompt the tool asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The most tokens the answer may take.
    pub max_tokens: u32,
    /// Sampling temperature, if the tool cares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Where the model should stop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Names of models the tool would prefer (hints only, the client chooses).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_hints: Vec<String>,
}

impl SampleRequest {
    /// One user message of text, answered in at most `max_tokens` tokens.
    pub fn new(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Self {
            messages: vec![SampleMessage::user(prompt)],
            system_prompt: None,
            max_tokens,
            temperature: None,
            stop_sequences: Vec::new(),
            model_hints: Vec::new(),
        }
    }

    /// The same request with a system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }
}

/// The client model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sampled {
    /// Who speaks it (the model: `assistant`).
    pub role: SampleRole,
    /// What it said.
    pub content: SampleContent,
    /// The model that answered, as the client names it.
    pub model: String,
    /// Why it stopped (`endTurn`, `maxTokens`, `stopSequence`, or the client's own word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// The answer's text, when it is text.
    pub fn text(&self) -> Option<&str> {
        self.content.as_text()
    }
}

/// What a client must support to be asked something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Forms (`elicitation` with form mode).
    ElicitationForm,
    /// Pages to open (`elicitation` with URL mode).
    ElicitationUrl,
    /// Completions from its model (`sampling`).
    Sampling,
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ElicitationForm => "elicitation (form mode)",
            Self::ElicitationUrl => "elicitation (URL mode)",
            Self::Sampling => "sampling",
        })
    }
}

/// Why a question got no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// Nobody to ask: the call came with no client and the registry has no handler.
    #[error(
        "this call has no client to ask ({capability}): call the tool from an MCP client that \
         supports it, or install a handler with `RegistryBuilder::client_handler`"
    )]
    NoClient {
        /// What the tool needed.
        capability: Capability,
    },
    /// The client did not declare the capability the question needs.
    #[error(
        "the client cannot answer this: it did not declare the {capability} capability when \
         it connected"
    )]
    Unsupported {
        /// What the client lacks.
        capability: Capability,
    },
    /// The form type cannot be shown as an elicitation form.
    #[error("{0}")]
    BadForm(#[from] FormError),
    /// The answer came back in a shape the tool did not ask for.
    #[error("the client's answer does not fit the form: {0}")]
    BadAnswer(String),
    /// No answer in time.
    #[error("the client did not answer within {seconds} s")]
    TimedOut {
        /// How long the handler waited.
        seconds: u64,
    },
    /// The client answered with an error (its user refused a sampling request, say).
    #[error("the client refused: {0}")]
    Refused(String),
    /// The question could not be sent or its answer not read (the connection ended).
    #[error("the question could not reach the client: {0}")]
    Transport(String),
}

impl AskError {
    /// The stable code a tool error made from this carries.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoClient { .. } => "client_missing",
            Self::Unsupported { .. } => "client_capability_missing",
            Self::BadForm(_) => "bad_form",
            Self::BadAnswer(_) => "bad_client_answer",
            Self::TimedOut { .. } => "client_timeout",
            Self::Refused(_) => "client_refused",
            Self::Transport(_) => "client_unreachable",
        }
    }
}

impl From<AskError> for ToolError {
    fn from(error: AskError) -> Self {
        let retryable = matches!(error, AskError::TimedOut { .. } | AskError::Transport(_));
        let tool_error = ToolError::new(error.code(), error.to_string());
        if retryable {
            tool_error.retryable()
        } else {
            tool_error
        }
    }
}

/// Answers the questions tools ask: the MCP server's link to its client, or an embedding
/// service's own (a chat window, a test).
pub trait ClientHandler: Send + Sync + 'static {
    /// Asks the person at the client. A handler that cannot show this kind of question
    /// answers [`AskError::Unsupported`].
    fn elicit<'a>(
        &'a self,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, AskError>>;

    /// Asks the client's model.
    fn sample<'a>(&'a self, request: &'a SampleRequest)
    -> BoxFuture<'a, Result<Sampled, AskError>>;
}

/// The kind of a question, as an audit record names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskKind {
    /// An elicitation in form mode.
    Form,
    /// An elicitation in URL mode.
    Url,
    /// A sampling request.
    Sampling,
}

/// How a question ended, as an audit record names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskOutcome {
    /// A form or page was accepted.
    Accepted,
    /// The person said no.
    Declined,
    /// The person dismissed it.
    Cancelled,
    /// The model answered.
    Answered,
    /// It got no answer; the code is [`AskError::code`]'s.
    Failed,
}

/// One question a call asked, for its audit record: what was asked and answered, as digests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskRecord {
    /// What was asked.
    pub kind: AskKind,
    /// How it ended.
    pub outcome: AskOutcome,
    /// The [`AskError::code`] of a failed question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Digest of the question's canonical JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_hash: Option<Digest>,
    /// Digest of the answer's canonical JSON (a form's content, the model's reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_hash: Option<Digest>,
    /// How long the answer took, in microseconds.
    pub duration_us: u64,
}

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
            })),
        }
    }

    /// Whether questions go anywhere.
    pub fn is_active(&self) -> bool {
        self.inner.is_some()
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

    /// Asks the person at the client. A question with no handler to go to fails at once and is
    /// not logged (it never left the process).
    pub async fn elicit(&self, request: &Elicitation) -> Result<ElicitReply, AskError> {
        let Some(inner) = &self.inner else {
            return Err(AskError::NoClient {
                capability: request.capability(),
            });
        };
        let kind = match request {
            Elicitation::Form { .. } => AskKind::Form,
            Elicitation::Url { .. } => AskKind::Url,
        };
        let started = Instant::now();
        let answer = inner.handler.elicit(request).await;
        inner.note(kind, request, &answer, started, |reply| {
            (
                match reply.action {
                    ElicitAction::Accept => AskOutcome::Accepted,
                    ElicitAction::Decline => AskOutcome::Declined,
                    ElicitAction::Cancel => AskOutcome::Cancelled,
                },
                reply
                    .content
                    .as_ref()
                    .and_then(|content| digest_of(content).ok()),
            )
        });
        answer
    }

    /// Asks the client's model.
    pub async fn sample(&self, request: &SampleRequest) -> Result<Sampled, AskError> {
        let Some(inner) = &self.inner else {
            return Err(AskError::NoClient {
                capability: Capability::Sampling,
            });
        };
        let started = Instant::now();
        let answer = inner.handler.sample(request).await;
        inner.note(AskKind::Sampling, request, &answer, started, |sampled| {
            (AskOutcome::Answered, digest_of(sampled).ok())
        });
        answer
    }
}

impl LinkInner {
    fn note<Q: Serialize, A>(
        &self,
        kind: AskKind,
        request: &Q,
        answer: &Result<A, AskError>,
        started: Instant,
        outcome: impl FnOnce(&A) -> (AskOutcome, Option<Digest>),
    ) {
        let (outcome, answer_hash, error) = match answer {
            Ok(answer) => {
                let (outcome, hash) = outcome(answer);
                (outcome, hash, None)
            }
            Err(error) => (AskOutcome::Failed, None, Some(error.code().to_owned())),
        };
        let record = AskRecord {
            kind,
            outcome,
            error,
            request_hash: digest_of(request).ok(),
            answer_hash,
            duration_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        };
        self.asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
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

/// Asks for the form `T` and reads the answer as a `T`: what `ctx.elicit::<T>` does.
pub(crate) async fn elicit_typed<T: JsonSchema + DeserializeOwned>(
    link: &ClientLink,
    message: &str,
) -> Result<Answer<T>, AskError> {
    let request = Elicitation::Form {
        message: message.to_owned(),
        requested_schema: form_schema::<T>()?,
    };
    let reply = link.elicit(&request).await?;
    match reply.action {
        ElicitAction::Accept => {
            let content = reply.content.unwrap_or(Value::Object(Default::default()));
            serde_json::from_value(content)
                .map(Answer::Accepted)
                .map_err(|error| AskError::BadAnswer(error.to_string()))
        }
        ElicitAction::Decline => Ok(Answer::Declined),
        ElicitAction::Cancel => Ok(Answer::Cancelled),
    }
}

#[cfg(test)]
mod tests;

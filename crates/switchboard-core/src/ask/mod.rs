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
mod link;

use std::fmt;

pub use form::{FormError, form_schema};
pub use link::ClientLink;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{digest::Digest, error::ToolError, tool::BoxFuture};

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
    /// Telling the server its roots (`roots`).
    Roots,
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ElicitationForm => "elicitation (form mode)",
            Self::ElicitationUrl => "elicitation (URL mode)",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
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
    /// The client answers with its next call: this call ends here, with an `input_required`
    /// result that carries the questions. A tool passes this error on with `?`.
    #[error(
        "the client answers {} in its next call; this call ends with the questions",
        .keys.join(", ")
    )]
    InputRequired {
        /// The keys of the questions still to answer.
        keys: Vec<String>,
    },
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
            Self::InputRequired { .. } => "input_required",
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

    /// Asks the client for its roots (the folders or places it works in). By default the
    /// handler has none to give: [`AskError::Unsupported`].
    fn list_roots(&self) -> BoxFuture<'_, Result<Vec<Root>, AskError>> {
        Box::pin(std::future::ready(Err(AskError::Unsupported {
            capability: Capability::Roots,
        })))
    }

    /// Asks several questions that the tool needs answered together, and answers them in
    /// order. By default one after another; a handler that can put them to the client at once
    /// (an MCP `input_required` result) does.
    fn ask_all<'a>(
        &'a self,
        questions: &'a [Keyed],
    ) -> BoxFuture<'a, Result<Vec<Reply>, AskError>> {
        Box::pin(async move {
            let mut replies = Vec::with_capacity(questions.len());
            for keyed in questions {
                replies.push(match &keyed.question {
                    Question::Elicit(request) => Reply::Elicit(self.elicit(request).await?),
                    Question::Sample(request) => Reply::Sample(self.sample(request).await?),
                    Question::Roots => Reply::Roots {
                        roots: self.list_roots().await?,
                    },
                });
            }
            Ok(replies)
        })
    }

    /// Whether the client can answer questions that need `capability` (it declared it). A
    /// tool that can do without a question checks first, and asks only what can be answered.
    /// By default a handler says yes and lets the question fail if it cannot.
    fn can(&self, capability: Capability) -> bool {
        let _ = capability;
        true
    }

    /// Whether the call must end now so that the client can answer what it was asked (it
    /// answers with its next call). Only a handler that asks in `input_required` results
    /// says yes; the registry then frees the call's idempotency key for that next call.
    fn awaits_input(&self) -> bool {
        false
    }

    /// Begins the call's task, when the call was made so that its task begins at the tool's
    /// word (an MCP client that does tasks, calling a tool declared `asks_before_task`, on
    /// protocol 2026-07-28): the client gets the task, and the questions asked after this go
    /// to the task. Everywhere else there is no task to begin, or it began with the call, and
    /// this returns at once: the default.
    ///
    /// Fails with [`AskError::InputRequired`] when questions of this call are still
    /// unanswered (the call ends with them, and the task begins in a later round), or with
    /// [`AskError::Transport`] when the request that would answer with the task is gone.
    fn begin_task(&self) -> BoxFuture<'_, Result<(), AskError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// An elicitation put to `handler` as the single question `ask-1` of its
/// [`ask_all`](ClientHandler::ask_all): the `elicit` of a handler whose every question goes
/// through one batch path (answers carried by rounds, a task's or a workflow step's stored
/// answers).
pub async fn elicit_as_batch<H: ClientHandler + ?Sized>(
    handler: &H,
    request: &Elicitation,
) -> Result<ElicitReply, AskError> {
    let asked = [Keyed::new("ask-1", Question::Elicit(request.clone()))];
    match handler.ask_all(&asked).await?.pop() {
        Some(Reply::Elicit(reply)) => Ok(reply),
        other => Err(AskError::BadAnswer(format!("{other:?}"))),
    }
}

/// A sampling request put to `handler` as the single question `ask-1` of its
/// [`ask_all`](ClientHandler::ask_all), as [`elicit_as_batch`] does for an elicitation.
pub async fn sample_as_batch<H: ClientHandler + ?Sized>(
    handler: &H,
    request: &SampleRequest,
) -> Result<Sampled, AskError> {
    let asked = [Keyed::new("ask-1", Question::Sample(request.clone()))];
    match handler.ask_all(&asked).await?.pop() {
        Some(Reply::Sample(sampled)) => Ok(sampled),
        other => Err(AskError::BadAnswer(format!("{other:?}"))),
    }
}

/// Anything a tool can ask the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
pub enum Question {
    /// A form or page for the person.
    Elicit(Elicitation),
    /// A completion from the model.
    Sample(SampleRequest),
    /// The client's roots.
    Roots,
}

impl Question {
    /// What the audit record calls it.
    pub fn kind(&self) -> AskKind {
        match self {
            Self::Elicit(Elicitation::Form { .. }) => AskKind::Form,
            Self::Elicit(Elicitation::Url { .. }) => AskKind::Url,
            Self::Sample(_) => AskKind::Sampling,
            Self::Roots => AskKind::Roots,
        }
    }

    /// What the client needs to answer it.
    pub fn capability(&self) -> Capability {
        match self {
            Self::Elicit(request) => request.capability(),
            Self::Sample(_) => Capability::Sampling,
            Self::Roots => Capability::Roots,
        }
    }
}

/// A question under the key its answer comes back by: a tool names its keys when it asks
/// several questions at once ([`ClientLink::ask_all`]); one question at a time gets `ask-1`,
/// `ask-2`, … in the order the call asks them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Keyed {
    /// The key, unique within the call.
    pub key: String,
    /// The question.
    pub question: Question,
}

impl Keyed {
    /// `question` under `key`.
    pub fn new(key: impl Into<String>, question: Question) -> Self {
        Self {
            key: key.into(),
            question,
        }
    }
}

/// An answer to a [`Question`], of the same kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
pub enum Reply {
    /// What the person did with the form or page.
    Elicit(ElicitReply),
    /// What the model said.
    Sample(Sampled),
    /// The client's roots.
    Roots {
        /// The roots, in the client's order.
        roots: Vec<Root>,
    },
}

/// A place the client works in: a folder, a repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// Its URI (`file:///home/sam/project`).
    pub uri: String,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
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
    /// A request for the client's roots.
    Roots,
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
    /// The model answered, or the client gave its roots.
    Answered,
    /// Asked in an `input_required` result: the answer comes with the client's next call.
    Pending,
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

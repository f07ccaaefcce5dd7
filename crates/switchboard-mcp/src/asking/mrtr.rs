//! Tools and prompts asking the client on protocol 2026-07-28, which has no server-to-client
//! requests: the `tools/call` or `prompts/get` ends with an `input_required` result carrying the
//! questions, and the client sends it again with its answers (`inputResponses`) and the
//! `requestState` the server gave it (SEP-2322, "multi round-trip requests").
//!
//! The tool (or the prompt's body) runs again from the start on each round, with the answers
//! so far: the `n`-th question it asks finds its answer under its key (its own, or `ask-<n>`),
//! and the first question without one ends the round. So a tool asks before it changes
//! anything, and passes [`AskError::InputRequired`] on with `?`. A mutating call that ends so
//! does not use up its idempotency key (the registry frees it), so the next round runs it.
//!
//! Answers from earlier rounds travel in the `requestState`, sealed with the server's
//! [`StateKey`] (the approvals' key, under a domain string of its own, one for calls and one
//! for prompts) and bound, as approval states are, to the identity and to the tool or prompt
//! and arguments of the request: a state that was tampered with, that expired, or that belongs
//! to another identity or request does not open, and the request is refused with `-32602`.
//! Answers in `inputResponses` to questions nobody asked are ignored; one that does not read as
//! the answer to its question is asked again. A question that needs a capability the request's
//! `clientCapabilities` do not declare is never put: the request fails with `-32021`
//! ([`missing_capability_error`]).

#![allow(deprecated)] // rmcp 3 marks the MCP sampling and roots types deprecated (SEP-2577).

use std::{
    collections::BTreeMap,
    sync::{Mutex, PoisonError},
    time::Duration,
};

use rmcp::{
    ErrorData,
    model::{
        CallToolRequestParams, ClientCapabilities, CreateMessageRequest, CreateMessageResult,
        ElicitRequest, ElicitResult, ErrorCode, GetPromptRequestParams, InputRequest,
        InputRequests, InputRequiredResult, InputResponses, ListRootsRequest, ListRootsResult,
        RequestStateError, SealOptions,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_core::{
    BoxFuture,
    ask::{
        AskError, Capability, ClientHandler, ElicitReply, Elicitation, Keyed, Question, Reply,
        Root, SampleRequest, Sampled,
    },
};

use super::{elicit_params, reply_of, sample_params, sampled_of, supports};
use crate::{
    approval::{StateKey, named_binding, request_binding},
    identity::Identity,
};

/// How long a client has to answer before the sealed state expires.
const STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// Separates this use of the key from any other.
const DOMAIN: &[u8] = b"switchboard.mcp.ask-state.v1";

/// Separates a prompt's questions' states from a tool call's.
const PROMPT_DOMAIN: &[u8] = b"switchboard.mcp.prompt-ask-state.v1";

/// What a `requestState` holds: the answers of earlier rounds, by key.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Payload {
    answers: BTreeMap<String, Value>,
}

/// Asks in `input_required` results: answers what it already has, and collects the rest.
#[derive(Debug)]
pub(crate) struct RoundAsker {
    capabilities: Option<ClientCapabilities>,
    /// What the request's state is bound to: the identity, and the tool or prompt and its
    /// arguments.
    binding: Vec<u8>,
    /// The answers of earlier rounds and of this request, by key.
    answers: BTreeMap<String, Value>,
    /// The answers the tool read this round: what the next state carries.
    used: Mutex<BTreeMap<String, Value>>,
    /// The questions still to answer: the next `input_required` result's.
    pending: Mutex<InputRequests>,
    /// The first capability a question needed that the client did not declare.
    missing: Mutex<Option<Capability>>,
}

impl RoundAsker {
    /// The asker of one round of the tool call `request` by `identity`: the answers in its
    /// sealed `requestState`, if it has one, and in its `inputResponses`. `None` when the
    /// request carries a state that does not open as one of these (another kind of state, such
    /// as an approval's, or a tampered or expired one).
    pub(crate) fn for_round(
        key: &StateKey,
        identity: &Identity,
        request: &CallToolRequestParams,
        capabilities: Option<ClientCapabilities>,
    ) -> Option<Self> {
        Self::open_round(
            key,
            request_binding(DOMAIN, identity, request),
            request.request_state.as_deref(),
            request.input_responses.as_ref(),
            capabilities,
        )
    }

    /// The asker of one round of the `prompts/get` `request` by `identity` (see
    /// [`RoundAsker::for_round`]); its state is bound to the prompt and its arguments.
    pub(crate) fn for_prompt(
        key: &StateKey,
        identity: &Identity,
        request: &GetPromptRequestParams,
        capabilities: Option<ClientCapabilities>,
    ) -> Option<Self> {
        Self::open_round(
            key,
            named_binding(
                PROMPT_DOMAIN,
                identity,
                &request.name,
                request.arguments.as_ref(),
            ),
            request.request_state.as_deref(),
            request.input_responses.as_ref(),
            capabilities,
        )
    }

    fn open_round(
        key: &StateKey,
        binding: Vec<u8>,
        request_state: Option<&str>,
        input_responses: Option<&InputResponses>,
        capabilities: Option<ClientCapabilities>,
    ) -> Option<Self> {
        let mut answers = match request_state {
            Some(sealed) => {
                key.codec()
                    .open_json_with::<Payload>(sealed, &binding)
                    .ok()?
                    .answers
            }
            None => BTreeMap::new(),
        };
        if let Some(responses) = input_responses {
            answers.extend(
                responses
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone())),
            );
        }
        Some(Self {
            capabilities,
            binding,
            answers,
            used: Mutex::default(),
            pending: Mutex::default(),
            missing: Mutex::default(),
        })
    }

    /// The `input_required` result asking what is still to answer, with the answers so far
    /// sealed in its state, bound as the request's was; `None` when nothing is.
    pub(crate) fn input_required(
        &self,
        key: &StateKey,
    ) -> Option<Result<InputRequiredResult, RequestStateError>> {
        let pending = std::mem::take(&mut *lock(&self.pending));
        if pending.is_empty() {
            return None;
        }
        let payload = Payload {
            answers: std::mem::take(&mut *lock(&self.used)),
        };
        Some(
            key.codec()
                .seal_json_with(
                    &payload,
                    &SealOptions::new()
                        .associated_data(&self.binding)
                        .ttl(STATE_TTL),
                )
                .map(|sealed| InputRequiredResult::new(Some(pending), Some(sealed))),
        )
    }

    /// The keys of the questions asked this round that it has no answer to.
    pub(crate) fn open_keys(&self) -> Vec<String> {
        lock(&self.pending).keys().cloned().collect()
    }

    /// An asker with `answers` and no state behind them, for the tests of what builds on it.
    #[cfg(test)]
    pub(crate) fn with_answers(
        answers: BTreeMap<String, Value>,
        capabilities: Option<ClientCapabilities>,
    ) -> Self {
        Self {
            capabilities,
            binding: Vec::new(),
            answers,
            used: Mutex::default(),
            pending: Mutex::default(),
            missing: Mutex::default(),
        }
    }

    /// The first capability the call asked for that the client did not declare, if any: on
    /// this revision a call that needs one fails with MCP's missing-capability error
    /// ([`missing_capability_error`]).
    pub(crate) fn missing_capability(&self) -> Option<Capability> {
        *lock(&self.missing)
    }

    /// The answer to `question` under `key`, if this round has one that reads as such.
    fn answer(&self, key: &str, question: &Question) -> Option<Reply> {
        let value = self.answers.get(key)?;
        let reply = match question {
            Question::Elicit(_) => serde_json::from_value::<ElicitResult>(value.clone())
                .ok()
                .map(|result| Reply::Elicit(reply_of(result))),
            Question::Sample(_) => serde_json::from_value::<CreateMessageResult>(value.clone())
                .ok()
                .and_then(|result| sampled_of(result).ok())
                .map(Reply::Sample),
            Question::Roots => serde_json::from_value::<ListRootsResult>(value.clone())
                .ok()
                .map(|result| Reply::Roots {
                    roots: result
                        .roots
                        .into_iter()
                        .map(|root| Root {
                            uri: root.uri,
                            name: root.name,
                        })
                        .collect(),
                }),
        };
        if reply.is_none() {
            tracing::warn!(
                key,
                "an input response does not answer its question: asked again"
            );
        }
        reply
    }
}

impl ClientHandler for RoundAsker {
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
            for keyed in questions {
                let capability = keyed.question.capability();
                if !supports(self.capabilities.as_ref(), capability) {
                    lock(&self.missing).get_or_insert(capability);
                    return Err(AskError::Unsupported { capability });
                }
            }
            let mut replies = Vec::with_capacity(questions.len());
            let mut missing = InputRequests::new();
            for keyed in questions {
                match self.answer(&keyed.key, &keyed.question) {
                    Some(reply) => {
                        if let Some(value) = self.answers.get(&keyed.key) {
                            lock(&self.used).insert(keyed.key.clone(), value.clone());
                        }
                        replies.push(reply);
                    }
                    None => {
                        missing.insert(keyed.key.clone(), input_request(&keyed.question)?);
                    }
                }
            }
            if missing.is_empty() {
                return Ok(replies);
            }
            let keys = missing.keys().cloned().collect();
            lock(&self.pending).extend(missing);
            Err(AskError::InputRequired { keys })
        })
    }

    fn can(&self, capability: Capability) -> bool {
        supports(self.capabilities.as_ref(), capability)
    }

    fn awaits_input(&self) -> bool {
        !lock(&self.pending).is_empty()
    }
}

/// MCP's `-32021` error (missing required client capability) for a call that needed
/// `capability`: `data.requiredCapabilities` names it as a client capabilities object
/// (`{"sampling": {}}`), and over HTTP the answer is `400`.
pub(crate) fn missing_capability_error(capability: Capability, tool: &str) -> ErrorData {
    let required = match capability {
        Capability::Sampling => json!({"sampling": {}}),
        Capability::Roots => json!({"roots": {}}),
        Capability::ElicitationForm => json!({"elicitation": {"form": {}}}),
        Capability::ElicitationUrl => json!({"elicitation": {"url": {}}}),
    };
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "`{tool}` needs the client's {capability} capability, which this request's \
             `clientCapabilities` does not declare; declare it to use this"
        ),
        Some(json!({"requiredCapabilities": required})),
    )
}

/// A question as an `inputRequests` entry.
pub(super) fn input_request(question: &Question) -> Result<InputRequest, AskError> {
    Ok(match question {
        Question::Elicit(request) => {
            InputRequest::Elicitation(ElicitRequest::new(elicit_params(request)?))
        }
        Question::Sample(request) => {
            InputRequest::CreateMessage(CreateMessageRequest::new(sample_params(request)?))
        }
        Question::Roots => InputRequest::ListRoots(ListRootsRequest::default()),
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

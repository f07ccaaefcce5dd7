//! Tools asking the MCP client: the [`ClientHandler`] every `tools/call` gets, which turns a
//! tool's `ctx.elicit`, `ctx.sample` and `ctx.list_roots` into `elicitation/create`,
//! `sampling/createMessage` and `roots/list` requests to the client while the call waits
//! (protocol revisions 2025-06-18 and 2025-11-25), or into an `input_required` result on
//! 2026-07-28 ([`mrtr`]), or, in a task, into its `inputRequests` ([`task`]); a tool whose task
//! begins at its word asks in rounds, then in its task ([`rounds_then_task`]).
//!
//! The client must have declared the capability the question needs when it connected; one
//! that did not gets no request at all, and the tool gets
//! [`AskError::Unsupported`] naming what is missing (its error reaches the client as the call's
//! `isError` result). Each question waits at most [`ASK_TIMEOUT`] for its answer, and is dropped
//! with the call when the client cancels it. What was asked and answered is kept, as digests, in
//! the call's audit record (the registry does that, from the link).
//!
//! Sampling's types are marked deprecated in rmcp (SEP-2577 plans to remove sampling from the
//! protocol); the protocol revisions this server speaks all have it, so it is served.

#![allow(deprecated)] // rmcp 3 marks the MCP sampling and roots types deprecated (SEP-2577).

mod mrtr;
mod rounds_then_task;
mod task;

pub(crate) use mrtr::{RoundAsker, missing_capability_error};
pub(crate) use rounds_then_task::{BeginTask, RoundsThenTask};
pub(crate) use task::TaskAsker;

use std::{sync::Arc, time::Duration};

use rmcp::{
    Peer, RoleServer,
    model::{
        ClientCapabilities, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
        CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationSchema, ListRootsRequest, ProtocolVersion, Role, SamplingMessageContentBlock,
        ServerRequest,
    },
    service::{PeerRequestOptions, RequestContext, ServiceError},
};
use serde_json::{Value, json};
use switchboard_core::{
    BoxFuture,
    ask::{
        AskError, Capability, ClientHandler, ClientLink, ElicitAction, ElicitReply, Elicitation,
        Root, SampleContent, SampleRequest, SampleRole, Sampled,
    },
};

/// Whether a client that declared `capabilities` can answer what needs `capability`.
pub(crate) fn supports(capabilities: Option<&ClientCapabilities>, capability: Capability) -> bool {
    let Some(capabilities) = capabilities else {
        return false;
    };
    match capability {
        Capability::Sampling => capabilities.sampling.is_some(),
        Capability::ElicitationForm => capabilities
            .elicitation
            .as_ref()
            // A client naming neither mode does forms (the 2025-06-18 capability).
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none()),
        Capability::ElicitationUrl => capabilities
            .elicitation
            .as_ref()
            .is_some_and(|elicitation| elicitation.url.is_some()),
        Capability::Roots => capabilities.roots.is_some(),
    }
}

/// How long a question waits for the client's answer: a person may have to read a form, or
/// approve a sampling request, first.
pub(crate) const ASK_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Whether a request's questions go in `input_required` results (2026-07-28) rather than to
/// the client while the call waits.
pub(crate) fn asks_in_rounds(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// The link a `tools/call` on a 2025 revision asks its client through: to the client, while
/// the call waits.
pub(crate) fn inline_link(context: &RequestContext<RoleServer>) -> ClientLink {
    ClientLink::new(Arc::new(PeerAsker::new(context.peer.clone())))
}

/// Asks one MCP client, over its session, while the call waits.
#[derive(Debug)]
pub(crate) struct PeerAsker {
    peer: Peer<RoleServer>,
    timeout: Duration,
}

impl PeerAsker {
    /// An asker for a call from the client behind `peer`.
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        Self {
            peer,
            timeout: ASK_TIMEOUT,
        }
    }

    /// Whether the client declared, when it connected, what `capability` needs.
    fn supports(&self, capability: Capability) -> bool {
        let info = self.peer.peer_info();
        supports(info.as_deref().map(|info| &info.capabilities), capability)
    }

    fn require(&self, capability: Capability) -> Result<(), AskError> {
        if self.supports(capability) {
            Ok(())
        } else {
            Err(AskError::Unsupported { capability })
        }
    }

    async fn ask(&self, request: ServerRequest) -> Result<ClientResult, AskError> {
        let options = PeerRequestOptions::with_timeout(self.timeout);
        let handle = self
            .peer
            .send_request_with_option(request, options)
            .await
            .map_err(|error| self.failure(error))?;
        handle
            .await_response()
            .await
            .map_err(|error| self.failure(error))
    }

    fn failure(&self, error: ServiceError) -> AskError {
        match error {
            ServiceError::Timeout { .. } => AskError::TimedOut {
                seconds: self.timeout.as_secs(),
            },
            ServiceError::McpError(error) => AskError::Refused(error.message.into_owned()),
            other => AskError::Transport(other.to_string()),
        }
    }
}

impl ClientHandler for PeerAsker {
    fn can(&self, capability: Capability) -> bool {
        self.supports(capability)
    }

    fn list_roots(&self) -> BoxFuture<'_, Result<Vec<Root>, AskError>> {
        Box::pin(async move {
            self.require(Capability::Roots)?;
            match self
                .ask(ServerRequest::ListRootsRequest(ListRootsRequest::default()))
                .await?
            {
                ClientResult::ListRootsResult(result) => Ok(result
                    .roots
                    .into_iter()
                    .map(|root| Root {
                        uri: root.uri,
                        name: root.name,
                    })
                    .collect()),
                other => Err(AskError::BadAnswer(format!(
                    "expected the client's roots, got {other:?}"
                ))),
            }
        })
    }

    fn elicit<'a>(
        &'a self,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, AskError>> {
        Box::pin(async move {
            self.require(request.capability())?;
            let params = elicit_params(request)?;
            let answer = self
                .ask(ServerRequest::ElicitRequest(
                    rmcp::model::ElicitRequest::new(params),
                ))
                .await?;
            match answer {
                ClientResult::ElicitResult(result) => Ok(reply_of(result)),
                other => Err(AskError::BadAnswer(format!(
                    "expected an elicitation result, got {other:?}"
                ))),
            }
        })
    }

    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, AskError>> {
        Box::pin(async move {
            self.require(Capability::Sampling)?;
            let params = sample_params(request)?;
            let answer = self
                .ask(ServerRequest::CreateMessageRequest(
                    CreateMessageRequest::new(params),
                ))
                .await?;
            match answer {
                ClientResult::CreateMessageResult(result) => sampled_of(*result),
                other => Err(AskError::BadAnswer(format!(
                    "expected a sampling result, got {other:?}"
                ))),
            }
        })
    }
}

/// The `elicitation/create` parameters of a question.
pub(crate) fn elicit_params(request: &Elicitation) -> Result<ElicitRequestParams, AskError> {
    Ok(match request {
        Elicitation::Form {
            message,
            requested_schema,
        } => {
            let schema: ElicitationSchema = serde_json::from_value(requested_schema.clone())
                .map_err(|error| {
                    AskError::BadForm(switchboard_core::ask::FormError {
                        type_name: "the requested schema".to_owned(),
                        reason: error.to_string(),
                    })
                })?;
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message.clone(),
                requested_schema: schema,
            }
        }
        Elicitation::Url {
            message,
            url,
            elicitation_id,
        } => ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: message.clone(),
            url: url.clone(),
            elicitation_id: elicitation_id.clone(),
        },
    })
}

/// A client's answer as the tool sees it.
pub(crate) fn reply_of(result: ElicitResult) -> ElicitReply {
    ElicitReply {
        action: match result.action {
            ElicitationAction::Accept => ElicitAction::Accept,
            ElicitationAction::Decline => ElicitAction::Decline,
            // Cancel, and any action a later revision adds: the person did not answer.
            _ => ElicitAction::Cancel,
        },
        content: result.content,
    }
}

/// The `sampling/createMessage` parameters of a request, through their wire form.
pub(crate) fn sample_params(
    request: &SampleRequest,
) -> Result<CreateMessageRequestParams, AskError> {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|message| {
            json!({
                "role": match message.role {
                    SampleRole::User => "user",
                    SampleRole::Assistant => "assistant",
                },
                "content": content_json(&message.content),
            })
        })
        .collect();
    let mut params = json!({"messages": messages, "maxTokens": request.max_tokens});
    if let Some(prompt) = &request.system_prompt {
        params["systemPrompt"] = json!(prompt);
    }
    if let Some(temperature) = request.temperature {
        params["temperature"] = json!(temperature);
    }
    if !request.stop_sequences.is_empty() {
        params["stopSequences"] = json!(request.stop_sequences);
    }
    if !request.model_hints.is_empty() {
        let hints: Vec<Value> = request
            .model_hints
            .iter()
            .map(|name| json!({ "name": name }))
            .collect();
        params["modelPreferences"] = json!({ "hints": hints });
    }
    serde_json::from_value(params).map_err(|error| {
        AskError::Transport(format!("could not write the sampling request: {error}"))
    })
}

fn content_json(content: &SampleContent) -> Value {
    match content {
        SampleContent::Text { text } => json!({"type": "text", "text": text}),
        SampleContent::Image { data, mime_type } => {
            json!({"type": "image", "data": data, "mimeType": mime_type})
        }
        SampleContent::Audio { data, mime_type } => {
            json!({"type": "audio", "data": data, "mimeType": mime_type})
        }
    }
}

/// The model's answer as the tool sees it: its first text, image or audio block.
pub(crate) fn sampled_of(result: CreateMessageResult) -> Result<Sampled, AskError> {
    let role = match result.message.role {
        Role::Assistant => SampleRole::Assistant,
        Role::User => SampleRole::User,
    };
    let content = result
        .message
        .content
        .into_vec()
        .into_iter()
        .find_map(|block| match block {
            SamplingMessageContentBlock::Text(text) => Some(SampleContent::text(text.text)),
            SamplingMessageContentBlock::Image(image) => Some(SampleContent::Image {
                data: image.data,
                mime_type: image.mime_type,
            }),
            SamplingMessageContentBlock::Audio(audio) => Some(SampleContent::Audio {
                data: audio.data,
                mime_type: audio.mime_type,
            }),
            _ => None,
        })
        .ok_or_else(|| {
            AskError::BadAnswer("the model's answer holds no text, image or audio".to_owned())
        })?;
    Ok(Sampled {
        role,
        content,
        model: result.model,
        stop_reason: result.stop_reason,
    })
}

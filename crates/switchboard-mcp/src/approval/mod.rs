//! Approvals over MCP: an agent's mutation becomes a proposal, and the human at the client
//! decides on it through the protocol's own question mechanism, elicitation.
//!
//! An agent may not run an `execute` or `restricted` tool. When the identity allows it
//! ([`Identity::approve_by_elicitation`], off by default) and the client can show a form to
//! its user (it declared the `elicitation` capability, form mode), such a call is stored as a
//! proposal (`ToolRegistry::propose`: every check up to the mutation context, one audit record)
//! and the human is asked to approve or reject it:
//!
//! - **2026-07-28**: the call answers `input_required` with one elicitation request and a
//!   sealed `requestState` ([`state`]); the client asks its user and retries the call with the
//!   answer and the state. The retry opens the state (or is refused with `-32602`, nothing
//!   decided) and decides.
//! - **2025-06-18 and 2025-11-25**: the server sends `elicitation/create` while the call waits
//!   (at most [`INLINE_TIMEOUT`]), then decides.
//!
//! Deciding: approve runs the tool once through `ToolRegistry::approve`, and the call answers
//! its result (with `_meta` naming the proposal and the approver); reject closes the proposal
//! with the feedback through `ToolRegistry::reject` and answers `isError` (`proposal_closed`,
//! status `rejected`); declining, cancelling, or an answer that never comes leaves the proposal
//! pending and answers `isError` with `approval_required` and its id, for the CLI or the API.
//!
//! **Who approves.** The approver is the identity's own user, as a human (initiator `human`,
//! no agent type), in the same session: the elicitation is answered by the person at the
//! client, never by the model, which only ever sees the call's final result. The registry's
//! rules still hold: the user must hold the tool's permission (otherwise the call is not
//! turned into a question at all, and goes down the ordinary path), and a restricted tool
//! runs only when the form's `confirm` box is ticked. The server cannot see whether a client
//! really shows the form to a person; that is why the operator turns this on per identity.
//!
//! Everything else, including a client that cannot elicit, goes down the ordinary call path
//! unchanged, where the registry refuses the agent's mutation (or, if configured to, stores it
//! as a proposal and answers `approval_required`).

mod form;
mod state;

pub use state::{StateKey, StateKeyError};
pub(crate) use state::{named_binding, push_field, push_identity, request_binding};

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest,
        ElicitRequestParams, ElicitResult, InputRequest, InputRequests, InputRequiredResult,
        ProtocolVersion,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use switchboard_core::{CallContext, Initiator, InvokeError, ProposalId, ask::Capability};
use switchboard_registry::{Approved, Proposal, ToolRegistry};

use crate::{identity::Identity, result};

/// How long the server waits for the answer to an `elicitation/create` (2025 revisions).
pub(crate) const INLINE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The `_meta` key of a decided call's result naming its proposal.
const PROPOSAL_META_KEY: &str = "switchboard/proposal_id";

/// The `_meta` key of an approved call's result naming who approved it.
const APPROVER_META_KEY: &str = "switchboard/approved_by";

/// How a client can be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    /// In an `input_required` result (2026-07-28).
    InputRequired,
    /// With `elicitation/create` while the call waits (2025-06-18, 2025-11-25).
    Inline,
}

/// Whether a call may concern approvals at all: a retry carrying a `requestState`, or a call
/// by an agent whose identity allows approval by elicitation. Two field reads; every other
/// call goes straight to the ordinary path.
pub(crate) fn concerns(identity: &Identity, request: &CallToolRequestParams) -> bool {
    request.request_state.is_some()
        || (identity.approve_by_elicitation && identity.initiator == Initiator::Agent)
}

/// Handles a call [`concerns`] let through: the answer, or `None` for the ordinary path.
/// `call_context` is the call's own (the agent's).
pub(crate) async fn handle(
    registry: &ToolRegistry,
    identity: &Identity,
    state_key: &StateKey,
    request: &CallToolRequestParams,
    call_context: &CallContext,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    if let Some(sealed) = request.request_state.as_deref() {
        return Some(resume(registry, identity, state_key, request, sealed, call_context).await);
    }
    if !identity.approve_by_elicitation || identity.initiator != Initiator::Agent {
        return None;
    }
    let channel = channel(context)?;
    let descriptor = registry.find(&request.name)?;
    if !descriptor.category.mutates()
        || !registry
            .permissions()
            .allows(&identity.roles, &descriptor.permission)
    {
        return None;
    }
    let params = Value::Object(request.arguments.clone().unwrap_or_default());
    let proposal = match registry
        .propose(&request.name, params, call_context, None)
        .await
    {
        Ok(proposal) => proposal,
        Err(error) => return Some(failure(error).map(Into::into)),
    };
    tracing::info!(
        proposal_id = %proposal.id,
        tool = %proposal.tool,
        ?channel,
        "asking the MCP client's user to approve a proposal"
    );
    let user = identity.user.as_deref().unwrap_or_default();
    let question = form::question(&proposal, descriptor.category, user);
    Some(match channel {
        Channel::InputRequired => Ok(ask_in_result(
            identity, state_key, request, &proposal, question,
        )),
        Channel::Inline => ask_inline(registry, &proposal, question, call_context, context).await,
    })
}

/// How the client can be asked, if it can: it must do form elicitation, on a revision that
/// has elicitation.
fn channel(context: &RequestContext<RoleServer>) -> Option<Channel> {
    let capabilities = context.client_capabilities();
    if !crate::asking::supports(capabilities.as_ref(), Capability::ElicitationForm) {
        return None;
    }
    match context.protocol_version()? {
        version if version >= ProtocolVersion::V_2026_07_28 => Some(Channel::InputRequired),
        version if version >= ProtocolVersion::V_2025_06_18 => Some(Channel::Inline),
        _ => None,
    }
}

/// The `input_required` result asking the question, with the sealed state.
fn ask_in_result(
    identity: &Identity,
    state_key: &StateKey,
    request: &CallToolRequestParams,
    proposal: &Proposal,
    question: ElicitRequestParams,
) -> CallToolResponse {
    let binding = state::Binding::of(identity, request);
    let sealed = match state::seal(state_key, proposal, &binding) {
        Ok(sealed) => sealed,
        Err(error) => {
            tracing::error!(%error, proposal_id = %proposal.id, "could not seal an approval state");
            return pending_result(proposal).into();
        }
    };
    let mut requests = InputRequests::new();
    requests.insert(
        form::INPUT_KEY.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(question)),
    );
    InputRequiredResult::new(Some(requests), Some(sealed)).into()
}

/// Asks with `elicitation/create` and decides on the answer. Anything but an answer (a
/// timeout, a client error, a malformed answer) leaves the proposal pending.
async fn ask_inline(
    registry: &ToolRegistry,
    proposal: &Proposal,
    question: ElicitRequestParams,
    call_context: &CallContext,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let asking = context
        .peer
        .create_elicitation_with_timeout(question, Some(INLINE_TIMEOUT));
    let answered = tokio::select! {
        answered = asking => answered,
        () = context.ct.cancelled() => {
            tracing::info!(proposal_id = %proposal.id, "approval question cancelled by the client");
            return Err(ErrorData::internal_error("the request was cancelled", None));
        }
    };
    let answer = match answered {
        Ok(result) => form::read(&result).unwrap_or_else(|problem| {
            tracing::warn!(proposal_id = %proposal.id, %problem, "unreadable approval answer");
            form::Answer::Undecided
        }),
        Err(error) => {
            tracing::warn!(proposal_id = %proposal.id, %error, "the approval question got no answer");
            form::Answer::Undecided
        }
    };
    decide(registry, &proposal.id, answer, call_context)
        .await
        .map(Into::into)
}

/// The retry of a call that answered `input_required`: opens its state and decides.
async fn resume(
    registry: &ToolRegistry,
    identity: &Identity,
    state_key: &StateKey,
    request: &CallToolRequestParams,
    sealed: &str,
    call_context: &CallContext,
) -> Result<CallToolResponse, ErrorData> {
    let binding = state::Binding::of(identity, request);
    let proposal_id = match state::open(state_key, sealed, &binding) {
        Ok(proposal_id) if identity.approve_by_elicitation => proposal_id,
        Ok(proposal_id) => {
            tracing::warn!(%proposal_id, "approval state refused: approval by elicitation is off");
            return Err(invalid_state());
        }
        Err(refused) => {
            tracing::warn!(reason = %refused, tool = %request.name, "approval state refused");
            return Err(invalid_state());
        }
    };
    let answer = request
        .input_responses
        .as_ref()
        .and_then(|responses| responses.get(form::INPUT_KEY))
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!(
                    "the retry carries no `{}` input response; answer the elicitation request \
                     of the `input_required` result, then retry with its requestState",
                    form::INPUT_KEY
                ),
                None,
            )
        })?;
    let answer = serde_json::from_value::<ElicitResult>(answer.clone()).map_err(|error| {
        ErrorData::invalid_params(
            format!("the approval answer is no elicitation result: {error}"),
            None,
        )
    })?;
    let answer = form::read(&answer).map_err(|problem| ErrorData::invalid_params(problem, None))?;
    decide(registry, &proposal_id, answer, call_context)
        .await
        .map(Into::into)
}

/// One message for every refused state, so a client learns nothing about why.
fn invalid_state() -> ErrorData {
    ErrorData::invalid_params(
        "the requestState is not valid for this request (altered, expired, issued by another \
         server process, or for another identity or call); nothing was decided. Call the tool \
         again without it.",
        None,
    )
}

/// Applies the human's answer to the proposal.
async fn decide(
    registry: &ToolRegistry,
    proposal_id: &ProposalId,
    answer: form::Answer,
    call_context: &CallContext,
) -> Result<CallToolResult, ErrorData> {
    match answer {
        form::Answer::Approve { confirmed } => {
            let approver = approver(call_context, confirmed);
            match registry.approve(proposal_id, &approver).await {
                Ok(approved) => Ok(approved_result(registry, approved)),
                Err(error) => failure(error),
            }
        }
        form::Answer::Reject { feedback } => {
            let approver = approver(call_context, false);
            match registry.reject(proposal_id, &feedback, &approver).await {
                Ok(proposal) => rejected_result(&proposal, &feedback),
                Err(error) => failure(error),
            }
        }
        form::Answer::Undecided => match registry.proposal(proposal_id, call_context).await {
            Ok(proposal) if proposal.status.is_pending() => Ok(pending_result(&proposal)),
            Ok(proposal) => failure(InvokeError::ProposalClosed {
                proposal_id: proposal.id.clone(),
                status: proposal.status.as_str(),
            }),
            Err(error) => failure(error),
        },
    }
}

/// The human behind the call: the same user, roles and session, as a human, not an agent.
fn approver(call_context: &CallContext, confirmed: bool) -> CallContext {
    let mut approver = call_context.clone();
    approver.initiator = Initiator::Human;
    approver.confirmed = confirmed;
    approver.agent_type = None;
    approver.idempotency_key = None;
    approver
}

/// The tool's result, with `_meta` naming the proposal and the approver.
fn approved_result(registry: &ToolRegistry, approved: Approved) -> CallToolResult {
    let tool = approved.proposal.tool.clone();
    let outcome = result::call_result(Ok(approved.output), || {
        registry
            .find(&tool)
            .is_some_and(|descriptor| descriptor.returns_content())
    });
    let mut answer = match outcome {
        Ok(answer) => answer,
        // Only an unknown tool is a protocol error, and an `Ok` output has a known tool.
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.message)]),
    };
    let mut meta = answer.meta.take().unwrap_or_default();
    meta.0
        .insert(PROPOSAL_META_KEY.to_owned(), json!(approved.proposal.id));
    if let switchboard_registry::ProposalStatus::Approved { by, .. } = &approved.proposal.status {
        meta.0.insert(APPROVER_META_KEY.to_owned(), json!(by));
    }
    answer.meta = Some(meta);
    answer
}

/// `isError`: `proposal_closed` (status `rejected`), with the feedback.
fn rejected_result(proposal: &Proposal, feedback: &str) -> Result<CallToolResult, ErrorData> {
    let mut answer = failure(InvokeError::ProposalClosed {
        proposal_id: proposal.id.clone(),
        status: proposal.status.as_str(),
    })?;
    answer.content = vec![ContentBlock::text(format!(
        "`{tool}` was not run: its proposal `{id}` was rejected by the user. Feedback: {feedback}",
        tool = proposal.tool,
        id = proposal.id,
    ))];
    if let Some(Value::Object(error)) = answer
        .meta
        .as_mut()
        .and_then(|meta| meta.get_mut(result::ERROR_META_KEY))
    {
        error.insert("feedback".to_owned(), json!(feedback));
    }
    Ok(answer)
}

/// `isError`: `approval_required`, naming the still pending proposal.
fn pending_result(proposal: &Proposal) -> CallToolResult {
    let error = InvokeError::ApprovalRequired {
        tool: proposal.tool.to_string(),
        proposal_id: proposal.id.clone(),
        expires_at: proposal.expires_at.to_string(),
        summary: proposal.summary.clone(),
    };
    failure(error)
        .unwrap_or_else(|error| CallToolResult::error(vec![ContentBlock::text(error.message)]))
}

/// A refusal or failure as a tool result (`isError`), as the ordinary path answers it.
fn failure(error: InvokeError) -> Result<CallToolResult, ErrorData> {
    result::call_result(Err(error), || false)
}

//! The registry's prompts over MCP: `prompts/list`, `prompts/get` and `completion/complete`.
//!
//! A caller is offered the prompts its roles grant ([`ToolRegistry::prompts_permitted`]),
//! sorted by name and paginated like `tools/list` (the same `offset:N` cursors). A get is
//! [`ToolRegistry::render_prompt`] as the caller, whose checks decide the answer; the
//! rendered messages are already in MCP's shape (text, image, audio, embedded resource). As
//! the spec says, an unknown prompt and a missing or invalid argument are `-32602` (so is a
//! prompt the caller's roles do not grant, which its list does not show either), and a body
//! that fails is `-32603`; the error's `data` carries the stable `kind`.
//!
//! A prompt's body may ask the client (`ctx.elicit`, `ctx.sample`), as a tool may: through the
//! same asker, as requests to the client on 2025 revisions and as `input_required` results on
//! 2026-07-28 ([`get_asking`]); a question the client did not declare the capability for is
//! `-32021` on 2026-07-28 and a render failure before.
//!
//! Completion answers a prompt's argument (`ref/prompt`) with what the registry suggests; a
//! resource template's variable (`ref/resource`) gets an empty completion, since read tools
//! declare no completer.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
        GetPromptResponse, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
        PromptMessage, Reference,
    },
    service::RequestContext,
};
use serde_json::json;
use switchboard_core::{
    CallContext, PromptDescriptor, PromptError, Role,
    ask::{ClientHandler, ClientLink},
};
use switchboard_registry::ToolRegistry;

use crate::{
    approval::StateKey,
    asking,
    identity::Identity,
    tools::{CURSOR_PREFIX, PAGE_SIZE, parse_cursor},
};

/// Whether `registry` serves any prompt to `roles` (the server then declares the `prompts`
/// and `completions` capabilities).
pub(crate) fn any(registry: &ToolRegistry, roles: &[Role]) -> bool {
    !registry.prompts_permitted(roles).is_empty()
}

/// The MCP form of a prompt.
fn prompt(descriptor: &PromptDescriptor) -> Prompt {
    let arguments = descriptor
        .arguments
        .iter()
        .map(|argument| {
            let listed = PromptArgument::new(&argument.name).with_required(argument.required);
            match &argument.description {
                Some(description) => listed.with_description(description),
                None => listed,
            }
        })
        .collect();
    let listed = Prompt::new(
        &descriptor.name,
        Some(&descriptor.description),
        Some(arguments),
    );
    match &descriptor.title {
        Some(title) => listed.with_title(title),
        None => listed,
    }
}

/// One page of the prompts `roles` may get.
pub(crate) fn list(
    registry: &ToolRegistry,
    roles: &[Role],
    cursor: Option<&str>,
) -> Result<ListPromptsResult, ErrorData> {
    let offered = registry.prompts_permitted(roles);
    let start = match cursor {
        None => 0,
        Some(cursor) => parse_cursor(cursor)
            .filter(|offset| *offset < offered.len())
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!(
                        "invalid cursor `{cursor}`: pass back a `nextCursor` from an earlier \
                         prompts/list answer, or none for the first page"
                    ),
                    None,
                )
            })?,
    };
    let end = start.saturating_add(PAGE_SIZE).min(offered.len());
    let prompts = offered
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|descriptor| prompt(descriptor))
        .collect();
    let mut result = ListPromptsResult::with_all_items(prompts);
    result.next_cursor = (end < offered.len()).then(|| format!("{CURSOR_PREFIX}{end}"));
    Ok(result)
}

/// Prompt `request.name`, rendered for the caller of `call_context`, whose body may ask the
/// client through the same asker a `tools/call` gets: on 2026-07-28 in `input_required`
/// results (its questions' answers and `requestState` come with the next `prompts/get`), on
/// earlier revisions as requests to the client while the get waits.
pub(crate) async fn get_asking(
    registry: &ToolRegistry,
    state_key: &StateKey,
    identity: &Identity,
    request: GetPromptRequestParams,
    mut call_context: CallContext,
    context: &RequestContext<RoleServer>,
) -> Result<GetPromptResponse, ErrorData> {
    if !asking::asks_in_rounds(context) {
        call_context.client = asking::inline_link(context);
        return get(registry, request, &call_context).await.map(Into::into);
    }
    let rounds = asking::RoundAsker::for_prompt(
        state_key,
        identity,
        &request,
        context.client_capabilities(),
    )
    .map(Arc::new)
    .ok_or_else(|| {
        ErrorData::invalid_params(
            format!(
                "the requestState of this `prompts/get` of `{}` does not open: it was altered, \
                 it expired, or it belongs to another prompt, arguments or caller; get the \
                 prompt again without it",
                request.name
            ),
            Some(json!({"kind": "invalid_request_state"})),
        )
    })?;
    call_context.client = ClientLink::new(Arc::clone(&rounds) as Arc<dyn ClientHandler>);
    let name = request.name.clone();
    let rendered = get(registry, request, &call_context).await;
    if let Some(capability) = rounds.missing_capability()
        && rendered.is_err()
    {
        return Err(asking::missing_capability_error(capability, &name));
    }
    if let Some(asking) = rounds.input_required(state_key) {
        return asking.map(Into::into).map_err(|error| {
            tracing::error!(%error, prompt = %name, "could not seal the questions' requestState");
            ErrorData::internal_error("could not seal the requestState", None)
        });
    }
    rendered.map(Into::into)
}

/// Prompt `request.name`, rendered for the caller of `context`.
pub(crate) async fn get(
    registry: &ToolRegistry,
    request: GetPromptRequestParams,
    context: &CallContext,
) -> Result<GetPromptResult, ErrorData> {
    let arguments = request.arguments.unwrap_or_default();
    let rendered = registry
        .render_prompt(&request.name, &arguments, context)
        .await
        .map_err(error_data)?;
    let messages: Vec<PromptMessage> = serde_json::to_value(&rendered.messages)
        .and_then(serde_json::from_value)
        .map_err(|error| {
            ErrorData::internal_error(
                format!(
                    "`{}` rendered messages MCP cannot carry: {error}",
                    request.name
                ),
                None,
            )
        })?;
    let result = GetPromptResult::new(messages);
    Ok(match rendered.description {
        Some(description) => result.with_description(description),
        None => result,
    })
}

/// Suggestions for the argument `request.argument` of the prompt `request.ref` names.
pub(crate) fn complete(
    registry: &ToolRegistry,
    request: &CompleteRequestParams,
    context: &CallContext,
) -> Result<CompleteResult, ErrorData> {
    let values = match &request.r#ref {
        Reference::Prompt(reference) => registry
            .complete_prompt_argument(
                &reference.name,
                &request.argument.name,
                &request.argument.value,
                context,
            )
            .map_err(error_data)?,
        // A resource template's variable (`ref/resource`), or a reference of a later revision.
        _ => Vec::new(),
    };
    let completion = CompletionInfo::with_all_values(values)
        .map_err(|reason| ErrorData::internal_error(reason, None))?;
    Ok(CompleteResult::new(completion))
}

/// The JSON-RPC error of a refused or failed prompt.
fn error_data(error: PromptError) -> ErrorData {
    let data = Some(json!({"kind": error.kind()}));
    match error {
        PromptError::RenderFailed { .. } | PromptError::MissingContext { .. } => {
            ErrorData::internal_error(error.to_string(), data)
        }
        _ => ErrorData::invalid_params(error.to_string(), data),
    }
}

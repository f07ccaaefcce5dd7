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
//! Completion answers a prompt's argument (`ref/prompt`) with what the registry suggests; a
//! resource template's variable (`ref/resource`) gets an empty completion, since read tools
//! declare no completer.

use rmcp::{
    ErrorData,
    model::{
        CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
        GetPromptResult, ListPromptsResult, Prompt, PromptArgument, PromptMessage, Reference,
    },
};
use serde_json::json;
use switchboard_core::{CallContext, PromptDescriptor, PromptError, Role};
use switchboard_registry::ToolRegistry;

use crate::tools::{CURSOR_PREFIX, PAGE_SIZE, parse_cursor};

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

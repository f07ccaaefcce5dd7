//! A mounted server's tool as a run-time tool of the registry: its descriptor (name, category,
//! permission, schemas) and its body, a call to the server.
//!
//! The registry validates params against the server's input schema before the body runs, so a
//! call that the schema refuses never leaves the process; `org_id`, scope, category, permission,
//! idempotency and proposals are the registry's as for any tool.
//!
//! **Categories.** The configuration's category (the tool's override, else the server's) is
//! the floor; the server's annotations are hints from a party we do not trust, so they may only
//! make a tool *stricter*: `destructiveHint` makes it restricted, and without a configured
//! category `readOnlyHint` makes it read and anything else execute.
//!
//! **Results.** A tool that declares an `outputSchema` answers its `structuredContent`, checked
//! against that schema by the caller's transport as for native tools. Any other tool answers
//! its content blocks as [`ToolContent`], so MCP clients get them as they were. `isError`
//! becomes a [`ToolError`] with code `mounted_tool_error` and the blocks' text.

use std::{borrow::Cow, sync::Arc, time::Duration};

use rmcp::{
    RoleClient,
    model::{CallToolRequestParams, CallToolResult, Tool},
    service::Peer,
};
use serde_json::Value;
use switchboard_core::{
    BoxFuture, Category, ToolContent, ToolContext, ToolDescriptor, ToolError, ToolOrigin,
    schema::schema_of,
};
use switchboard_registry::RuntimeTool;

use crate::config::ServerConfig;

/// The code of the error a mounted tool answers with `isError`.
pub const MOUNTED_TOOL_ERROR: &str = "mounted_tool_error";

/// The code of the error of a call the server did not answer in time.
pub const MOUNTED_TOOL_TIMEOUT: &str = "mounted_tool_timeout";

/// The code of the error of a call the server could not be asked, or did not answer.
pub const MOUNTED_SERVER_UNAVAILABLE: &str = "mounted_server_unavailable";

/// The registry's name of `server`'s tool `tool`.
pub fn mounted_name(server: &str, tool: &str) -> String {
    format!("{server}_{tool}")
}

/// The category a mounted tool gets: the configured one, made stricter by the annotations.
pub(crate) fn category_of(configured: Option<Category>, tool: &Tool) -> Category {
    let hints = tool.annotations.as_ref();
    let destructive = hints.and_then(|hints| hints.destructive_hint) == Some(true);
    let read_only = hints.and_then(|hints| hints.read_only_hint) == Some(true);
    if destructive {
        // A hint may only tighten what the configuration says, and this is the tightest.
        return Category::Restricted;
    }
    configured.unwrap_or(if read_only {
        Category::Read
    } else {
        Category::Execute
    })
}

/// The descriptor of `server`'s `tool` in the registry.
pub(crate) fn descriptor(server: &ServerConfig, tool: &Tool) -> ToolDescriptor {
    let overrides = server.tools.get(tool.name.as_ref());
    let configured = overrides.and_then(|tool| tool.category).or(server.category);
    let permission = overrides
        .and_then(|tool| tool.permission.clone())
        .unwrap_or_else(|| server.permission.clone());
    let output_schema = match &tool.output_schema {
        Some(schema) => Value::Object((**schema).clone()),
        None => schema_of::<ToolContent>().to_value(),
    };
    ToolDescriptor {
        name: Cow::Owned(mounted_name(&server.id, &tool.name)),
        title: tool
            .title
            .clone()
            .or_else(|| tool.annotations.as_ref()?.title.clone())
            .map(Cow::Owned),
        domain: Cow::Owned(server.id.clone()),
        category: category_of(configured, tool),
        permission: Cow::Owned(permission),
        description: Cow::Owned(tool.description.as_deref().unwrap_or_default().to_owned()),
        intents: Vec::new(),
        timeout: Some(server.call_timeout),
        input_schema: Arc::new(Value::Object((*tool.input_schema).clone())),
        output_schema: Some(Arc::new(output_schema)),
        origin: ToolOrigin::Runtime {
            source: format!("mounted MCP server `{}`", server.id),
        },
    }
}

/// A mounted tool's body: the call, made to the server with the server's own credential.
pub(crate) struct MountedTool {
    /// The server's id, for messages.
    pub(crate) server: String,
    /// The server's name for the tool.
    pub(crate) remote_name: String,
    /// The client connection to the server.
    pub(crate) peer: Peer<RoleClient>,
    /// How long a call may take.
    pub(crate) call_timeout: Duration,
    /// Whether the tool declares an output schema (answers `structuredContent`).
    pub(crate) structured: bool,
}

impl RuntimeTool for MountedTool {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let arguments = match params {
                Value::Object(arguments) => arguments,
                _ => serde_json::Map::new(),
            };
            let request =
                CallToolRequestParams::new(self.remote_name.clone()).with_arguments(arguments);
            let answer = tokio::time::timeout(self.call_timeout, self.peer.call_tool(request));
            match answer.await {
                Err(_) => Err(ToolError::new(
                    MOUNTED_TOOL_TIMEOUT,
                    format!(
                        "the MCP server `{}` did not answer `{}` within {:?}; it may or may not \
                         have run",
                        self.server, self.remote_name, self.call_timeout
                    ),
                )),
                Ok(Err(error)) => Err(ToolError::new(
                    MOUNTED_SERVER_UNAVAILABLE,
                    format!(
                        "the MCP server `{}` could not run `{}`: {error}",
                        self.server, self.remote_name
                    ),
                )),
                Ok(Ok(result)) => {
                    output_of(&self.server, &self.remote_name, result, self.structured)
                }
            }
        })
    }
}

/// A call's result as the tool's output, or its error.
fn output_of(
    server: &str,
    tool: &str,
    result: CallToolResult,
    structured: bool,
) -> Result<Value, ToolError> {
    if result.is_error == Some(true) {
        let text: Vec<&str> = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
            .collect();
        let message = if text.is_empty() {
            format!("`{tool}` of the MCP server `{server}` failed and said nothing more")
        } else {
            text.join("\n")
        };
        return Err(ToolError::new(MOUNTED_TOOL_ERROR, message));
    }
    if structured {
        return result.structured_content.ok_or_else(|| {
            ToolError::new(
                MOUNTED_TOOL_ERROR,
                format!(
                    "`{tool}` of the MCP server `{server}` declares an output schema but \
                     answered no structuredContent"
                ),
            )
        });
    }
    let content = serde_json::to_value(&result.content)
        .and_then(|blocks| serde_json::from_value(serde_json::json!({"content": blocks})))
        .map_err(|error| {
            ToolError::new(
                MOUNTED_TOOL_ERROR,
                format!("`{tool}` of the MCP server `{server}` answered content we cannot pass on: {error}"),
            )
        })?;
    let content: ToolContent = content;
    serde_json::to_value(content)
        .map_err(|error| ToolError::new(MOUNTED_TOOL_ERROR, error.to_string()))
}

#[cfg(test)]
mod tests;

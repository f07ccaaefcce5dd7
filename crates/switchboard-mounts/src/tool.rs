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
//! **Progress, logs and cancellation.** A call whose caller wants progress routes the server's
//! `notifications/progress` for it to the caller ([`crate::progress`]); every call registers
//! its span for the server's `notifications/message` while it is in flight ([`crate::logs`]
//! says which calls a message goes to); a call dropped before its answer sends the server
//! `notifications/cancelled`.
//!
//! **Results.** A tool that declares an `outputSchema` answers its `structuredContent`, checked
//! against that schema by the caller's transport as for native tools. Any other tool answers
//! its content blocks as [`ToolContent`], so MCP clients get them as they were. `isError`
//! becomes a [`ToolError`] with code `mounted_tool_error` and the blocks' text.

use std::{borrow::Cow, sync::Arc, time::Duration};

use rmcp::{
    RoleClient, ServiceError,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
        CancelledNotificationParam, ClientRequest, RequestId, RequestParamsMeta as _, ServerResult,
        Tool,
    },
    service::{Peer, PeerRequestOptions},
};
use serde_json::Value;
use switchboard_core::{
    BoxFuture, Category, OrgId, ProgressNotifier, ToolContent, ToolContext, ToolDescriptor,
    ToolError, ToolOrigin, schema::schema_of,
};
use switchboard_registry::{Exposure, RuntimeTool, RuntimeToolSpec};
use tokio::sync::watch;

use crate::{
    config::ServerConfig,
    gate::Admission,
    health::{Health, Unavailable, connection_after},
    progress::CallRoutes,
};

/// The code of the error a mounted tool answers with `isError`.
pub const MOUNTED_TOOL_ERROR: &str = "mounted_tool_error";

/// The code of the error of a call the server did not answer in time.
pub const MOUNTED_TOOL_TIMEOUT: &str = "mounted_tool_timeout";

/// The code of the error of a call the server could not be asked, or did not answer.
pub const MOUNTED_SERVER_UNAVAILABLE: &str = "mounted_server_unavailable";

/// The code of the error of a call whose connection ended after it was sent, and that is not
/// sent again: it may or may not have run.
pub const MOUNTED_OUTCOME_UNKNOWN: &str = "mounted_outcome_unknown";

/// The code of the error of a call of a withheld tool: one quarantined since its definition
/// changed, until a person accepts the change.
pub const MOUNTED_TOOL_WITHHELD: &str = "mounted_tool_withheld";

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
        tags: Vec::new(),
        timeout: Some(server.call_timeout),
        input_schema: Arc::new(Value::Object((*tool.input_schema).clone())),
        output_schema: Some(Arc::new(output_schema)),
        tasks: switchboard_core::TaskSupport::Forbidden,
        asks_before_task: false,
        origin: ToolOrigin::Runtime {
            source: format!("mounted MCP server `{}`", server.id),
        },
    }
}

/// A tool as it is registered: its descriptor, and whether the gate exposed it.
pub(crate) type Registered = (ToolDescriptor, Admission);

/// The run-time tool of `server`'s `tool`, as `admission` says: an exposed tool calls the
/// server through `health`, listed unless the server is lazy; a withheld one is unlisted and
/// answers every call with why.
pub(crate) fn spec(
    server: &ServerConfig,
    tool: &Tool,
    admission: &Admission,
    health: &watch::Receiver<Health>,
    progress: &CallRoutes,
) -> RuntimeToolSpec {
    let descriptor = descriptor(server, tool);
    match admission {
        Admission::Exposed => RuntimeToolSpec {
            tool: Arc::new(MountedTool::new(
                server,
                tool,
                &descriptor,
                health.clone(),
                progress.clone(),
            )),
            descriptor,
            exposure: if server.lazy {
                Exposure::Unlisted
            } else {
                Exposure::Listed
            },
        },
        Admission::Withheld { reason } => RuntimeToolSpec {
            tool: Arc::new(WithheldTool {
                message: format!(
                    "`{}` of the mounted MCP server `{}` is withheld: {reason}",
                    tool.name, server.id
                ),
            }),
            descriptor,
            exposure: Exposure::Withheld,
        },
    }
}

/// The body of a tool the gate withholds: every call is refused, with why.
struct WithheldTool {
    message: String,
}

impl RuntimeTool for WithheldTool {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { Err(ToolError::new(MOUNTED_TOOL_WITHHELD, self.message.clone())) })
    }
}

/// A mounted tool's body: the call, made to the server with the server's own credential.
///
/// The connection comes from the server's [`Health`]: a call made while the server restarts
/// waits for the new connection (within the call's timeout). A call whose connection dies
/// under it is classified:
/// - **never delivered** (the request could not be sent): it is sent again on the next
///   connection;
/// - **delivered, outcome unknown** (sent, and the connection ended before the answer): it is
///   sent once more, on the next connection, only if the tool is a read tool or the caller gave
///   an idempotency key; otherwise it fails with `mounted_outcome_unknown`, saying that it may
///   or may not have run.
pub(crate) struct MountedTool {
    /// The server's id, for messages.
    server: String,
    /// The server's name for the tool.
    remote_name: String,
    /// The server's state and connection.
    health: watch::Receiver<Health>,
    /// How long a call may take, waiting for a connection included.
    call_timeout: Duration,
    /// Whether the tool declares an output schema (answers `structuredContent`).
    structured: bool,
    /// Whether the tool only reads (may be sent again when its outcome is unknown).
    read_only: bool,
    /// Where calls route their progress.
    progress: CallRoutes,
}

impl MountedTool {
    /// The body of `server`'s `tool`, described as `descriptor`, reaching it through `health`.
    pub(crate) fn new(
        server: &ServerConfig,
        tool: &Tool,
        descriptor: &ToolDescriptor,
        health: watch::Receiver<Health>,
        progress: CallRoutes,
    ) -> Self {
        Self {
            server: server.id.clone(),
            remote_name: tool.name.to_string(),
            health,
            call_timeout: server.call_timeout,
            structured: tool.output_schema.is_some(),
            read_only: descriptor.category == Category::Read,
            progress,
        }
    }

    fn error(&self, code: &'static str, why: impl std::fmt::Display) -> ToolError {
        ToolError::new(
            code,
            format!(
                "`{}` of the mounted MCP server `{}`: {why}",
                self.remote_name, self.server
            ),
        )
    }
}

impl RuntimeTool for MountedTool {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let arguments = match params {
                Value::Object(arguments) => arguments,
                _ => serde_json::Map::new(),
            };
            let may_resend = self.read_only || ctx.caller().idempotency_key.is_some();
            let deadline = tokio::time::Instant::now() + self.call_timeout;
            let mut health = self.health.clone();
            let mut after = 0;
            let mut resent = false;
            loop {
                let patience = deadline.saturating_duration_since(tokio::time::Instant::now());
                let (peer, generation) = connection_after(&mut health, after, patience)
                    .await
                    .map_err(|unavailable| match unavailable {
                        Unavailable::Down(why) => self.error(
                            MOUNTED_SERVER_UNAVAILABLE,
                            format!("the server is unavailable: {why}"),
                        ),
                        Unavailable::TimedOut { reason } => self.error(
                            MOUNTED_SERVER_UNAVAILABLE,
                            format!("no connection within {:?} ({reason})", self.call_timeout),
                        ),
                    })?;
                let request = CallToolRequestParams::new(self.remote_name.clone())
                    .with_arguments(arguments.clone());
                let notifier = ctx
                    .reports_progress()
                    .then(|| ctx.caller().progress.clone());
                let call = call_once(
                    &peer,
                    request,
                    &self.progress,
                    notifier,
                    ctx.caller().org_id.clone(),
                );
                let answer = tokio::time::timeout_at(deadline, call).await;
                match answer {
                    Ok(Ok(result)) => {
                        return output_of(&self.server, &self.remote_name, result, self.structured);
                    }
                    Err(_) => {
                        return Err(self
                            .error(
                                MOUNTED_TOOL_TIMEOUT,
                                format!(
                                    "no answer within {:?}; it may or may not have run",
                                    self.call_timeout
                                ),
                            )
                            .in_doubt());
                    }
                    // Never sent: nothing ran; send it on the next connection.
                    Ok(Err(ServiceError::TransportSend(_))) => after = generation,
                    Ok(Err(ServiceError::TransportClosed)) if may_resend && !resent => {
                        tracing::info!(server = %self.server, tool = %self.remote_name, "the connection ended mid-call; sending the call again on the next one");
                        resent = true;
                        after = generation;
                    }
                    Ok(Err(ServiceError::TransportClosed)) => {
                        let why = if resent {
                            "it was sent again, and that connection ended too"
                        } else {
                            "it is not sent again, as the tool is not read-only and the call \
                             has no idempotency key (give one to allow a retry)"
                        };
                        return Err(self
                            .error(
                                MOUNTED_OUTCOME_UNKNOWN,
                                format!(
                                    "the server's connection ended after the call was sent, so \
                                     it may or may not have run; {why}"
                                ),
                            )
                            .in_doubt());
                    }
                    Ok(Err(error)) => {
                        return Err(self.error(
                            MOUNTED_SERVER_UNAVAILABLE,
                            format!("the call failed: {error}"),
                        ));
                    }
                }
            }
        })
    }
}

/// Sends one `tools/call` on `peer` and waits for its answer, with its progress routed to
/// `notifier` and the server's log messages, while it runs, to the current span if the rule of
/// [`crate::logs`] admits `org`. The request's own `_meta` entries are sent as they are; when
/// the current span is traced, its `traceparent` is added to them (SEP-414), so the call's
/// trace goes on in the mounted server. Dropped before the answer (the caller cancelled, or the
/// call timed out), it tells the server with `notifications/cancelled`, so the server can stop
/// too.
pub(crate) async fn call_once(
    peer: &Peer<RoleClient>,
    mut request: CallToolRequestParams,
    routes: &CallRoutes,
    notifier: Option<ProgressNotifier>,
    org: OrgId,
) -> Result<CallToolResult, ServiceError> {
    let _listening = routes.logs().listen(org, tracing::Span::current());
    if let Some(traceparent) = switchboard_telemetry::traceparent::current() {
        request.set_traceparent(&traceparent);
    }
    let handle = peer
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(request)),
            PeerRequestOptions::no_options(),
        )
        .await?;
    let _route = notifier.map(|notifier| routes.route(handle.progress_token.clone(), notifier));
    let mut abandoned = Abandoned {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    abandoned.id = None;
    match answer? {
        ServerResult::CallToolResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A request whose answer is no longer awaited: dropped while armed, it sends the server
/// `notifications/cancelled` for it.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = "the caller no longer waits for the answer".to_owned();
            let cancelled =
                CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(reason)));
            let _ = peer.send_notification(cancelled.into()).await;
        });
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

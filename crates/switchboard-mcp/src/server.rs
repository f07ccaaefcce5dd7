//! [`McpServer`]: rmcp's [`ServerHandler`] over a [`ToolRegistry`], acting as one [`Identity`].
//!
//! Written without rmcp's tool macros because the tool list is the registry's, not a fixed set
//! of Rust functions. Each call gets a [`CallContext`](switchboard_core::CallContext) from the
//! identity, the session (the streamable-HTTP `mcp-session-id` header, else an id this handler
//! instance minted) and a correlation id (the request's `_meta.traceparent`, else a fresh one),
//! then goes through [`ToolRegistry::invoke`], which checks, runs and audits it.
//!
//! rmcp does not abort a handler when the client cancels: it only fires the request's
//! cancellation token. The call races that token and drops the `invoke` future when it fires,
//! which is how the registry's audit record ends as `cancelled`.

use serde_json::Value;
use switchboard_registry::ToolRegistry;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};

use crate::{identity::Identity, result, tools};

/// The name the server gives in `initialize`.
const SERVER_NAME: &str = "switchboard";

/// An MCP server handler for one connection (stdio) or one HTTP session.
///
/// Cloning is cheap; use [`McpServer::fresh_instance`] for a new session, so it mints its own
/// session id.
#[derive(Debug, Clone)]
pub struct McpServer {
    registry: ToolRegistry,
    identity: Identity,
    /// The session id used when the transport supplies none.
    minted_session_id: String,
}

impl McpServer {
    /// A handler serving `registry` to a client acting as `identity`.
    pub fn new(registry: ToolRegistry, identity: Identity) -> Self {
        Self {
            registry,
            identity,
            minted_session_id: mint_id("mcp-session"),
        }
    }

    /// The same registry and identity, with a newly minted session id.
    #[must_use]
    pub fn fresh_instance(&self) -> Self {
        Self::new(self.registry.clone(), self.identity.clone())
    }

    /// The session id calls use when the transport has none (stdio, in-memory).
    pub fn minted_session_id(&self) -> &str {
        &self.minted_session_id
    }

    /// The session of a request: the streamable-HTTP `mcp-session-id` header, else ours.
    fn session_id(&self, context: &RequestContext<RoleServer>) -> String {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
            .filter(|value| !value.is_empty())
            .map_or_else(|| self.minted_session_id.clone(), str::to_owned)
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Business tools of one organisation. Every call is checked (context, category, \
             permission, input) and audited; a refused call answers isError with a stable kind.",
        )
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.registry
            .list_permitted(&self.identity.roles)
            .iter()
            .find(|descriptor| descriptor.name == name)
            .and_then(|descriptor| tools::to_mcp_tool(descriptor))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let cursor = request.and_then(|params| params.cursor);
        tools::page(
            self.registry.list_permitted(&self.identity.roles),
            cursor.as_deref(),
        )
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session_id = self.session_id(&context);
        // rmcp moves the request's `_meta` into the context.
        let correlation_id = context
            .meta
            .get_traceparent()
            .map_or_else(|| mint_id("mcp"), str::to_owned);
        let call_context = self.identity.call_context(&session_id, &correlation_id);
        let params = Value::Object(request.arguments.unwrap_or_default());
        let outcome = tokio::select! {
            outcome = self.registry.invoke(&request.name, params, &call_context) => outcome,
            () = context.ct.cancelled() => {
                tracing::info!(tool = %request.name, %correlation_id, "MCP call cancelled by the client");
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        result::call_result(outcome).map(Into::into)
    }
}

/// A fresh id: `<prefix>-<uuid v4>`.
fn mint_id(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4())
}

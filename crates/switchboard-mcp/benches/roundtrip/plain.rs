//! The baseline: a plain rmcp server, what someone would write without Switchboard.
//!
//! [`PlainServer`] is a minimal [`ServerHandler`] with no registry in front: it lists one tool
//! (`core_get_current_user`, in the same MCP shape our server lists) and answers a call the way
//! a hand-written rmcp tool would: deserialize the arguments into the tool's input, run the
//! same tool body (`get_current_user`, over the same seeded directory), serialize the output
//! and return it as `structuredContent` plus text. There is no call context per call, no
//! permission check, no validation beyond the input type and no audit record: exactly the
//! work our layer adds, which is what the benchmark compares.
//!
//! [`InvokeServer`] is the same hand-written handler with `registry.invoke` (and one fixed call
//! context) in place of the tool body: not a baseline but a diagnostic, splitting what our layer
//! adds into the registry's share (it minus plain) and our MCP handler's share (ours minus it).
//!
//! The plain server is served over the same transports as ours: an in-memory duplex (by the
//! caller), rmcp's streamable HTTP service on loopback ([`serve_plain_http`], rmcp's default
//! configuration, as a user would start it), and stdio in a child process (the benchmark binary
//! re-executed, see `child.rs`, on rmcp's `stdio_pipes()`, the pipes `serve --stdio` uses).

use std::{net::SocketAddr, sync::Arc};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use serde_json::Value;
use switchboard_core::{CallContext, Category, DomainCell, Initiator, NoInput, ToolContext};
use switchboard_domain_directory::{DirectoryState, get_current_user};
use switchboard_registry::ToolRegistry;
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::TOOL;

/// A hand-written rmcp server for one tool.
#[derive(Debug, Clone)]
pub(crate) struct PlainServer {
    tool: Arc<Tool>,
    tool_context: Arc<ToolContext<DirectoryState>>,
}

impl PlainServer {
    /// A server listing `tool` and answering as alice (acme, admin), like our server's identity.
    pub(crate) fn new(tool: Tool) -> Self {
        let context = CallContext::builder()
            .org("acme")
            .user("alice")
            .session("plain-session")
            .correlation("plain-correlation")
            .role("admin")
            .initiator(Initiator::Agent)
            .build();
        let caller = context.verify().expect("a complete context");
        let cell = DomainCell::standalone("core", DirectoryState::seeded());
        let tool_context = ToolContext::new(caller, TOOL, Category::Read, cell);
        Self {
            tool: Arc::new(tool),
            tool_context: Arc::new(tool_context),
        }
    }
}

impl ServerHandler for PlainServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("plain-rmcp", "0.0.0"))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == self.tool.name).then(|| Tool::clone(&self.tool))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![Tool::clone(
            &self.tool,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let input: NoInput = serde_json::from_value(arguments)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let result = match get_current_user(&self.tool_context, input).await {
            Ok(user) => {
                let value = serde_json::to_value(user)
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                CallToolResult::structured(value)
            }
            Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
        };
        Ok(result.into())
    }
}

/// The plain handler calling `registry.invoke` with a fixed context (a diagnostic).
#[derive(Debug, Clone)]
pub(crate) struct InvokeServer {
    registry: ToolRegistry,
    context: CallContext,
}

impl InvokeServer {
    /// A handler calling `registry` as `context`.
    pub(crate) fn new(registry: ToolRegistry, context: CallContext) -> Self {
        Self { registry, context }
    }
}

impl ServerHandler for InvokeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("plain-rmcp-invoke", "0.0.0"))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = match self
            .registry
            .invoke(&request.name, arguments, &self.context)
            .await
        {
            Ok(value) => CallToolResult::structured(value),
            Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
        };
        Ok(result.into())
    }
}

/// A plain server on streamable HTTP, stopped by [`PlainHttp::shutdown`].
#[derive(Debug)]
pub(crate) struct PlainHttp {
    /// `http://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
    cancel: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

impl PlainHttp {
    /// Stops the server and waits for it.
    pub(crate) async fn shutdown(self) {
        self.cancel.cancel();
        let _ = self.task.await;
    }
}

/// Serves `server` at `/mcp` on a free loopback port with rmcp's default HTTP configuration.
pub(crate) async fn serve_plain_http(server: PlainServer) -> PlainHttp {
    let cancel = CancellationToken::new();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token()),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("a bound address");
    let stop = cancel.clone();
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
    });
    PlainHttp {
        url: format!("http://{addr}/mcp"),
        cancel,
        task,
    }
}

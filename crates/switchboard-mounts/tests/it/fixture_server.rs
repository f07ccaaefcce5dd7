//! A tiny real MCP server the tests control: rmcp's streamable HTTP server on a free loopback
//! port, in this process, serving the tools a test gives it.
//!
//! The public servers the other tests mount say only what their authors wrote; this one says
//! what a test needs, such as a description that carries a prompt injection. A test starts it
//! with a list of tools (and optional `instructions`), mounts it by [`FixtureServer::url`],
//! and may [`FixtureServer::replace_tools`] at run time, which tells every connected client
//! `notifications/tools/list_changed`. A call of any tool answers `{name} ran with {arguments}`,
//! its arguments as JSON text.
//!
//! [`serve_on_loopback`] is how every server written in these tests is served: the fixture
//! server here, and the ones with a handler of their own (a server that logs, one whose
//! `tools/list` answer is rewritten by an axum layer).

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::{NotificationContext, Peer, RequestContext},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::Value;
use tokio::task::JoinHandle;

/// A running fixture server; it stops when dropped.
pub(crate) struct FixtureServer {
    url: String,
    shared: Arc<Shared>,
    serving: JoinHandle<()>,
}

/// What every session's handler reads.
#[derive(Default)]
struct Shared {
    tools: Mutex<Vec<Tool>>,
    instructions: Option<String>,
    /// The clients that completed the handshake, to tell when the tools change.
    peers: Mutex<Vec<Peer<RoleServer>>>,
}

impl FixtureServer {
    /// Serves `tools`, and `instructions` at the handshake, at `http://127.0.0.1:{port}/mcp`.
    pub(crate) async fn start(tools: Vec<Tool>, instructions: Option<&str>) -> Self {
        let shared = Arc::new(Shared {
            tools: Mutex::new(tools),
            instructions: instructions.map(str::to_owned),
            peers: Mutex::default(),
        });
        let handler = Handler {
            shared: Arc::clone(&shared),
        };
        let (address, serving) =
            serve_on_loopback(mcp_route(handler, StreamableHttpServerConfig::default())).await;
        Self {
            url: format!("http://{address}/mcp"),
            shared,
            serving,
        }
    }

    /// Where it serves MCP.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Serves `tools` from now on, and tells every client that connected that the tools
    /// changed; fails the test if none has.
    pub(crate) async fn replace_tools(&self, tools: Vec<Tool>) {
        *self
            .shared
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = tools;
        let peers = self
            .shared
            .peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        assert!(!peers.is_empty(), "a client is connected");
        for peer in peers {
            // A client that has gone away is not told.
            let _ = peer.notify_tool_list_changed().await;
        }
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

/// The `/mcp` route, serving a clone of `handler` to each MCP session as `config` says.
pub(crate) fn mcp_route<H>(handler: H, config: StreamableHttpServerConfig) -> axum::Router
where
    H: ServerHandler + Clone,
{
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    axum::Router::new().nest_service("/mcp", service)
}

/// Serves `app` on a free loopback port, until the returned task is aborted or the test's
/// runtime ends.
pub(crate) async fn serve_on_loopback(app: axum::Router) -> (SocketAddr, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("a loopback port");
    let address = listener.local_addr().expect("the bound address");
    let serving = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (address, serving)
}

/// A tool named `name` described as `description`, whose input is any object.
pub(crate) fn tool(name: &str, description: &str) -> Tool {
    let Value::Object(schema) = serde_json::json!({"type": "object"}) else {
        unreachable!("an object literal");
    };
    Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
}

/// One session's handler.
#[derive(Clone)]
struct Handler {
    shared: Arc<Shared>,
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        );
        info.instructions = self.shared.instructions.clone();
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .shared
            .tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let text = format!("{} ran with {arguments}", request.name);
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.shared
            .peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(context.peer);
    }
}

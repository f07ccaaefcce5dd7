//! Helpers shared by the MCP tests: bounded waits, a registry, an in-memory
//! client/server pair, and the teardown every test ends with.

use std::{borrow::Cow, future::Future, sync::Arc, time::Duration};

use rmcp::{
    ClientHandler, RoleClient, RoleServer, ServiceExt as _, model::CallToolResult,
    service::RunningService, transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use switchboard_core::{BoxFuture, Category, ToolContext, ToolDescriptor, ToolError, ToolOrigin};
use switchboard_mcp::{ERROR_META_KEY, HttpServer, Identity, McpServer, serve_http};
use switchboard_registry::{Exposure, RuntimeTool, RuntimeToolSpec, ToolRegistry};

/// The longest any single step may take.
pub(crate) const LIMIT: Duration = Duration::from_secs(20);

/// An rmcp client with no handler of its own.
pub(crate) type Client = RunningService<RoleClient, ()>;

/// The server end of an in-memory connection.
pub(crate) type Server = RunningService<RoleServer, McpServer>;

/// Awaits `future`, failing the test if it takes longer than [`LIMIT`].
pub(crate) async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {LIMIT:?}"))
}

/// A registry with every linked tool.
pub(crate) async fn registry() -> ToolRegistry {
    bounded("starting the registry", ToolRegistry::start())
        .await
        .expect("the registry starts")
}

/// An agent of acme with the admin role.
pub(crate) fn admin() -> Identity {
    Identity::agent("acme", "alice").with_role("admin")
}

/// The streamable HTTP endpoint serving `registry` to [`admin`], on a free loopback port.
pub(crate) async fn serve_http_as_admin(registry: &ToolRegistry) -> HttpServer {
    bounded(
        "binding",
        serve_http(
            registry.clone(),
            admin(),
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        ),
    )
    .await
    .expect("the HTTP server starts")
}

/// An rmcp client of `server` over streamable HTTP, with `handler` answering its side.
pub(crate) async fn connect_http<H: ClientHandler>(
    server: &HttpServer,
    handler: H,
) -> RunningService<RoleClient, H> {
    bounded(
        "connecting",
        handler.serve(StreamableHttpClientTransport::from_uri(server.url())),
    )
    .await
    .expect("connects")
}

/// The names `tools/list` gives `client`.
pub(crate) async fn listed<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
) -> Vec<String> {
    bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list")
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect()
}

/// A server on one end of an in-memory pipe, a client on the other.
pub(crate) async fn connect_in_memory(
    registry: &ToolRegistry,
    identity: Identity,
) -> (Client, Server) {
    connect_handler(registry, identity, ()).await
}

/// As [`connect_in_memory`], with `handler` answering the client's side.
pub(crate) async fn connect_handler<H: ClientHandler>(
    registry: &ToolRegistry,
    identity: Identity,
    handler: H,
) -> (RunningService<RoleClient, H>, Server) {
    connect_server(McpServer::new(registry.clone(), identity), handler).await
}

/// `server` on one end of an in-memory pipe, a client with `handler` on the other.
pub(crate) async fn connect_server<H: ClientHandler>(
    server: McpServer,
    handler: H,
) -> (RunningService<RoleClient, H>, Server) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    // Boxed: the two handshakes together are a large future (clippy::large_futures).
    let handshakes =
        Box::pin(async { tokio::join!(server.serve(server_io), handler.serve(client_io)) });
    let (server, client) = bounded("the handshake", handshakes).await;
    (
        client.expect("the client connects"),
        server.expect("the server accepts"),
    )
}

/// Waits until `condition` holds, failing the test after [`LIMIT`].
pub(crate) async fn eventually(what: &str, condition: impl Fn() -> bool) {
    bounded(what, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// The URI templates `resources/templates/list` gives `client`, in order.
pub(crate) async fn template_uris<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
) -> Vec<String> {
    bounded(
        "resources/templates/list",
        client.list_resource_templates(None),
    )
    .await
    .expect("resources/templates/list")
    .resource_templates
    .into_iter()
    .map(|template| template.uri_template)
    .collect()
}

/// Closes the client and waits for the server to end.
pub(crate) async fn close<H: ClientHandler>(client: RunningService<RoleClient, H>, server: Server) {
    bounded("closing the client", client.cancel())
        .await
        .expect("closes");
    bounded("the server ending", server.waiting())
        .await
        .expect("ends");
}

/// Closes the client, waits for the server to end, and stops the registry.
pub(crate) async fn disconnect(client: Client, server: Server, registry: ToolRegistry) {
    close(client, server).await;
    registry.shutdown().await;
}

/// Closes every one of `clients`, stops `server`, their streamable HTTP endpoint, and stops
/// the registry.
pub(crate) async fn close_http<H: ClientHandler>(
    clients: impl IntoIterator<Item = RunningService<RoleClient, H>>,
    server: HttpServer,
    registry: ToolRegistry,
) {
    for client in clients {
        bounded("closing a client", client.cancel())
            .await
            .expect("closes");
    }
    bounded("stopping the server", server.shutdown())
        .await
        .expect("stops");
    registry.shutdown().await;
}

/// The error's JSON of a refused or failed call (`{"kind", "message", ...}`), from the result's
/// `_meta`; a refusal never puts it in `structuredContent`, where it would fail the tool's
/// output schema.
pub(crate) fn error_of(result: &CallToolResult) -> &Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(result.structured_content, None, "{result:?}");
    result
        .meta
        .as_ref()
        .and_then(|meta| meta.get(ERROR_META_KEY))
        .unwrap_or_else(|| panic!("no `{ERROR_META_KEY}` in the error's `_meta`: {result:?}"))
}

/// A run-time tool that answers `{}`.
pub(crate) struct Nothing;

impl RuntimeTool for Nothing {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async { Ok(json!({})) })
    }
}

/// The run-time read tool `name` of `domain`, needing `permission`, answered by `tool`, with
/// no parameters.
pub(crate) fn runtime_tool(
    name: &'static str,
    domain: &'static str,
    permission: &'static str,
    tool: Arc<dyn RuntimeTool>,
    exposure: Exposure,
) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Borrowed(name),
            title: None,
            domain: Cow::Borrowed(domain),
            category: Category::Read,
            permission: Cow::Borrowed(permission),
            description: Cow::Borrowed("Registered at run time by a test."),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: None,
            input_schema: Arc::new(json!({"type": "object", "properties": {}})),
            output_schema: None,
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "mcp-tests".to_owned(),
            },
        },
        tool,
        exposure,
    }
}

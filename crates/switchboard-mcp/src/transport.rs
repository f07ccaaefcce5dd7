//! The two ways to reach an [`McpServer`]: stdio for a client that spawns the process, and
//! streamable HTTP at [`MCP_PATH`] for clients that connect to it.
//!
//! On stdio, standard output is the protocol channel: nothing else may write there. Over HTTP
//! the factory handed to rmcp is called once per session, so every session mints its own
//! session id (the transport's `mcp-session-id` header wins when present). The listener binds
//! exactly the address given; pass a loopback address unless the network is trusted, as there
//! is no authentication yet.

use std::{net::SocketAddr, sync::Arc};

use rmcp::{
    ServiceExt as _,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use switchboard_registry::ToolRegistry;
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::{error::McpError, identity::Identity, server::McpServer};

/// Where the streamable HTTP endpoint is mounted.
pub const MCP_PATH: &str = "/mcp";

/// Serves MCP on this process's stdin and stdout until the client closes stdin.
pub async fn serve_stdio(registry: ToolRegistry, identity: Identity) -> Result<(), McpError> {
    let server = McpServer::new(registry, identity);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| McpError::StdioInitialize(error.to_string()))?;
    let reason = running.waiting().await.map_err(McpError::StdioSession)?;
    tracing::info!(?reason, "the MCP session on stdio ended");
    Ok(())
}

/// A running streamable-HTTP MCP server; stop it with [`HttpServer::shutdown`].
#[derive(Debug)]
pub struct HttpServer {
    local_addr: SocketAddr,
    cancel: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

impl HttpServer {
    /// The address the server listens on (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint's URL, `http://<addr>/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.local_addr)
    }

    /// Waits until the server stops (after [`HttpServer::shutdown`] or an I/O failure).
    pub async fn wait(self) -> Result<(), McpError> {
        self.task
            .await
            .map_err(McpError::Task)?
            .map_err(McpError::Http)
    }

    /// Closes every session, stops accepting connections and waits for the server to end.
    pub async fn shutdown(self) -> Result<(), McpError> {
        self.cancel.cancel();
        self.wait().await
    }
}

/// Binds `addr` and serves MCP over streamable HTTP at [`MCP_PATH`] in a background task.
///
/// Every session acts as `identity`. Returns once the listener is bound.
pub async fn serve_http(
    registry: ToolRegistry,
    identity: Identity,
    addr: SocketAddr,
) -> Result<HttpServer, McpError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| McpError::Bind { addr, source })?;
    let local_addr = listener.local_addr().map_err(McpError::LocalAddr)?;
    let cancel = CancellationToken::new();
    let prototype = McpServer::new(registry, identity);
    let config =
        StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
    let service = StreamableHttpService::new(
        move || Ok(prototype.fresh_instance()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service(MCP_PATH, service);
    let stop = cancel.clone();
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
    });
    tracing::info!(%local_addr, path = MCP_PATH, "serving MCP over streamable HTTP");
    Ok(HttpServer {
        local_addr,
        cancel,
        task,
    })
}

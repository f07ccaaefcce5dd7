//! The in-process servers beside the real binary (`shared/switchboard.rs`): on a runtime of
//! their own, the floor handler and plain rmcp in its fastest and default setups.
//!
//! Only what a user's own server would have: the floor is a two-line axum route, and the plain
//! rmcp tool returns a fixed structured result (the one Switchboard answered at start-up), so
//! the rows differ by their server stack, not by the tool.

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context as _;
use axum::{Router, body::Bytes, routing::post, serve::ListenerExt as _};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
        ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use serde_json::Value;
use tokio::{net::TcpListener, runtime::Handle};

use crate::TOOL;

/// Serves `answer` as the body of every POST to `/mcp`, with `TCP_NODELAY`: the floor.
pub(crate) async fn spawn_floor(runtime: &Handle, answer: Bytes) -> anyhow::Result<SocketAddr> {
    let app = Router::new().route(
        "/mcp",
        post(move |_request: Bytes| {
            let answer = answer.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    answer,
                )
            }
        }),
    );
    serve_on(runtime, app, true).await
}

/// Serves one trivial tool with plain rmcp: its fastest setup (`json_response`, no sessions,
/// `TCP_NODELAY`) when `fastest`, else its defaults on a plain listener.
pub(crate) async fn spawn_rmcp(
    runtime: &Handle,
    result: Value,
    fastest: bool,
) -> anyhow::Result<SocketAddr> {
    let tool = FixedTool {
        result: Arc::new(result),
    };
    let config = if fastest {
        StreamableHttpServerConfig::default()
            .with_json_response(true)
            .with_legacy_session_mode(false)
    } else {
        StreamableHttpServerConfig::default()
    };
    let service = StreamableHttpService::new(
        move || Ok(tool.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    serve_on(
        runtime,
        Router::new().nest_service("/mcp", service),
        fastest,
    )
    .await
}

/// Binds a loopback port on `runtime` and serves `app` there until the runtime ends.
async fn serve_on(runtime: &Handle, app: Router, nodelay: bool) -> anyhow::Result<SocketAddr> {
    let bound = runtime.spawn(async move {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        if nodelay {
            // A socket that refuses the option only makes its row slower, which the table shows.
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            tokio::spawn(async move { axum::serve(listener, app).await });
        } else {
            tokio::spawn(async move { axum::serve(listener, app).await });
        }
        std::io::Result::Ok(addr)
    });
    bound
        .await
        .context("the server task")?
        .context("a loopback port")
}

/// A hand-written rmcp server with one tool that returns a fixed structured result.
#[derive(Debug, Clone)]
struct FixedTool {
    result: Arc<Value>,
}

impl ServerHandler for FixedTool {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("plain-rmcp", "0.0.0"))
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
        Ok(CallToolResult::structured(Value::clone(&self.result)).into())
    }
}

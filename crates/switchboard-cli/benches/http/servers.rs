//! The servers under measurement: the real binary in a child process, and, in this process on
//! a runtime of their own, the floor handler and plain rmcp in its fastest and default setups.
//!
//! Only what a user's own server would have: the floor is a two-line axum route, and the plain
//! rmcp tool returns a fixed structured result (the one Switchboard answered at start-up), so
//! the rows differ by their server stack, not by the tool.

use std::{
    net::SocketAddr,
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

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
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    net::TcpListener,
    process::{Child, Command},
    runtime::Handle,
};

use crate::TOOL;

/// How long the binary may take to announce its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// `switchboard serve --http` in a child process, killed on drop.
#[derive(Debug)]
pub(crate) struct Switchboard {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl Switchboard {
    /// Starts the binary as a user would on loopback, and reads the address it announces.
    pub(crate) async fn start() -> anyhow::Result<Self> {
        let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        command
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--org",
                "acme",
                "--user",
                "alice",
                "--role",
                "admin",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // The defaults a user gets: no config file, audit store or log filter from the
        // environment this bench happens to run in.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("SWITCHBOARD_") {
                command.env_remove(&name);
            }
        }
        command.env_remove("RUST_LOG");
        let mut child = command
            .spawn()
            .context("starting `switchboard serve --http`")?;
        let stderr = child.stderr.take().context("the binary's stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let started = Instant::now();
        let addr = loop {
            let remaining = START_TIMEOUT.saturating_sub(started.elapsed());
            let line = tokio::time::timeout(remaining, lines.next_line())
                .await
                .context("the binary did not announce its address in time")?
                .context("reading the binary's stderr")?
                .context("the binary exited before announcing its address")?;
            if let Some(addr) = announced_address(&line) {
                break addr;
            }
        };
        // Keep reading, so that a chatty server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Switchboard { child, addr })
    }

    /// Stops the binary.
    pub(crate) async fn stop(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(START_TIMEOUT, self.child.wait()).await;
    }
}

/// The address in `switchboard: serving MCP at http://ADDR/mcp (...)`.
fn announced_address(line: &str) -> Option<SocketAddr> {
    line.split("http://")
        .nth(1)?
        .split("/mcp")
        .next()?
        .parse()
        .ok()
}

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

//! The floor of MCP in, MCP out: a plain rmcp proxy, what any server that forwards calls to
//! another MCP server pays at least. It serves stdio and forwards `tools/list` and
//! `tools/call` to its upstream (the echo server, started as its child) through an rmcp
//! client, with nothing else: no registry, no checks, no audit. `switchboard serve` is
//! compared with it to tell what Switchboard adds from what the second hop costs.

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    transport::TokioChildProcess,
};

use crate::{
    Client,
    echo::{CHILD_ENV, Launch},
};

/// The environment variable carrying the upstream's program to the proxy.
const UPSTREAM_PROGRAM_ENV: &str = "MOUNTS_BENCH_UPSTREAM";

/// The environment variable carrying the upstream's own `MOUNTS_BENCH_CHILD` mode, if any.
const UPSTREAM_MODE_ENV: &str = "MOUNTS_BENCH_UPSTREAM_MODE";

/// The command that starts the proxy in front of the server `upstream` starts.
pub(crate) fn command(upstream: &Launch) -> tokio::process::Command {
    let this = std::env::current_exe().expect("the benchmark's own path");
    let mut command = tokio::process::Command::new(this);
    command
        .env(CHILD_ENV, "proxy")
        .env(UPSTREAM_PROGRAM_ENV, &upstream.program)
        .stderr(std::process::Stdio::null());
    if let Some(mode) = upstream.env.get(CHILD_ENV) {
        command.env(UPSTREAM_MODE_ENV, mode);
    }
    command
}

/// Runs the proxy on stdio until its client leaves.
pub(crate) async fn serve_stdio() {
    let program = std::env::var(UPSTREAM_PROGRAM_ENV).expect("the parent names the upstream");
    let mut upstream = tokio::process::Command::new(program);
    upstream.env_remove(CHILD_ENV);
    if let Ok(mode) = std::env::var(UPSTREAM_MODE_ENV) {
        upstream.env(CHILD_ENV, mode);
    }
    upstream.stderr(std::process::Stdio::null());
    let transport = TokioChildProcess::new(upstream).expect("the upstream starts");
    let client = ().serve(transport).await.expect("the upstream initializes");
    let running = Proxy { upstream: client }
        .serve(rmcp::transport::stdio_pipes())
        .await
        .expect("the client initializes");
    let _ = running.waiting().await;
}

/// A server answering every tool request with its upstream's answer.
struct Proxy {
    upstream: Client,
}

impl ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bench-proxy", "0.0.0"))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream
            .list_tools(request)
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.upstream
            .call_tool(request)
            .await
            .map(Into::into)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))
    }
}

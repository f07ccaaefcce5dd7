//! A small MCP server of the tests' own, mounted by `switchboard` over streamable HTTP on a
//! loopback port: one tool, `slow`, which sleeps `ms` milliseconds before it answers and counts
//! its calls. Unlike `mounts_support::serve_on_loopback`, it can be stopped: its listener and
//! every connection it accepted close at once, as when the server's machine goes away.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use hyper_util::{rt::TokioIo, service::TowerToHyperService};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::{common::TempFile, mounts_support::mcp_app_on_loopback};

/// The handler: `slow {"ms": N}` sleeps N ms, then answers `slept N ms`.
#[derive(Clone, Default)]
struct Lab {
    calls: Arc<AtomicUsize>,
}

impl ServerHandler for Lab {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tool: Tool = serde_json::from_value(json!({
            "name": "slow",
            "description": "Sleeps `ms` milliseconds, then answers.",
            "inputSchema": {
                "type": "object",
                "properties": {"ms": {"type": "integer", "minimum": 0}},
                "required": ["ms"]
            }
        }))
        .expect("a tool");
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let ms = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("ms"))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("slept {ms} ms"))]).into())
    }
}

/// The lab server, serving until [`stop`](Self::stop) or the end of the test's runtime.
pub(crate) struct LabServer {
    pub(crate) addr: SocketAddr,
    calls: Arc<AtomicUsize>,
    stop: CancellationToken,
}

impl LabServer {
    /// Starts it on a free loopback port.
    pub(crate) async fn start() -> Self {
        let lab = Lab::default();
        let calls = Arc::clone(&lab.calls);
        let (app, listener, addr) = mcp_app_on_loopback(lab).await;
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            // Dropped when stopped: every connection task is aborted with it.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    () = stopped.cancelled() => return,
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let service = TowerToHyperService::new(app.clone());
                        connections.spawn(async move {
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        });
                    }
                }
            }
        });
        Self { addr, calls, stop }
    }

    /// How many calls of `slow` it received.
    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Closes its listener and every connection: from now on the server does not answer.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }

    /// A mounts file mounting it as `lab` (its tool: `lab_slow`, category `read`), with
    /// `extra` lines in its `[[server]]` table.
    pub(crate) fn mounts_file(&self, extra: &str) -> TempFile {
        TempFile::new(&format!(
            "[[server]]\nid = \"lab\"\nurl = \"http://{}/mcp\"\ncategory = \"read\"\n{extra}",
            self.addr
        ))
    }
}

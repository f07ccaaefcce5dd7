//! The benchmark binary re-executed as a stdio MCP server, for the stdio variants that are not
//! the `switchboard` binary itself.
//!
//! The parent spawns its own executable with [`CHILD_ENV`] set to one of the modes below; the
//! child serves one client on its stdin and stdout until stdin closes, on a runtime built like
//! the `switchboard` binary's (multi-threaded, default workers):
//!
//! - [`PLAIN_STDIO`]: the plain rmcp server on rmcp's `stdio()` (tokio's stdin and stdout,
//!   whose every read and write is handed to the blocking thread pool) — the baseline, the way
//!   rmcp's examples serve stdio;
//! - [`PLAIN_STDIO_PIPES`] and [`OURS_STDIO_PIPES`] (diagnostics): the plain server, and our
//!   server through [`serve_io`], on rmcp's `stdio_pipes()` (non-blocking pipes on the I/O
//!   driver). They show what serving stdio without the blocking pool would change.

use rmcp::{ServiceExt as _, model::Tool};
use switchboard_mcp::{Identity, serve_io};
use switchboard_registry::ToolRegistry;

use crate::plain::PlainServer;

/// The environment variable that makes the benchmark binary a stdio server.
pub(crate) const CHILD_ENV: &str = "ROUNDTRIP_BENCH_CHILD";

/// The environment variable carrying the plain server's tool (its MCP JSON) to the child.
pub(crate) const TOOL_ENV: &str = "ROUNDTRIP_BENCH_TOOL";

/// Mode: the plain server on rmcp's `stdio()`.
pub(crate) const PLAIN_STDIO: &str = "plain-stdio";

/// Mode: the plain server on rmcp's `stdio_pipes()`.
pub(crate) const PLAIN_STDIO_PIPES: &str = "plain-stdio-pipes";

/// Mode: our server (`serve_io`, as `serve --stdio` runs it) on rmcp's `stdio_pipes()`.
pub(crate) const OURS_STDIO_PIPES: &str = "ours-stdio-pipes";

/// Runs the child `mode` if this process was started as one; `false` otherwise.
pub(crate) fn run_if_child() -> bool {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return false;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        match mode.as_str() {
            PLAIN_STDIO => {
                let running = plain()
                    .serve(rmcp::transport::stdio())
                    .await
                    .expect("the client initializes");
                let _ = running.waiting().await;
            }
            PLAIN_STDIO_PIPES => {
                let running = plain()
                    .serve(rmcp::transport::stdio_pipes())
                    .await
                    .expect("the client initializes");
                let _ = running.waiting().await;
            }
            OURS_STDIO_PIPES => {
                let registry = ToolRegistry::start().await.expect("the registry starts");
                let identity = Identity::agent("acme", "alice").with_role("admin");
                let (read, write) = rmcp::transport::stdio_pipes();
                Box::pin(serve_io(registry.clone(), identity, read, write))
                    .await
                    .expect("serves until stdin closes");
                registry.shutdown().await;
            }
            other => panic!("{CHILD_ENV}={other}: not a child mode of this benchmark"),
        }
    });
    true
}

/// The plain server, listing the tool the parent passed.
fn plain() -> PlainServer {
    let tool_json = std::env::var(TOOL_ENV).expect("the parent passes the tool's JSON");
    let tool: Tool = serde_json::from_str(&tool_json).expect("a valid MCP tool");
    PlainServer::new(tool)
}

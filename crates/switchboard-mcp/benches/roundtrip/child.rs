//! The benchmark binary re-executed as a stdio MCP server, for the stdio variants that are not
//! the `switchboard` binary itself.
//!
//! The parent spawns its own executable with [`CHILD_ENV`] set to one of the modes below; the
//! child serves one client on its stdin and stdout until stdin closes, on a runtime built like
//! the `switchboard` binary's (multi-threaded, default workers):
//!
//! - [`PLAIN_STDIO`]: the plain rmcp server on rmcp's `stdio_pipes()` (non-blocking pipes on
//!   the I/O driver), the transport `switchboard serve --stdio` uses — the baseline;
//! - [`PLAIN_STDIO_BLOCKING`] (a diagnostic): the plain server on rmcp's `stdio()` (tokio's
//!   stdin and stdout, whose every read and write is handed to the blocking thread pool), the
//!   way rmcp's examples serve stdio, for scale.

use rmcp::{ServiceExt as _, model::Tool};

use crate::plain::PlainServer;

/// The environment variable that makes the benchmark binary a stdio server.
pub(crate) const CHILD_ENV: &str = "ROUNDTRIP_BENCH_CHILD";

/// The environment variable carrying the plain server's tool (its MCP JSON) to the child.
pub(crate) const TOOL_ENV: &str = "ROUNDTRIP_BENCH_TOOL";

/// Mode: the plain server on rmcp's `stdio_pipes()`.
pub(crate) const PLAIN_STDIO: &str = "plain-stdio-pipes";

/// Mode: the plain server on rmcp's `stdio()`.
pub(crate) const PLAIN_STDIO_BLOCKING: &str = "plain-stdio-blocking";

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
                    .serve(rmcp::transport::stdio_pipes())
                    .await
                    .expect("the client initializes");
                let _ = running.waiting().await;
            }
            PLAIN_STDIO_BLOCKING => {
                let running = plain()
                    .serve(rmcp::transport::stdio())
                    .await
                    .expect("the client initializes");
                let _ = running.waiting().await;
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

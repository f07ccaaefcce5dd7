//! Logs: `tracing` events go to standard error, filtered by `RUST_LOG` (default `warn`).
//!
//! Standard output belongs to results (and to exactly one JSON object under `--json`), so no
//! log line may ever land there. Under `serve`, a second layer forwards each MCP call's events
//! to the session that made it (`notifications/message`, at the level the session set with
//! `logging/setLevel`); it has its own filter, so `RUST_LOG` limits only standard error, and it
//! writes nothing itself.

use tracing_subscriber::{EnvFilter, prelude::*};

/// The filter used when `RUST_LOG` is unset or invalid.
const DEFAULT_FILTER: &str = "warn";

/// Installs the subscriber, with the MCP log layer when `serving_mcp`. Safe to call once per
/// process.
pub(crate) fn init(serving_mcp: bool) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let standard_error = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(standard_error)
        .with(serving_mcp.then(switchboard_mcp::log_layer))
        .try_init();
}

//! Logs: `tracing` events go to standard error, filtered by `RUST_LOG` (default `warn`).
//!
//! Standard output belongs to results (and to exactly one JSON object under `--json`), so no
//! log line may ever land there.

use tracing_subscriber::EnvFilter;

/// The filter used when `RUST_LOG` is unset or invalid.
const DEFAULT_FILTER: &str = "warn";

/// Installs the subscriber. Safe to call once per process.
pub(crate) fn init() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

//! The registry's metrics: every call, by tool and outcome, and how long it took, recorded
//! where its audit record is written (`audit`), so the counts and the audit trail agree.
//!
//! They go through the `metrics` facade: nothing is recorded unless the process installed a
//! recorder (`switchboard serve --metrics` installs a Prometheus one). The tool label is the
//! registered tool's name; a name that matches no tool is counted as [`UNKNOWN_TOOL`], so a
//! client cannot grow the label set by calling made-up names.

use switchboard_audit::Outcome;

/// Calls, by `tool` and `outcome` (`ok`, or the error kind: `permission_denied`,
/// `tool_failed`, …).
pub const CALLS_TOTAL: &str = "switchboard_tool_calls_total";

/// How long calls took, from the first check to the outcome, in seconds, by `tool`.
pub const CALL_DURATION_SECONDS: &str = "switchboard_tool_call_duration_seconds";

/// The `tool` label of a call whose name matches no registered tool.
pub const UNKNOWN_TOOL: &str = "_unknown";

/// Describes the registry's metrics to the installed recorder (their `# HELP` lines).
pub fn describe_metrics() {
    metrics::describe_counter!(
        CALLS_TOTAL,
        "Tool calls, by tool and outcome (ok, or the error kind)."
    );
    metrics::describe_histogram!(
        CALL_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "How long tool calls took, from the first check to the outcome, by tool."
    );
}

/// Counts one call of `tool` (`None`: no such tool) that ended with `outcome` after
/// `duration_us` microseconds.
pub(crate) fn record_call(tool: Option<&std::sync::Arc<str>>, outcome: Outcome, duration_us: u64) {
    let tool: metrics::SharedString = match tool {
        Some(name) => std::sync::Arc::clone(name).into(),
        None => UNKNOWN_TOOL.into(),
    };
    metrics::counter!(CALLS_TOTAL, "tool" => tool.clone(), "outcome" => outcome.as_str())
        .increment(1);
    // Microseconds to seconds: exact enough for any call shorter than a century.
    #[allow(
        clippy::cast_precision_loss,
        reason = "a duration in µs fits an f64's mantissa"
    )]
    let seconds = duration_us as f64 / 1_000_000.0;
    metrics::histogram!(CALL_DURATION_SECONDS, "tool" => tool).record(seconds);
}

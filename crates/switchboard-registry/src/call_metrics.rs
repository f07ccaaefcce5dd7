//! The registry's metrics: every call, by tool and outcome, and how long it took, recorded
//! where its audit record is written (`audit`), so the counts and the audit trail agree.
//!
//! They go through the `metrics` facade: nothing is recorded unless the process installed a
//! recorder (`switchboard serve --metrics` installs a Prometheus one). The tool label is the
//! registered tool's name; a name that matches no tool is counted as [`UNKNOWN_TOOL`], so a
//! client cannot grow the label set by calling made-up names.
//!
//! A call of a domain served by another registry is also counted where it crosses its link
//! (`invoke::run_linked`), by the link's kind, the domain and what the link answered, so a
//! dead or slow remote node shows apart from the tools' own failures.

use switchboard_audit::Outcome;

/// Calls, by `tool` and `outcome` (`ok`, or the error kind: `permission_denied`,
/// `tool_failed`, …).
pub const CALLS_TOTAL: &str = "switchboard_tool_calls_total";

/// How long calls took, from the first check to the outcome, in seconds, by `tool`.
pub const CALL_DURATION_SECONDS: &str = "switchboard_tool_call_duration_seconds";

/// The `tool` label of a call whose name matches no registered tool.
pub const UNKNOWN_TOOL: &str = "_unknown";

/// Calls handed to the link of a domain served by another registry, by `link` (the link's
/// kind: `in-process`, `mcp`, …), `domain` and `outcome` (`ok`, `not_sent`, `refused`,
/// `failed`, `in_doubt`, or `open` when the link refused it at once).
pub const LINK_CALLS_TOTAL: &str = "switchboard_link_calls_total";

/// How long linked calls took, from handing the call to the link (the wait for the domain's
/// bulkhead included) to its answer or the front's deadline, in seconds, by `link` and
/// `domain`. A call refused at once because the link is open is not timed.
pub const LINK_CALL_DURATION_SECONDS: &str = "switchboard_link_call_duration_seconds";

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
    metrics::describe_counter!(
        LINK_CALLS_TOTAL,
        "Calls of domains on other registries, by link kind, domain and outcome (ok, not_sent, \
         refused, failed, in_doubt, open)."
    );
    metrics::describe_histogram!(
        LINK_CALL_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "How long calls of domains on other registries took, from handing them to the link to \
         the answer, by link kind and domain."
    );
}

/// What a link answered to one call, as the `outcome` label of [`LINK_CALLS_TOTAL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkOutcome {
    /// The remote registry answered with the tool's output.
    Ok,
    /// Nothing reached the remote registry ([`LinkError::NotSent`](crate::LinkError)).
    NotSent,
    /// The remote registry refused the call before running it.
    Refused,
    /// The tool ran on the remote registry and failed.
    Failed,
    /// Sent, and no usable answer came back in time: the tool may have run.
    InDoubt,
    /// Not sent: the link's breaker was open.
    Open,
}

impl LinkOutcome {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LinkOutcome::Ok => "ok",
            LinkOutcome::NotSent => "not_sent",
            LinkOutcome::Refused => "refused",
            LinkOutcome::Failed => "failed",
            LinkOutcome::InDoubt => "in_doubt",
            LinkOutcome::Open => "open",
        }
    }
}

/// Counts one call of `domain` through a link of kind `link` that ended with `outcome`, and
/// records how long it took when it was handed to the link (`None`: refused at once).
pub(crate) fn record_link_call(
    link: &'static str,
    domain: &std::sync::Arc<str>,
    outcome: LinkOutcome,
    took: Option<std::time::Duration>,
) {
    let domain: metrics::SharedString = std::sync::Arc::clone(domain).into();
    metrics::counter!(
        LINK_CALLS_TOTAL,
        "link" => link,
        "domain" => domain.clone(),
        "outcome" => outcome.as_str()
    )
    .increment(1);
    if let Some(took) = took {
        metrics::histogram!(LINK_CALL_DURATION_SECONDS, "link" => link, "domain" => domain)
            .record(took.as_secs_f64());
    }
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

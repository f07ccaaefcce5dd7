//! `serve --metrics`: the Prometheus recorder behind `GET /metrics`, and what is read when it
//! is scraped.
//!
//! The libraries record through the `metrics` facade (calls and their latency in the registry,
//! refusals, connections and sessions at the HTTP endpoint); this module installs the one
//! recorder of the process (`metrics-exporter-prometheus`, without its HTTP listener: the
//! endpoint is served by `switchboard-mcp`'s router) and, at each scrape, sets the gauges that
//! are cheaper to read than to keep: the audit log's queue and counters, and the workflow runs
//! by state. The mounted servers' health is set by the watcher in [`crate::operate`].
//! `docs/deploy.md` ("Metrics") lists every metric.

use std::{sync::Arc, time::Duration};

use anyhow::Context as _;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use switchboard::ToolRegistry;
use switchboard_mcp::RenderFuture;
use switchboard_mounts::{MountState, MountStatus};
use switchboard_workflows::RunStore;

/// Records waiting for the audit writer now.
const AUDIT_QUEUE_DEPTH: &str = "switchboard_audit_queue_depth";
/// Records the audit writer appended to the store.
const AUDIT_WRITTEN: &str = "switchboard_audit_records_written_total";
/// Records lost: the store failed every attempt to write them.
const AUDIT_LOST: &str = "switchboard_audit_records_lost_total";
/// Records evicted by a store with a capacity bound (the memory store).
const AUDIT_EVICTED: &str = "switchboard_audit_records_evicted_total";
/// Calls refused because the audit queue was full (`--audit-when-full fail`).
const AUDIT_REJECTED: &str = "switchboard_audit_calls_rejected_total";
/// Unfinished workflow runs, by state.
const WORKFLOW_RUNS: &str = "switchboard_workflow_runs";
/// Whether each mounted server is up (1) or not (0).
pub(crate) const MOUNT_UP: &str = "switchboard_mounted_server_up";
/// How often each mounted server was restarted.
pub(crate) const MOUNT_RESTARTS: &str = "switchboard_mounted_server_restarts_total";

/// The buckets of the call latency histogram, in seconds: from half a millisecond (a call of
/// an in-process tool) to a minute (a slow mounted server).
const LATENCY_BUCKETS: [f64; 14] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
];

/// How often the recorder's histograms are compacted when nobody scrapes.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// How long the workflow run store may take to answer a scrape.
const STORE_READ_TIMEOUT: Duration = Duration::from_secs(1);

/// The unfinished states a run can be in, as the `state` label says them.
const UNFINISHED_STATES: [&str; 5] = [
    "pending",
    "initializing",
    "running",
    "paused",
    "compensating",
];

/// Installs the Prometheus recorder as the process's, describes every metric, and keeps the
/// recorder compacted in a background task. Call once, inside the runtime.
pub(crate) fn install() -> anyhow::Result<PrometheusHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(switchboard::registry::CALL_DURATION_SECONDS.to_owned()),
            &LATENCY_BUCKETS,
        )
        .context("the call latency buckets are refused")?
        .set_buckets_for_metric(
            Matcher::Full(switchboard::registry::LINK_CALL_DURATION_SECONDS.to_owned()),
            &LATENCY_BUCKETS,
        )
        .context("the linked call latency buckets are refused")?
        .install_recorder()
        .context("could not install the metrics recorder")?;
    switchboard::registry::describe_metrics();
    switchboard_mcp::describe_metrics();
    describe_metrics();
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(UPKEEP_INTERVAL);
        loop {
            ticks.tick().await;
            upkeep.run_upkeep();
        }
    });
    Ok(handle)
}

fn describe_metrics() {
    metrics::describe_gauge!(AUDIT_QUEUE_DEPTH, "Audit records waiting for the writer.");
    metrics::describe_counter!(AUDIT_WRITTEN, "Audit records appended to the store.");
    metrics::describe_counter!(
        AUDIT_LOST,
        "Audit records lost: the store failed every attempt to write them."
    );
    metrics::describe_counter!(
        AUDIT_EVICTED,
        "Audit records evicted by a store with a capacity bound."
    );
    metrics::describe_counter!(
        AUDIT_REJECTED,
        "Calls refused because the audit queue was full."
    );
    metrics::describe_gauge!(WORKFLOW_RUNS, "Unfinished workflow runs, by state.");
    metrics::describe_gauge!(
        MOUNT_UP,
        "Whether each mounted server is up (1) or not (0)."
    );
    metrics::describe_counter!(MOUNT_RESTARTS, "Restarts of each mounted server.");
}

/// The render `GET /metrics` calls: the gauges read now, then the exposition.
pub(crate) fn render(
    handle: PrometheusHandle,
    registry: ToolRegistry,
    runs: Arc<dyn RunStore>,
) -> impl Fn() -> RenderFuture + Send + Sync + 'static {
    move || {
        let handle = handle.clone();
        let registry = registry.clone();
        let runs = Arc::clone(&runs);
        Box::pin(async move {
            record_audit(&registry);
            record_runs(runs).await;
            handle.render()
        })
    }
}

/// Sets the audit log's gauge and counters.
fn record_audit(registry: &ToolRegistry) {
    let stats = registry.audit().stats();
    #[allow(
        clippy::cast_precision_loss,
        reason = "a queue length fits an f64's mantissa"
    )]
    metrics::gauge!(AUDIT_QUEUE_DEPTH).set(stats.queued as f64);
    metrics::counter!(AUDIT_WRITTEN).absolute(stats.written);
    metrics::counter!(AUDIT_LOST).absolute(stats.lost);
    metrics::counter!(AUDIT_EVICTED).absolute(stats.store.evicted);
    metrics::counter!(AUDIT_REJECTED).absolute(stats.rejected);
}

/// Sets the unfinished workflow runs by state, read from the store on a blocking thread; left
/// as they were when the store does not answer in time.
async fn record_runs(runs: Arc<dyn RunStore>) {
    let read = tokio::task::spawn_blocking(move || runs.unfinished_runs());
    let unfinished = match tokio::time::timeout(STORE_READ_TIMEOUT, read).await {
        Ok(Ok(Ok(unfinished))) => unfinished,
        Ok(Ok(Err(error))) => {
            tracing::debug!(%error, "metrics: could not read the workflow runs");
            return;
        }
        Ok(Err(_)) | Err(_) => {
            tracing::debug!("metrics: the workflow run store did not answer in time");
            return;
        }
    };
    for state in UNFINISHED_STATES {
        let count = unfinished
            .iter()
            .filter(|run| run.state.as_str() == state)
            .count();
        #[allow(
            clippy::cast_precision_loss,
            reason = "a count of runs fits an f64's mantissa"
        )]
        metrics::gauge!(WORKFLOW_RUNS, "state" => state).set(count as f64);
    }
}

/// Sets each mounted server's health from `statuses`.
pub(crate) fn record_mounts(statuses: &[MountStatus]) {
    for status in statuses {
        let up = if status.state == MountState::Up {
            1.0
        } else {
            0.0
        };
        metrics::gauge!(MOUNT_UP, "server" => status.id.clone()).set(up);
        metrics::counter!(MOUNT_RESTARTS, "server" => status.id.clone()).absolute(status.restarts);
    }
}

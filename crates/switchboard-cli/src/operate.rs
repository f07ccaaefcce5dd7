//! What `serve` offers the platform that runs it: the readiness checks behind `/readyz`, the
//! signals that stop it (SIGTERM, Ctrl-C; over HTTP and on stdio), the hand-over of its
//! workflow runs when it stops, and its operations flags. `docs/deploy.md` is the operator's
//! guide to all of it.
//!
//! Readiness asks each store the server opened for one cheap read it cannot fail on when the
//! store answers: the audit store for its newest record, the proposals store for a proposal id
//! that cannot exist, the workflow run store for a fresh run id. Under `--mounts-strict` it also
//! asks that every mounted server be up, one check per server (`mounted server ID`), so that
//! `/readyz` names the one that is down. The store reads block (they may touch a file or the
//! network), so each runs on a blocking thread; a store that hangs is reported failing without
//! starting a second read beside the stuck one.

use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use jiff::SignedDuration;
use switchboard::{AuditQuery, OrgId, ProposalId, ToolRegistry};
use switchboard_mcp::{
    CHECK_INTERVAL, CheckFuture, HttpServer, McpServer, ReadinessCheck, readiness_check,
};
use switchboard_mounts::{MountState, MountStatus};
use switchboard_workflows::{RunId, RunStore};
use switchboard_workflows_engine::Engine;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{app::Exit, mounts_setup::MountsSetup, output, telemetry};

/// The operations flags of `serve` (see `docs/deploy.md`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Operations")]
pub(crate) struct OperateArgs {
    /// On SIGTERM (or Ctrl-C), how long the calls in flight may take to finish before the
    /// server stops anyway (`30s`, `2m`); meanwhile, over HTTP, new requests get `503` with
    /// `Retry-After` and `/readyz` says `draining`, and on stdio no further message is read.
    /// What is left of it is given to the workflow runs' steps in flight, before their runs
    /// are handed over to other nodes. A second signal stops at once.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub(crate) drain_timeout: SignedDuration,

    /// Serve Prometheus metrics at `GET /metrics` (calls by tool and outcome, latency, refusals,
    /// audit queue, sessions, connections, workflow runs, mounted servers). Answered without
    /// the token check, like `/healthz` and `/readyz`: expose the port only on a private
    /// network.
    #[arg(long, conflicts_with = "stdio")]
    pub(crate) metrics: bool,

    /// How log lines on standard error are written: `text` for people, `json` (one object
    /// per line) for log collectors.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,

    /// This node's name, written in every audit record it writes (`node`), so that the records
    /// of several nodes sharing one audit store say which node ran each call (a host name, a
    /// pod name). Default: none.
    #[arg(long, value_name = "NAME", env = "SWITCHBOARD_NODE")]
    pub(crate) node: Option<String>,
}

/// The values of `serve --log-format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines (coloured on a terminal).
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields`, and the spans.
    Json,
}

impl OperateArgs {
    /// `--drain-timeout`, checked.
    pub(crate) fn drain_timeout(&self) -> Result<Duration, crate::app::UsageError> {
        Duration::try_from(self.drain_timeout)
            .ok()
            .filter(|timeout| !timeout.is_zero())
            .ok_or_else(|| {
                crate::app::UsageError::new(
                    "--drain-timeout must be a positive duration, such as `30s`",
                )
            })
    }
}

/// The readiness checks of a server on `registry`'s stores and the workflow run `store`, and,
/// when `mounts` is given (`--mounts-strict`), of the mounted servers' latest state.
pub(crate) fn readiness_checks(
    registry: &ToolRegistry,
    runs: &Arc<dyn RunStore>,
    mounts: Option<watch::Receiver<MountsHealth>>,
) -> Vec<Arc<dyn ReadinessCheck>> {
    let audit = Arc::clone(registry.audit().store());
    let proposals = Arc::clone(registry.proposal_store());
    let runs = Arc::clone(runs);
    let nobody = OrgId::from("switchboard-readiness");
    let mut checks = vec![
        blocking_check("audit store", move || {
            audit
                .query(&AuditQuery::all().limit(1))
                .map(drop)
                .map_err(|error| error.to_string())
        }),
        blocking_check("proposals store", move || {
            let id = ProposalId::new(format!("readiness-{}", uuid::Uuid::now_v7()));
            proposals
                .get(&nobody, &id)
                .map(drop)
                .map_err(|error| error.to_string())
        }),
        blocking_check("workflow run store", move || {
            runs.run(RunId::new())
                .map(drop)
                .map_err(|error| error.to_string())
        }),
    ];
    if let Some(mounts) = mounts {
        // One check per mounted server, so that `/readyz` names the one that is down.
        let ids = mounts.borrow().all.clone();
        for id in ids {
            let mounts = mounts.clone();
            let name = format!("mounted server {id}");
            checks.push(readiness_check(&name, move || {
                let down = mounts.borrow().down.contains(&id);
                let id = id.clone();
                Box::pin(async move {
                    match down {
                        false => Ok(()),
                        true => Err(format!("the mounted server `{id}` is not up")),
                    }
                })
            }));
        }
    }
    checks
}

/// A check that runs `read` on a blocking thread, one run at a time: while a run is still
/// going (a store that hangs), the next checks fail at once instead of starting another.
fn blocking_check<F>(name: &str, read: F) -> Arc<dyn ReadinessCheck>
where
    F: Fn() -> Result<(), String> + Send + Sync + 'static,
{
    let read = Arc::new(read);
    let running = Arc::new(AtomicBool::new(false));
    readiness_check(name, move || -> CheckFuture {
        let read = Arc::clone(&read);
        let running = Arc::clone(&running);
        Box::pin(async move {
            if running.swap(true, Ordering::AcqRel) {
                return Err("the previous check has not answered yet".to_owned());
            }
            let answered = tokio::task::spawn_blocking(move || {
                let answer = read();
                running.store(false, Ordering::Release);
                answer
            })
            .await;
            answered.map_err(|error| format!("the check failed: {error}"))?
        })
    })
}

/// The mounted servers' latest state, for `/readyz`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MountsHealth {
    /// Every mounted server, by id.
    pub(crate) all: Vec<String>,
    /// The servers that are not up, by id.
    pub(crate) down: Vec<String>,
}

/// The mounted servers' health now, in a channel the readiness check reads.
pub(crate) async fn mounts_health(mounts: &MountsSetup) -> watch::Sender<MountsHealth> {
    let statuses = mounts.statuses().await;
    telemetry::record_mounts(&statuses);
    watch::Sender::new(MountsHealth::of(&statuses))
}

impl MountsHealth {
    fn of(statuses: &[MountStatus]) -> Self {
        Self {
            all: statuses.iter().map(|status| status.id.clone()).collect(),
            down: statuses
                .iter()
                .filter(|status| status.state != MountState::Up)
                .map(|status| status.id.clone())
                .collect(),
        }
    }
}

/// Keeps `health` (and the mounted servers' metrics) up to date, every [`CHECK_INTERVAL`];
/// never ends.
async fn watch_mounts(mounts: &MountsSetup, health: &watch::Sender<MountsHealth>) -> Infallible {
    let mut ticks = tokio::time::interval(CHECK_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let statuses = mounts.statuses().await;
        telemetry::record_mounts(&statuses);
        let now = MountsHealth::of(&statuses);
        health.send_if_modified(|kept| {
            let changed = *kept != now;
            *kept = now;
            changed
        });
    }
}

/// How long the HTTP connections may take to close once every request in flight finished
/// (standing event streams end at once; this bounds a connection that does not). After a drain
/// cut short, the server does not wait for them.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// What stopping a server involves besides the server.
pub(crate) struct Stopping<'a> {
    /// `--drain-timeout`.
    pub(crate) drain_timeout: Duration,
    /// The workflow engine, whose runs are handed over once the calls in flight finished.
    pub(crate) engine: &'a Engine,
    /// Ends the pages' event streams, which last as long as their runs.
    pub(crate) streams_stop: &'a CancellationToken,
    /// The mounted servers and their health, kept up to date while serving.
    pub(crate) mounts: Option<(&'a MountsSetup, watch::Sender<MountsHealth>)>,
}

/// Serves until SIGTERM or Ctrl-C, then drains: new requests are refused, the calls in flight
/// get up to the drain timeout to finish (a second signal ends the wait), the workflow runs
/// this node drives are handed over within what is left of it ([`hand_over`]), the
/// connections close, and the audit log is flushed. The mounted servers are closed by the
/// caller, and the registry stopped, when this returns.
///
/// Exit 0 when every call in flight finished; exit 1 when the deadline (or a second signal) cut
/// calls off.
pub(crate) async fn serve_until_stopped(
    server: HttpServer,
    registry: &ToolRegistry,
    stopping: Stopping<'_>,
) -> anyhow::Result<Exit> {
    let watching = async {
        match &stopping.mounts {
            Some((mounts, health)) => watch_mounts(mounts, health).await,
            None => std::future::pending().await,
        }
    };
    let signal = tokio::select! {
        signal = stop_signal() => signal?,
        never = watching => match never {},
    };
    let deadline = stopping.drain_timeout;
    let draining = Instant::now();
    output::write_stderr(&format!(
        "switchboard: {signal}: draining; the calls in flight have {} to finish (another \
         signal stops at once)\n",
        shown(deadline)
    ));
    let drained = tokio::select! {
        drained = server.drain(deadline) => drained.cut_off,
        again = stop_signal() => {
            let again = again?;
            tracing::warn!(signal = again, "a second signal: stopping without waiting");
            server.in_flight()
        }
    };
    // A second signal (or a deadline spent) leaves the runs no time: they stop where they are.
    let left = match drained {
        0 => deadline.saturating_sub(draining.elapsed()),
        _ => Duration::ZERO,
    };
    hand_over(stopping.engine, left).await?;
    stopping.streams_stop.cancel();
    let grace = if drained == 0 {
        CLOSE_GRACE
    } else {
        Duration::ZERO
    };
    match tokio::time::timeout(grace, server.shutdown()).await {
        Ok(stopped) => stopped.context("the MCP HTTP server did not stop cleanly")?,
        Err(_) if drained > 0 => {}
        Err(_) => tracing::warn!(
            grace_ms = CLOSE_GRACE.as_millis(),
            "some HTTP connections did not close in time; stopping anyway"
        ),
    }
    flush_audit(registry).await;
    if drained > 0 {
        tracing::error!(
            cut_off = drained,
            "requests were still in flight when the drain ended: they were cut off"
        );
        output::write_stderr(&format!(
            "switchboard: {drained} requests were still in flight when the drain ended \
             (--drain-timeout); they were cut off\n"
        ));
        return Ok(Exit::Refused);
    }
    Ok(Exit::Success)
}

/// Serves MCP on stdio until the client closes stdin, or until SIGTERM or Ctrl-C: then no
/// further message is read, the calls in flight get up to `drain_timeout` to be answered (a
/// second signal stops at once), the workflow runs are handed over ([`hand_over`]) and the
/// audit log is flushed.
///
/// Exit 0 when every call in flight was answered; exit 1 when the deadline (or a second
/// signal) cut calls off.
pub(crate) async fn serve_stdio_until_stopped(
    server: McpServer,
    registry: &ToolRegistry,
    engine: &Engine,
    drain_timeout: Duration,
) -> anyhow::Result<Exit> {
    let stop = CancellationToken::new();
    let served = switchboard_mcp::serve_stdio_until(server, stop.clone(), drain_timeout);
    tokio::pin!(served);
    let mut draining = None;
    let cut_off = tokio::select! {
        ended = &mut served => ended.context("serving MCP on stdio failed")?.cut_off,
        signal = stop_signal() => {
            let signal = signal?;
            draining = Some(Instant::now());
            output::write_stderr(&format!(
                "switchboard: {signal}: draining; the calls in flight have {} to finish \
                 (another signal stops at once)\n",
                shown(drain_timeout)
            ));
            stop.cancel();
            tokio::select! {
                ended = &mut served => ended.context("serving MCP on stdio failed")?.cut_off,
                again = stop_signal() => {
                    let again = again?;
                    tracing::warn!(signal = again, "a second signal: stopping without waiting");
                    // Not counted: the ones in flight are dropped with the session.
                    usize::MAX
                }
            }
        }
    };
    let left = match (draining, cut_off) {
        (Some(draining), 0) => drain_timeout.saturating_sub(draining.elapsed()),
        (None, 0) => drain_timeout,
        _ => Duration::ZERO,
    };
    hand_over(engine, left).await?;
    flush_audit(registry).await;
    match cut_off {
        0 => Ok(Exit::Success),
        usize::MAX => {
            output::write_stderr(
                "switchboard: stopped on a second signal; the calls still in flight were cut \
                 off\n",
            );
            Ok(Exit::Refused)
        }
        cut_off => {
            output::write_stderr(&format!(
                "switchboard: {cut_off} requests were still in flight when the drain ended \
                 (--drain-timeout); they were cut off\n"
            ));
            Ok(Exit::Refused)
        }
    }
}

/// Flushes the audit log: every record of every call answered is in the store.
async fn flush_audit(registry: &ToolRegistry) {
    let audit = registry.audit();
    audit.flush().await;
    let stats = audit.stats();
    tracing::info!(
        written = stats.written,
        lost = stats.lost,
        "stopped: the audit log is flushed"
    );
}

/// `duration` as the flags write it (`30s`, `2m`).
fn shown(duration: Duration) -> String {
    SignedDuration::try_from(duration).map_or_else(|_| "a while".to_owned(), |d| format!("{d:#}"))
}

/// Hands the workflow runs this process drives over to the other nodes sharing its run store
/// (`Engine::hand_over`), waiting at most `deadline` (a signal meanwhile stops the wait): each
/// run stops before its next node and its lease is released, so another node's next sweep
/// continues it. A run whose step outlasts the deadline is left to its lease's expiry, and
/// said so.
pub(crate) async fn hand_over(engine: &Engine, deadline: Duration) -> anyhow::Result<()> {
    let handed = tokio::select! {
        handed = engine.hand_over(deadline) => handed,
        again = stop_signal() => {
            let again = again?;
            tracing::warn!(signal = again, "a second signal: the workflow runs stop where they are");
            engine.hand_over(Duration::ZERO).await
        }
    };
    tracing::info!(
        released = handed.released,
        cut_off = handed.cut_off,
        "the workflow runs this node drove are handed over"
    );
    if handed.cut_off > 0 {
        output::write_stderr(&format!(
            "switchboard: {} workflow runs were still in a step when the drain ended; another \
             node takes them over once their leases expire (--workflow-lease)\n",
            handed.cut_off
        ));
    }
    Ok(())
}

/// Waits for SIGTERM or Ctrl-C (SIGINT) and says which came.
pub(crate) async fn stop_signal() -> anyhow::Result<&'static str> {
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .context("could not wait for SIGTERM")?;
        tokio::select! {
            _ = terminate.recv() => Ok("SIGTERM"),
            interrupted = tokio::signal::ctrl_c() => {
                interrupted.context("could not wait for Ctrl-C")?;
                Ok("Ctrl-C")
            }
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .context("could not wait for Ctrl-C")?;
        Ok("Ctrl-C")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mounted_server_counts_as_down_unless_it_is_up() {
        let up = MountStatus {
            state: MountState::Up,
            ..MountStatus::failed("files", "")
        };
        let restarting = MountStatus {
            state: MountState::Restarting,
            ..MountStatus::failed("search", "")
        };
        let failed = MountStatus::failed("tickets", "did not start");
        assert!(MountsHealth::of(std::slice::from_ref(&up)).down.is_empty());
        let health = MountsHealth::of(&[up, restarting, failed]);
        assert_eq!(health.all, ["files", "search", "tickets"]);
        assert_eq!(health.down, ["search", "tickets"]);
    }

    #[test]
    fn the_drain_timeout_must_be_positive() {
        let args = |timeout: &str| OperateArgs {
            drain_timeout: timeout.parse().expect("a duration"),
            metrics: false,
            log_format: LogFormat::Text,
            node: None,
        };
        assert_eq!(args("30s").drain_timeout(), Ok(Duration::from_secs(30)));
        assert!(args("0s").drain_timeout().is_err());
        assert!(args("-5s").drain_timeout().is_err());
    }

    #[tokio::test]
    async fn a_hung_store_fails_its_checks_without_piling_up_reads() {
        let hung = Arc::new(AtomicBool::new(true));
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let check = {
            let hung = Arc::clone(&hung);
            let reads = Arc::clone(&reads);
            blocking_check("hung", move || {
                reads.fetch_add(1, Ordering::SeqCst);
                while hung.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(())
            })
        };
        let first = tokio::time::timeout(Duration::from_millis(50), check.check()).await;
        assert!(first.is_err(), "the first read hangs");
        let second = check.check().await;
        assert!(second.is_err(), "{second:?}");
        assert_eq!(
            reads.load(Ordering::SeqCst),
            1,
            "no second read was started"
        );
        hung.store(false, Ordering::SeqCst);
        // Once the stuck read returns, the next check reads again.
        let mut answered = Err(String::new());
        for _ in 0..200 {
            answered = check.check().await;
            if answered.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(answered, Ok(()));
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }
}

//! The report: every row's calls pooled over the rounds, as one table (median, p99, calls/s,
//! the median's ratio to the floor's at the same client count), then the target's verdict and
//! where Switchboard stands among the MCP servers measured.
//!
//! Percentiles are nearest-rank over every measured call of the row (all clients, all rounds).
//! Calls/s is the row's measured calls over its measured wall time, summed over the rounds.
//! The last column counts the calls that stalled 40 ms or more: a median says little when half
//! the calls stall and half do not.

use std::time::Duration;

use crate::{Row, Server, client::Revision, load::RowRun};

/// The target: Switchboard's median at most this many times the floor's.
const FLOOR_TARGET: f64 = 2.0;

/// A call this slow waited on a delayed ACK (40 ms on Linux) rather than on work.
const STALL: Duration = Duration::from_millis(40);

/// What one row measured over all rounds.
#[derive(Debug, Default)]
struct Measured {
    latencies: Vec<Duration>,
    wall: Duration,
    errors: Vec<String>,
}

impl Measured {
    fn percentile(&self, fraction: f64) -> Option<Duration> {
        let count = self.latencies.len();
        if count == 0 {
            return None;
        }
        // Nearest rank: the smallest sample with at least `fraction` of them at or below it.
        let rank = (fraction * count as f64).ceil() as usize;
        self.latencies.get(rank.clamp(1, count) - 1).copied()
    }

    /// The share of calls that took [`STALL`] or more, in percent.
    fn stalled_percent(&self) -> Option<f64> {
        let count = self.latencies.len();
        let stalled = self.latencies.iter().filter(|&&call| call >= STALL).count();
        (count > 0).then(|| 100.0 * stalled as f64 / count as f64)
    }

    fn calls_per_second(&self) -> Option<f64> {
        let seconds = self.wall.as_secs_f64();
        (seconds > 0.0).then(|| self.latencies.len() as f64 / seconds)
    }
}

/// Every row's measurements, in the order of the rows.
#[derive(Debug)]
pub(crate) struct Results {
    rows: Vec<(Row, Measured)>,
}

impl Results {
    pub(crate) fn new(rows: &[Row]) -> Self {
        Self {
            rows: rows.iter().map(|row| (*row, Measured::default())).collect(),
        }
    }

    /// Adds one round of the row at `index`.
    pub(crate) fn record(&mut self, index: usize, outcome: anyhow::Result<RowRun>) {
        let Some((_, measured)) = self.rows.get_mut(index) else {
            return;
        };
        match outcome {
            Ok(run) => {
                measured.latencies.extend(run.latencies);
                measured.wall += run.wall;
            }
            Err(error) => measured.errors.push(format!("{error:#}")),
        }
    }

    fn median(&self, server: Server, revision: Revision, clients: usize) -> Option<Duration> {
        self.rows
            .iter()
            .find(|(row, _)| {
                row.server == server
                    && (server == Server::Floor || row.revision == revision)
                    && row.clients == clients
            })
            .and_then(|(_, measured)| measured.percentile(0.5))
    }

    /// Prints the table and the verdict.
    pub(crate) fn print(mut self) {
        for (_, measured) in &mut self.rows {
            measured.latencies.sort_unstable();
        }
        println!(
            "| server | revision | clients | calls | median | p99 | calls/s | median / floor | \
             calls ≥ 40 ms |"
        );
        println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
        for (row, measured) in &self.rows {
            let revision = if row.server == Server::Floor {
                "any"
            } else {
                row.revision.label()
            };
            let floor = self.median(Server::Floor, row.revision, row.clients);
            let median = measured.percentile(0.5);
            println!(
                "| {} | {revision} | {} | {} | {} | {} | {} | {} | {} |",
                row.server.label(),
                row.clients,
                measured.latencies.len(),
                milliseconds(median),
                milliseconds(measured.percentile(0.99)),
                measured
                    .calls_per_second()
                    .map_or_else(|| "-".to_owned(), |rate| format!("{rate:.0}")),
                ratio(median, floor),
                measured
                    .stalled_percent()
                    .map_or_else(|| "-".to_owned(), |share| format!("{share:.0}%")),
            );
        }
        for (row, measured) in &self.rows {
            for error in &measured.errors {
                println!(
                    "FAILED: {} {} x{}: {error}",
                    row.server.label(),
                    row.revision.label(),
                    row.clients
                );
            }
        }
        println!();
        self.print_verdict();
    }

    fn print_verdict(&self) {
        println!(
            "Target: Switchboard's median ≤ {FLOOR_TARGET}× the floor's, and below plain rmcp's \
             default mode's"
        );
        for clients in crate::CLIENT_COUNTS {
            for revision in [Revision::Session, Revision::Stateless] {
                let ours = self.median(Server::Switchboard, revision, clients);
                let floor = self.median(Server::Floor, revision, clients);
                let rmcp = self.median(Server::RmcpDefault, revision, clients);
                let against_floor = match (ours, floor) {
                    (Some(ours), Some(floor))
                        if ours.as_secs_f64() <= FLOOR_TARGET * floor.as_secs_f64() =>
                    {
                        "met"
                    }
                    (Some(_), Some(_)) => "NOT met",
                    _ => "not measured",
                };
                let against_rmcp = match (ours, rmcp) {
                    (Some(ours), Some(rmcp)) if too_close(ours, rmcp) && ours < rmcp => {
                        "ahead, by less than 3%"
                    }
                    (Some(ours), Some(rmcp)) if ours < rmcp => "ahead",
                    (Some(_), Some(_)) => "NOT ahead",
                    _ => "not measured",
                };
                println!(
                    "  {} {clients:>2} client(s): {} of the floor ({against_floor}); {} of plain \
                     rmcp default ({against_rmcp})",
                    revision.label(),
                    ratio(ours, floor),
                    ratio(ours, rmcp),
                );
            }
        }
        self.print_standing();
        self.print_headlines();
    }

    /// Where Switchboard's best row ranks among every MCP server row (the floor left out) at
    /// each client count, by median (lowest first) and by calls/s (highest first).
    fn print_standing(&self) {
        println!("Standing among the MCP servers measured (every row but the floor's):");
        for clients in crate::CLIENT_COUNTS {
            let mut by_median: Vec<(Row, Duration)> = self
                .rows
                .iter()
                .filter(|(row, _)| row.server != Server::Floor && row.clients == clients)
                .filter_map(|(row, measured)| Some((*row, measured.percentile(0.5)?)))
                .collect();
            by_median.sort_by_key(|(_, median)| *median);
            let mut by_rate: Vec<(Row, f64)> = self
                .rows
                .iter()
                .filter(|(row, _)| row.server != Server::Floor && row.clients == clients)
                .filter_map(|(row, measured)| Some((*row, measured.calls_per_second()?)))
                .collect();
            by_rate.sort_by(|a, b| b.1.total_cmp(&a.1));
            let median_first = by_median.first().map(|(row, median)| {
                format!("{} ({})", describe(row), milliseconds(Some(*median)))
            });
            let rate_first = by_rate
                .first()
                .map(|(row, rate)| format!("{} ({rate:.0} calls/s)", describe(row)));
            println!(
                "  {clients:>2} client(s): Switchboard ranks {} of {} by median (first: {}), {} \
                 of {} by calls/s (first: {})",
                rank_of_switchboard(by_median.iter().map(|(row, _)| row)),
                by_median.len(),
                median_first.unwrap_or_else(|| "-".to_owned()),
                rank_of_switchboard(by_rate.iter().map(|(row, _)| row)),
                by_rate.len(),
                rate_first.unwrap_or_else(|| "-".to_owned()),
            );
        }
    }

    /// The headline figures `cargo xtask bench` collects: Switchboard's median against the
    /// floor's, per revision and client count.
    fn print_headlines(&self) {
        for clients in crate::CLIENT_COUNTS {
            for revision in [Revision::Session, Revision::Stateless] {
                let ours = self.median(Server::Switchboard, revision, clients);
                let floor = self.median(Server::Floor, revision, clients);
                if let (Some(ours), Some(floor)) = (ours, floor) {
                    let figure = serde_json::json!({
                        "id": format!("serve_http.{}.{clients}", revision.label().replace('-', "_")),
                        "median": ours.as_nanos() as f64,
                        "baseline": floor.as_nanos() as f64,
                        "unit": "ns",
                    });
                    println!("BENCH {figure}");
                }
            }
        }
    }
}

/// The 1-based place of Switchboard's first row in `ranked`, or `-` when it has none.
fn rank_of_switchboard<'a>(ranked: impl Iterator<Item = &'a Row>) -> String {
    ranked
        .into_iter()
        .position(|row| row.server == Server::Switchboard)
        .map_or_else(|| "-".to_owned(), |index| (index + 1).to_string())
}

fn describe(row: &Row) -> String {
    format!("{} {}", row.server.label(), row.revision.label())
}

/// Whether two medians are less than 3% apart: too close to call on a shared machine.
fn too_close(value: Duration, base: Duration) -> bool {
    (value.as_secs_f64() / base.as_secs_f64() - 1.0).abs() < 0.03
}

fn milliseconds(duration: Option<Duration>) -> String {
    duration.map_or_else(
        || "-".to_owned(),
        |duration| format!("{:.3} ms", duration.as_secs_f64() * 1e3),
    )
}

fn ratio(value: Option<Duration>, base: Option<Duration>) -> String {
    match (value, base) {
        (Some(value), Some(base)) if !base.is_zero() => {
            format!("{:.2}×", value.as_secs_f64() / base.as_secs_f64())
        }
        _ => "-".to_owned(),
    }
}

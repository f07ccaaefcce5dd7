//! Whole HTTP round trips of one `tools/call`, as a client on another machine sees them: the
//! real `switchboard serve --http` binary beside a floor and plain rmcp, in one run, printed as
//! latency percentiles and ratios to the floor.
//!
//! What is measured, row by row:
//! - **floor**: an axum handler in this process that reads the request and answers with the
//!   bytes of one real `core_get_current_user` answer captured from Switchboard at start-up, on
//!   a listener with `TCP_NODELAY`. No MCP server on the same HTTP stack can answer faster.
//! - **switchboard**: the binary, started as users start it (`serve --http 127.0.0.1:0 --org
//!   acme --user alice --role admin`, every check on, the memory audit store), on both
//!   protocol revisions: 2025-11-25 (a session: `initialize`, `notifications/initialized`, then
//!   calls with `Mcp-Session-Id`) and 2026-07-28 (stateless: every call carries its protocol
//!   version in a header and in `_meta`).
//! - **rmcp fast**: plain rmcp with one trivial tool answering the captured result, in its
//!   fastest setup: `json_response`, no sessions, `TCP_NODELAY` (on 2026-07-28 only, the
//!   revision that has no sessions).
//! - **rmcp default**: the same tool with `StreamableHttpServerConfig::default()` (sessions and
//!   event streams) on `axum::serve` over a plain `TcpListener`, as rmcp's examples serve it,
//!   on both revisions.
//!
//! Each runs with 1 client and with 32. A client is a plain hyper HTTP/1.1 connection with no
//! tuning (no `TCP_NODELAY` on the client side), sending its calls one after another and
//! reading each whole body (JSON or event stream) before the next. The rows run in rounds, so
//! the machine's noise hits them alike; every loop is bounded in calls and in time, so a server
//! that stalls 40 ms per answer still finishes in the same time budget. Run:
//! `cargo bench -p switchboard-cli --bench http` (about a minute, two at most), or `-- quick`
//! for a short smoke run (about 10 seconds). `cargo xtask bench` collects the `BENCH` lines the
//! report ends with.

#![allow(clippy::print_stdout, reason = "a benchmark's output is its report")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

#[path = "http/client.rs"]
mod client;
#[path = "http/load.rs"]
mod load;
#[path = "shared/quick.rs"]
mod quick;
#[path = "http/report.rs"]
mod report;
#[path = "http/servers.rs"]
mod servers;
#[path = "shared/switchboard.rs"]
mod switchboard;

use std::{net::SocketAddr, time::Duration};

use anyhow::Context as _;
use tokio::runtime::{Handle, Runtime};

use client::Revision;
use load::Plan;
use report::Results;
use switchboard::{Identity, Switchboard};

/// The tool every row calls.
pub(crate) const TOOL: &str = "core_get_current_user";

/// The client counts every server is measured with.
const CLIENT_COUNTS: [usize; 2] = [1, 32];

/// A server under measurement.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Server {
    Floor,
    Switchboard,
    RmcpFast,
    RmcpDefault,
}

impl Server {
    fn label(self) -> &'static str {
        match self {
            Server::Floor => "floor (axum, same bytes)",
            Server::Switchboard => "switchboard serve --http",
            Server::RmcpFast => "plain rmcp, fastest",
            Server::RmcpDefault => "plain rmcp, default",
        }
    }
}

/// One row of the table: a server, the revision its clients speak, how many clients.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Row {
    pub(crate) server: Server,
    pub(crate) revision: Revision,
    pub(crate) clients: usize,
}

/// Every row, in the order they run within a round and are printed.
fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for clients in CLIENT_COUNTS {
        let mut add = |server, revision| {
            rows.push(Row {
                server,
                revision,
                clients,
            });
        };
        add(Server::Floor, Revision::Stateless);
        add(Server::Switchboard, Revision::Session);
        add(Server::Switchboard, Revision::Stateless);
        add(Server::RmcpFast, Revision::Stateless);
        add(Server::RmcpDefault, Revision::Session);
        add(Server::RmcpDefault, Revision::Stateless);
    }
    rows
}

/// How long the run is: the full run, or `quick` (argument) / `HTTP_BENCH_QUICK=1`.
#[derive(Clone, Copy, Debug)]
struct Settings {
    rounds: usize,
    plan: Plan,
}

impl Settings {
    fn from_environment() -> Self {
        if quick::asked_for_quick("HTTP_BENCH_QUICK") {
            Settings {
                rounds: 1,
                plan: Plan {
                    warm_calls: 5,
                    warm_time: Duration::from_millis(100),
                    max_calls: 1_000,
                    max_time: Duration::from_millis(500),
                },
            }
        } else {
            Settings {
                rounds: 3,
                plan: Plan {
                    warm_calls: 20,
                    warm_time: Duration::from_millis(300),
                    max_calls: 5_000,
                    max_time: Duration::from_secs(2),
                },
            }
        }
    }
}

/// Where each server listens.
struct Addresses {
    floor: SocketAddr,
    switchboard: SocketAddr,
    rmcp_fast: SocketAddr,
    rmcp_default: SocketAddr,
}

impl Addresses {
    fn of(&self, server: Server) -> SocketAddr {
        match server {
            Server::Floor => self.floor,
            Server::Switchboard => self.switchboard,
            Server::RmcpFast => self.rmcp_fast,
            Server::RmcpDefault => self.rmcp_default,
        }
    }
}

fn main() -> anyhow::Result<()> {
    let settings = Settings::from_environment();
    // The in-process servers get a runtime of their own, as the binary has its own process:
    // the clients' work never runs on the servers' workers.
    let servers = runtime("bench-server")?;
    let clients = runtime("bench-client")?;
    clients.block_on(run(settings, servers.handle().clone()))
}

fn runtime(name: &str) -> anyhow::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(name)
        .enable_all()
        .build()
        .context("a Tokio runtime")
}

async fn run(settings: Settings, servers: Handle) -> anyhow::Result<()> {
    let mut switchboard = Switchboard::start(Identity {
        org: "acme",
        user: "alice",
        role: "admin",
    })
    .await?;
    let answer = client::capture_answer(switchboard.addr).await?;
    let addresses = Addresses {
        floor: servers::spawn_floor(&servers, answer.body.clone()).await?,
        switchboard: switchboard.addr,
        rmcp_fast: servers::spawn_rmcp(&servers, answer.structured.clone(), true).await?,
        rmcp_default: servers::spawn_rmcp(&servers, answer.structured.clone(), false).await?,
    };

    let rows = rows();
    println!(
        "HTTP round trips of `tools/call {TOOL}`: {} rows × {} rounds, each row per round: \
         warm-up of {} calls or {:?} per client, then up to {} calls or {:?}",
        rows.len(),
        settings.rounds,
        settings.plan.warm_calls,
        settings.plan.warm_time,
        settings.plan.max_calls,
        settings.plan.max_time,
    );
    let mut results = Results::new(&rows);
    for round in 1..=settings.rounds {
        for (index, row) in rows.iter().enumerate() {
            let outcome = load::run_row(*row, addresses.of(row.server), settings.plan).await;
            results.record(index, outcome);
        }
        println!("round {round}/{} done", settings.rounds);
    }
    switchboard.stop().await;
    println!();
    results.print();
    Ok(())
}

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
//! - **TypeScript SDK** (npm `@modelcontextprotocol/sdk`) on Node and **FastMCP** (PyPI
//!   `fastmcp`) on Python, each serving the same tool in a child process, in its default mode
//!   (sessions, answers as SSE streams) and in its fastest documented one (no sessions, JSON
//!   answers); `http/peers/` holds their scripts and names the docs each mode follows. The
//!   TypeScript SDK speaks up to 2025-11-25, FastMCP both revisions. Their versions are pinned
//!   in `xtask/mcp-servers`; the bench runs `cargo xtask mcp-servers` when they are not
//!   installed.
//!
//! Each runs with 1 client and with 32. A client is a plain hyper HTTP/1.1 connection with no
//! tuning (no `TCP_NODELAY` on the client side), sending its calls one after another and
//! reading each whole body (JSON or event stream) before the next. The rows run in rounds, so
//! the machine's noise hits them alike; every loop is bounded in calls and in time, so a server
//! that stalls 40 ms per answer still finishes in the same time budget. Run:
//! `cargo bench -p switchboard-cli --bench http` (about three minutes), or `-- quick` for a
//! short smoke run (about half a minute). Naming servers after `--` (`switchboard`, `rmcp`,
//! `typescript`, `fastmcp`) runs only theirs beside the floor: `-- quick switchboard fastmcp`.
//! `cargo xtask bench` collects the `BENCH` lines the report ends with.

#![allow(clippy::print_stdout, reason = "a benchmark's output is its report")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

#[path = "http/client.rs"]
mod client;
#[path = "http/load.rs"]
mod load;
#[path = "http/peers.rs"]
mod peers;
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
use peers::{Mode, Peer, Sdk};
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
    TypeScriptDefault,
    TypeScriptFast,
    FastMcpDefault,
    FastMcpFast,
}

impl Server {
    fn label(self) -> &'static str {
        match self {
            Server::Floor => "floor (axum, same bytes)",
            Server::Switchboard => "switchboard serve --http",
            Server::RmcpFast => "plain rmcp, fastest",
            Server::RmcpDefault => "plain rmcp, default",
            Server::TypeScriptDefault => "TypeScript SDK, default",
            Server::TypeScriptFast => "TypeScript SDK, fastest",
            Server::FastMcpDefault => "FastMCP, default",
            Server::FastMcpFast => "FastMCP, fastest",
        }
    }

    /// The name that selects it after `--`; the floor runs always.
    fn group(self) -> Option<&'static str> {
        match self {
            Server::Floor => None,
            Server::Switchboard => Some("switchboard"),
            Server::RmcpFast | Server::RmcpDefault => Some("rmcp"),
            Server::TypeScriptDefault | Server::TypeScriptFast => Some("typescript"),
            Server::FastMcpDefault | Server::FastMcpFast => Some("fastmcp"),
        }
    }

    /// The peer SDK's server behind it, if it is one.
    fn peer(self) -> Option<(Sdk, Mode)> {
        match self {
            Server::TypeScriptDefault => Some((Sdk::TypeScript, Mode::Default)),
            Server::TypeScriptFast => Some((Sdk::TypeScript, Mode::Fastest)),
            Server::FastMcpDefault => Some((Sdk::FastMcp, Mode::Default)),
            Server::FastMcpFast => Some((Sdk::FastMcp, Mode::Fastest)),
            _ => None,
        }
    }
}

/// The names that select servers after `--`.
const GROUPS: [&str; 4] = ["switchboard", "rmcp", "typescript", "fastmcp"];

/// One row of the table: a server, the revision its clients speak, how many clients.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Row {
    pub(crate) server: Server,
    pub(crate) revision: Revision,
    pub(crate) clients: usize,
}

/// Every row of the selected servers (all when `groups` is empty), in the order they run
/// within a round and are printed.
fn rows(groups: &[String]) -> Vec<Row> {
    let selected = |server: Server| {
        server
            .group()
            .is_none_or(|group| groups.is_empty() || groups.iter().any(|name| name == group))
    };
    let mut rows = Vec::new();
    for clients in CLIENT_COUNTS {
        let mut add = |server, revision| {
            if selected(server) {
                rows.push(Row {
                    server,
                    revision,
                    clients,
                });
            }
        };
        add(Server::Floor, Revision::Stateless);
        add(Server::Switchboard, Revision::Session);
        add(Server::Switchboard, Revision::Stateless);
        add(Server::RmcpFast, Revision::Stateless);
        add(Server::RmcpDefault, Revision::Session);
        add(Server::RmcpDefault, Revision::Stateless);
        // The TypeScript SDK speaks up to 2025-11-25 (its SUPPORTED_PROTOCOL_VERSIONS).
        add(Server::TypeScriptDefault, Revision::Session);
        add(Server::TypeScriptFast, Revision::Session);
        add(Server::FastMcpDefault, Revision::Session);
        add(Server::FastMcpDefault, Revision::Stateless);
        add(Server::FastMcpFast, Revision::Session);
        add(Server::FastMcpFast, Revision::Stateless);
    }
    rows
}

/// How long the run is: the full run, or `quick` (argument) / `HTTP_BENCH_QUICK=1`; and
/// which servers run (the names after `--`, all when none).
#[derive(Clone, Debug)]
struct Settings {
    rounds: usize,
    plan: Plan,
    groups: Vec<String>,
}

impl Settings {
    fn from_environment() -> anyhow::Result<Self> {
        // `cargo bench` adds `--bench`; every other word names servers.
        let groups: Vec<String> = std::env::args()
            .skip(1)
            .filter(|arg| !arg.starts_with('-') && arg != "quick")
            .collect();
        if let Some(unknown) = groups.iter().find(|name| !GROUPS.contains(&name.as_str())) {
            anyhow::bail!(
                "unknown server `{unknown}` after `--`: choose among {} (or `quick`)",
                GROUPS.join(", ")
            );
        }
        let (rounds, plan) = if quick::asked_for_quick("HTTP_BENCH_QUICK") {
            (
                1,
                Plan {
                    warm_calls: 5,
                    warm_time: Duration::from_millis(100),
                    max_calls: 1_000,
                    max_time: Duration::from_millis(500),
                },
            )
        } else {
            (
                3,
                Plan {
                    warm_calls: 20,
                    warm_time: Duration::from_millis(300),
                    max_calls: 5_000,
                    max_time: Duration::from_secs(2),
                },
            )
        };
        Ok(Settings {
            rounds,
            plan,
            groups,
        })
    }
}

/// Where each server listens.
#[derive(Debug, Default)]
struct Addresses(Vec<(Server, SocketAddr)>);

impl Addresses {
    fn of(&self, server: Server) -> anyhow::Result<SocketAddr> {
        self.0
            .iter()
            .find(|(started, _)| *started == server)
            .map(|(_, addr)| *addr)
            .with_context(|| format!("{} was not started", server.label()))
    }
}

fn main() -> anyhow::Result<()> {
    let settings = Settings::from_environment()?;
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
    let rows = rows(&settings.groups);
    let wanted = |server: Server| rows.iter().any(|row| row.server == server);
    let mut addresses = Addresses::default();
    addresses.0.push((
        Server::Floor,
        servers::spawn_floor(&servers, answer.body.clone()).await?,
    ));
    addresses.0.push((Server::Switchboard, switchboard.addr));
    for (server, fastest) in [(Server::RmcpFast, true), (Server::RmcpDefault, false)] {
        if wanted(server) {
            let addr = servers::spawn_rmcp(&servers, answer.structured.clone(), fastest).await?;
            addresses.0.push((server, addr));
        }
    }
    let peer_servers = [
        Server::TypeScriptDefault,
        Server::TypeScriptFast,
        Server::FastMcpDefault,
        Server::FastMcpFast,
    ];
    let mut peers = Vec::new();
    if peer_servers.iter().any(|server| wanted(*server)) {
        peers::ensure_installed().await?;
    }
    for server in peer_servers {
        if let Some((sdk, mode)) = server.peer().filter(|_| wanted(server)) {
            let peer = Peer::start(sdk, mode, &answer.structured).await?;
            addresses.0.push((server, peer.addr));
            peers.push(peer);
        }
    }

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
            let outcome = match addresses.of(row.server) {
                Ok(addr) => load::run_row(*row, addr, settings.plan).await,
                Err(error) => Err(error),
            };
            results.record(index, outcome);
        }
        println!("round {round}/{} done", settings.rounds);
    }
    switchboard.stop().await;
    for peer in &mut peers {
        peer.stop().await;
    }
    println!();
    results.print();
    Ok(())
}

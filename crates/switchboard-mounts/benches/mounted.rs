//! Mounted MCP servers, measured against the same server called directly, in one run:
//!
//! - **invoke**: `ToolRegistry::invoke` of a mounted stdio tool (every check, one audit record)
//!   beside an rmcp client calling the same server over its own stdio pipes; the ratio of the
//!   medians (target: at most 1.10×).
//! - **serve**: an rmcp client calling the mounted tool through the real `switchboard serve
//!   --mounts` binary, over stdio and over streamable HTTP, beside the same client calling
//!   the server directly; what Switchboard adds, median and p99 (target: well under the 50 µs
//!   a published proxy benchmark adds, median).
//! - **restart**: after a SIGKILL of the server's child, the time until a call succeeds again,
//!   beside the child's own start time (target: under 500 ms more).
//!
//! The server is a plain rmcp stdio server with one `echo` tool, this binary re-executed
//! (`mounted/echo.rs`): it answers in microseconds, so what the mount adds shows.
//! `MOUNTS_BENCH_SERVER=everything` measures npm's server-everything instead. Figures and
//! baselines run in interleaved rounds that swap their order every round, so that load which
//! comes and goes hits both alike; latencies are the median (and p99) of every call.
//!
//! Run: `cargo bench -p switchboard-mounts --bench mounted` (it builds the `switchboard`
//! binary with the same profile for `serve`, or uses the one `SWITCHBOARD_BIN` names); name
//! parts to run only those (`-- invoke restart`), and `quick` for short runs. `cargo xtask
//! bench` collects the `BENCH` lines it prints.

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

#[path = "mounted/echo.rs"]
mod echo;
#[path = "mounted/in_process.rs"]
mod in_process;
#[path = "mounted/proxy.rs"]
mod proxy;
#[path = "mounted/restart.rs"]
mod restart;
#[path = "mounted/serve.rs"]
mod serve;
#[path = "mounted/stats.rs"]
mod stats;

use std::time::{Duration, Instant};

use rmcp::{
    RoleClient, ServiceExt as _, model::CallToolRequestParams, service::RunningService,
    transport::TokioChildProcess,
};
use switchboard_core::{CallContext, Initiator};
use switchboard_mounts::{Mounts, MountsConfig, RestartPolicy, Strictness};
use switchboard_registry::ToolRegistry;

use echo::{EchoServer, Launch, arguments};
use stats::Series;

/// An rmcp client with no handler of its own.
pub(crate) type Client = RunningService<RoleClient, ()>;

/// The parts, by the names that select them.
const PARTS: [&str; 3] = ["invoke", "serve", "restart"];

/// How much each part measures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Interleaved rounds of calls.
    pub(crate) rounds: usize,
    /// Calls of the figure and of its baseline per round.
    pub(crate) calls: usize,
    /// Restarts measured (and as many direct starts).
    pub(crate) restarts: usize,
}

impl Plan {
    const FULL: Plan = Plan {
        rounds: 15,
        calls: 400,
        restarts: 15,
    };
    const QUICK: Plan = Plan {
        rounds: 3,
        calls: 100,
        restarts: 3,
    };
}

/// The longest any setup step may take.
const LIMIT: Duration = Duration::from_secs(60);

/// Awaits `future`, panicking with `what` if it takes longer than [`LIMIT`].
pub(crate) async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {LIMIT:?}"))
}

/// Who every in-process call acts as: alice, admin of acme, an agent.
pub(crate) fn context() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .role("admin")
        .session("bench")
        .correlation("bench")
        .initiator(Initiator::Agent)
        .build()
}

/// A registry with the server mounted (restarted as `policy` says, or by the default policy).
pub(crate) async fn mount(
    launch: &Launch,
    policy: Option<RestartPolicy>,
) -> (ToolRegistry, Mounts) {
    let registry = bounded("starting the registry", ToolRegistry::builder().start())
        .await
        .expect("the registry starts");
    // The file is never written, but its lock file (tool sets pinned at first mount) goes
    // beside it: in the temp directory, not in the source tree.
    let path = std::env::temp_dir().join(format!(
        "switchboard-mounts-bench-in-process-{}.toml",
        std::process::id()
    ));
    let mut config =
        MountsConfig::parse(&path, &launch.mounts_toml()).expect("a valid mounts file");
    if let Some(policy) = policy {
        for server in &mut config.servers {
            server.restart = policy;
        }
    }
    let mounts = Mounts::new(config);
    bounded(
        "mounting the server",
        mounts.start(&registry, Strictness::Strict),
    )
    .await
    .expect("the server is mounted");
    (registry, mounts)
}

/// An rmcp client of the server, started directly as a child process.
pub(crate) async fn direct_client(launch: &Launch) -> Client {
    let transport = TokioChildProcess::new(launch.command()).expect("the server starts");
    bounded("a stdio handshake", Box::pin(().serve(transport)))
        .await
        .expect("the server initializes")
}

/// One `tools/call` of `tool` by `client`, which must succeed and echo the message.
pub(crate) async fn call_direct(client: &Client, tool: &str) -> rmcp::model::CallToolResult {
    let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments());
    let result = client.call_tool(request).await.expect("tools/call answers");
    assert_ne!(result.is_error, Some(true), "the call failed: {result:?}");
    result
}

/// `plan.rounds` rounds of `plan.calls` timed calls of `figure` and of `baseline`, the two
/// swapping places every round, after one untimed round of each.
pub(crate) async fn interleaved(
    plan: Plan,
    mut figure: impl AsyncFnMut(),
    mut baseline: impl AsyncFnMut(),
) -> (Series, Series) {
    timed(plan.calls, &mut figure).await;
    timed(plan.calls, &mut baseline).await;
    let (mut figure_series, mut baseline_series) = (Series::default(), Series::default());
    for round in 0..plan.rounds {
        if round % 2 == 0 {
            figure_series.push_round(&timed(plan.calls, &mut figure).await);
            baseline_series.push_round(&timed(plan.calls, &mut baseline).await);
        } else {
            baseline_series.push_round(&timed(plan.calls, &mut baseline).await);
            figure_series.push_round(&timed(plan.calls, &mut figure).await);
        }
    }
    (figure_series, baseline_series)
}

/// The same with three variants, the order rotating by one every round.
pub(crate) async fn interleaved3(
    plan: Plan,
    mut first: impl AsyncFnMut(),
    mut second: impl AsyncFnMut(),
    mut third: impl AsyncFnMut(),
) -> [Series; 3] {
    timed(plan.calls, &mut first).await;
    timed(plan.calls, &mut second).await;
    timed(plan.calls, &mut third).await;
    let mut series: [Series; 3] = Default::default();
    for round in 0..plan.rounds {
        for step in 0..3 {
            let which = (round + step) % 3;
            let latencies = match which {
                0 => timed(plan.calls, &mut first).await,
                1 => timed(plan.calls, &mut second).await,
                _ => timed(plan.calls, &mut third).await,
            };
            series[which].push_round(&latencies);
        }
    }
    series
}

/// The latency of each of `calls` calls of `work`, one after another.
async fn timed(calls: usize, work: &mut impl AsyncFnMut()) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        work().await;
        latencies.push(started.elapsed());
    }
    latencies
}

fn main() {
    if echo::run_if_child() {
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|arg| arg == "--bench") {
        // `cargo test --benches` runs bench binaries without `--bench`: this one would build
        // the CLI and start servers, so it only runs under `cargo bench`.
        println!(
            "mounted: skipped (run it with `cargo bench -p switchboard-mounts --bench mounted`)"
        );
        return;
    }
    let named: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let plan = if named.contains(&"quick") || std::env::var_os("MOUNTS_BENCH_QUICK").is_some() {
        Plan::QUICK
    } else {
        Plan::FULL
    };
    let chosen: Vec<&str> = PARTS
        .into_iter()
        .filter(|part| named.contains(part))
        .collect();
    let parts = if chosen.is_empty() {
        PARTS.to_vec()
    } else {
        chosen
    };
    let server = EchoServer::from_env();
    let launch = server.launch();
    println!(
        "mounted: the server is {}; parts: {}",
        server.label(),
        parts.join(", ")
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        for part in parts {
            match part {
                "invoke" => in_process::run(&launch, plan).await,
                "serve" => Box::pin(serve::run(server, &launch, plan)).await,
                "restart" => restart::run(&launch, plan).await,
                _ => unreachable!("one of PARTS"),
            }
        }
    });
}

//! The MCP round trip, measured: one `tools/call` of `core_get_current_user` in process, through
//! our server over an in-memory duplex, stdio and streamable HTTP, and through a plain rmcp
//! server (no registry) over the same transports, with 1 client and with several, in one run.
//!
//! Criterion measures each variant on its own; then a summary (`roundtrip/summary.rs`)
//! interleaves all variants round by round (so machine noise hits them alike) and prints
//! medians, p99, CPU time per call, throughput, and for each transport the ratio the target is
//! stated in: our server's round trip over the plain rmcp server's (target: at most 1.10×, i.e.
//! our layer adds at most 10%). Three diagnostic variants, in the summary only, show where the
//! difference comes from (the registry, our handler, our stdio line transport) and what rmcp's
//! default blocking `stdio()` would cost. `ROUNDTRIP_ONLY=<Variant>` runs one variant alone,
//! for profilers.
//!
//! How each transport is set up is in `roundtrip/setup.rs`, the baseline in
//! `roundtrip/plain.rs`. Run: `cargo bench -p switchboard-mcp --bench roundtrip` (it builds the
//! `switchboard` binary with the same profile first; `-- nomatch`, a filter that matches no
//! criterion benchmark, runs the summary alone). `cargo xtask bench` collects the `BENCH` lines
//! the summary prints.

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

#[path = "roundtrip/child.rs"]
mod child;
#[path = "roundtrip/plain.rs"]
mod plain;
#[path = "roundtrip/setup.rs"]
mod setup;
#[path = "roundtrip/summary.rs"]
mod summary;

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use criterion::Criterion;
use serde_json::json;
// The core domain's `#[tool]` must be linked for the registry to find it
// (rust-lang/rust#64731); the plain server calls its function directly too.
use switchboard_domain_directory as _;
use tokio::runtime::Runtime;

use setup::{Client, Fixture};

/// The tool every variant calls.
pub(crate) const TOOL: &str = "core_get_current_user";

/// How many concurrent clients the contended runs use (where the transport allows several).
pub(crate) const CLIENTS: usize = 8;

/// One way of calling the tool.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Variant {
    InProcess,
    OursDuplex,
    PlainDuplex,
    GuardedDuplex,
    InvokeDuplex,
    OursStdio,
    OursStdioMemoryAudit,
    PlainStdio,
    PlainStdioBlocking,
    OursHttp,
    PlainHttp,
    OursHttpStateless,
    PlainHttpStateless,
}

impl Variant {
    pub(crate) const ALL: [Variant; 13] = [
        Variant::InProcess,
        Variant::OursDuplex,
        Variant::PlainDuplex,
        Variant::GuardedDuplex,
        Variant::InvokeDuplex,
        Variant::OursStdio,
        Variant::OursStdioMemoryAudit,
        Variant::PlainStdio,
        Variant::PlainStdioBlocking,
        Variant::OursHttp,
        Variant::PlainHttp,
        Variant::OursHttpStateless,
        Variant::PlainHttpStateless,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Variant::InProcess => "in-process registry.invoke",
            Variant::OursDuplex => "ours, duplex",
            Variant::PlainDuplex => "plain rmcp, duplex",
            Variant::GuardedDuplex => "(diag) ours via serve_io, duplex",
            Variant::InvokeDuplex => "(diag) plain + registry.invoke, duplex",
            Variant::OursStdio => "ours, stdio (child process)",
            Variant::OursStdioMemoryAudit => "(diag) ours, stdio, --audit memory",
            Variant::PlainStdio => "plain rmcp, stdio_pipes (child process)",
            Variant::PlainStdioBlocking => "(diag) plain rmcp, blocking stdio()",
            Variant::OursHttp => "ours, HTTP",
            Variant::PlainHttp => "plain rmcp, HTTP",
            Variant::OursHttpStateless => "ours, HTTP 2026-07-28",
            Variant::PlainHttpStateless => "plain rmcp, HTTP 2026-07-28",
        }
    }

    /// A diagnostic variant: in the summary, not measured by criterion.
    fn is_diagnostic(self) -> bool {
        matches!(
            self,
            Variant::GuardedDuplex
                | Variant::InvokeDuplex
                | Variant::OursStdioMemoryAudit
                | Variant::PlainStdioBlocking
        )
    }

    /// How many clients the contended runs use: a stdio server has exactly one client.
    pub(crate) fn clients(self) -> usize {
        match self {
            Variant::OursStdio
            | Variant::OursStdioMemoryAudit
            | Variant::PlainStdio
            | Variant::PlainStdioBlocking => 1,
            _ => CLIENTS,
        }
    }

    /// Single-client latency samples per summary round (the in-process call is ~50× faster).
    pub(crate) fn samples(self) -> usize {
        match self {
            Variant::InProcess => 20_000,
            _ => 500,
        }
    }

    /// The server's child process, if it runs in one (its CPU time counts too).
    pub(crate) fn child_pid(self, fixture: &Fixture) -> Option<u32> {
        match self {
            Variant::OursStdio => fixture.ours_stdio_pid,
            Variant::OursStdioMemoryAudit => fixture.ours_stdio_memory_pid,
            Variant::PlainStdio => fixture.plain_stdio_pid,
            Variant::PlainStdioBlocking => fixture.plain_blocking_pid,
            _ => None,
        }
    }

    /// One call, by client `index` (`< self.clients()`).
    async fn run(self, fixture: &Fixture, index: usize) {
        let client: &Client = match self {
            Variant::InProcess => {
                let result = fixture
                    .registry
                    .invoke(TOOL, black_box(json!({})), &fixture.context)
                    .await;
                black_box(result.expect("invoke works"));
                return;
            }
            Variant::OursDuplex => &fixture.ours_duplex[index],
            Variant::PlainDuplex => &fixture.plain_duplex[index],
            Variant::GuardedDuplex => &fixture.guarded_duplex[index],
            Variant::InvokeDuplex => &fixture.invoke_duplex[index],
            Variant::OursStdio => &fixture.ours_stdio,
            Variant::OursStdioMemoryAudit => &fixture.ours_stdio_memory,
            Variant::PlainStdio => &fixture.plain_stdio,
            Variant::PlainStdioBlocking => &fixture.plain_blocking,
            Variant::OursHttp => &fixture.ours_http[index],
            Variant::PlainHttp => &fixture.plain_http[index],
            Variant::OursHttpStateless => &fixture.ours_http_stateless[index],
            Variant::PlainHttpStateless => &fixture.plain_http_stateless[index],
        };
        black_box(setup::call(client).await);
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs `calls` calls spread over `clients` concurrent tasks (one per client); returns the
/// wall time and every call's latency in nanoseconds.
pub(crate) async fn contended(
    fixture: &Arc<Fixture>,
    variant: Variant,
    clients: usize,
    calls: u64,
) -> (Duration, Vec<f64>) {
    let per_client = calls.div_ceil(clients as u64);
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|index| {
            let fixture = Arc::clone(fixture);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_client as usize);
                for _ in 0..per_client {
                    let call_started = Instant::now();
                    variant.run(&fixture, index).await;
                    latencies.push(call_started.elapsed().as_nanos() as f64);
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(calls as usize);
    for task in tasks {
        latencies.extend(task.await.expect("client task"));
    }
    (started.elapsed(), latencies)
}

/// Criterion's runs of the non-diagnostic variants. The calls run in a spawned task, as in the
/// summary (criterion's own `iter` would drive the client from the thread blocking on the
/// runtime, a different and slower arrangement).
fn criterion_benches(criterion: &mut Criterion, runtime: &Runtime, fixture: &Arc<Fixture>) {
    let mut group = criterion.benchmark_group("tools_call core_get_current_user");
    for variant in Variant::ALL.into_iter().filter(|v| !v.is_diagnostic()) {
        let mut counts = vec![1];
        if variant.clients() > 1 {
            counts.push(variant.clients());
        }
        for clients in counts {
            let label = if clients == 1 { "client" } else { "clients" };
            group.bench_function(format!("{clients} {label}/{}", variant.name()), |bench| {
                bench.to_async(runtime).iter_custom(|calls| async move {
                    contended(fixture, variant, clients, calls.max(clients as u64))
                        .await
                        .0
                });
            });
        }
    }
    group.finish();
}

/// `ROUNDTRIP_ONLY=<Variant> ROUNDTRIP_CALLS=<n>`: after the setup, make `n` single-client
/// calls of one variant (`OursDuplex`, `PlainDuplex`, ...) and nothing else, for profilers
/// (`valgrind --tool=callgrind`, `perf record`); subtract a run with `ROUNDTRIP_CALLS=0`.
fn profile_only(runtime: &Runtime, fixture: &Arc<Fixture>, only: &str) {
    let variant = Variant::ALL
        .into_iter()
        .find(|variant| format!("{variant:?}") == only)
        .unwrap_or_else(|| panic!("ROUNDTRIP_ONLY={only}: not one of {:?}", Variant::ALL));
    let calls: u64 = std::env::var("ROUNDTRIP_CALLS")
        .ok()
        .and_then(|calls| calls.parse().ok())
        .unwrap_or(10_000);
    let pids: Vec<Option<u32>> = [None]
        .into_iter()
        .chain(variant.child_pid(fixture).map(Some))
        .collect();
    let before: Vec<_> = pids
        .iter()
        .map(|pid| summary::cpu_by_thread(*pid))
        .collect();
    let (elapsed, _) = runtime.block_on(contended(fixture, variant, 1, calls));
    let after: Vec<_> = pids
        .iter()
        .map(|pid| summary::cpu_by_thread(*pid))
        .collect();
    println!("{}: {calls} calls in {elapsed:?}", variant.name());
    let per_call = calls.max(1) as f64;
    for ((pid, before), after) in pids.iter().zip(&before).zip(&after) {
        for (thread, (cpu, slices)) in after {
            let (cpu_before, slices_before) = before.get(thread).copied().unwrap_or_default();
            println!(
                "  {} {thread:<24} {:>8.2}µs CPU/call {:>6.3} times scheduled/call",
                if pid.is_some() { "server" } else { "bench " },
                cpu.saturating_sub(cpu_before) as f64 / per_call / 1_000.0,
                slices.saturating_sub(slices_before) as f64 / per_call,
            );
        }
    }
}

fn main() {
    if child::run_if_child() {
        return;
    }
    if !std::env::args().any(|arg| arg == "--bench") {
        // `cargo test --benches` runs bench binaries without `--bench`: this one would build
        // the CLI and spawn servers for minutes, so it only runs under `cargo bench`.
        println!(
            "roundtrip: skipped (run it with `cargo bench -p switchboard-mcp --bench roundtrip`)"
        );
        return;
    }
    let switchboard = setup::switchboard_binary();
    let runtime = runtime();
    let fixture = Arc::new(runtime.block_on(Box::pin(Fixture::start(&switchboard))));
    if let Ok(only) = std::env::var("ROUNDTRIP_ONLY") {
        profile_only(&runtime, &fixture, &only);
    } else {
        measure(&runtime, &fixture);
    }
    let fixture = Arc::into_inner(fixture).expect("no call is still running");
    runtime.block_on(fixture.shutdown());
}

/// Criterion's runs, then the interleaved summary.
fn measure(runtime: &Runtime, fixture: &Arc<Fixture>) {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .configure_from_args();
    criterion_benches(&mut criterion, runtime, fixture);
    criterion.final_summary();
    summary::summary(runtime, fixture);
}

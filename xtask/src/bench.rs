//! `cargo xtask bench`: runs the headline benchmarks and prints one table of today's figures
//! against today's targets.
//!
//! The measuring stays in the benchmarks (`crates/*/benches`). Each one's summary measures a
//! figure and its baseline in the same run, interleaved round by round so that the machine's
//! noise hits both alike, and prints every headline figure as one `BENCH {json}` line (see
//! [`Measurement`]). This module runs those benchmarks one after another, passes their output
//! through, collects the `BENCH` lines and compares each figure with its target
//! ([`HEADLINES`]). Criterion's own per-variant runs are skipped with a filter that matches no
//! benchmark: the interleaved summaries are what the targets are read from, and they take a
//! few minutes in all.
//!
//! A missed target is reported, not treated as a failure: the command fails only when a
//! benchmark fails to run or a headline figure is missing.

mod table;
#[cfg(test)]
mod tests;

use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
};

use anyhow::{Context as _, bail};

use crate::system_packages::{Needed, can_start};

pub use table::{Measurement, Row, Target, Unit, Verdict, render, rows};

/// A benchmark binary that prints headline figures.
#[derive(Debug, Clone, Copy)]
pub struct Benchmark {
    /// The name `cargo xtask bench NAME` selects it by.
    pub name: &'static str,
    /// The package it belongs to.
    pub package: &'static str,
    /// Its `[[bench]]` name.
    pub bench: &'static str,
    /// The package features it is built with (`--features`).
    pub features: &'static [&'static str],
    /// The arguments after `--` for a full run.
    pub args: &'static [&'static str],
    /// The arguments after `--` for `--quick`.
    pub quick_args: &'static [&'static str],
    /// The programs it runs besides itself, each installed from the Debian package of the
    /// same name when missing.
    pub programs: &'static [&'static str],
    /// Whether it runs the MCP servers pinned in `xtask/mcp-servers` (installed first, see
    /// [`crate::mcp_servers`]).
    pub mcp_servers: bool,
}

/// The criterion filter that matches no benchmark, so that only a benchmark's interleaved
/// summary runs.
const SUMMARY_ONLY: &str = "nomatch";

/// The headline benchmarks, in the order they run.
pub const BENCHMARKS: [Benchmark; 11] = [
    Benchmark {
        name: "invoke",
        package: "switchboard",
        bench: "invoke",
        features: &[],
        args: &[SUMMARY_ONLY],
        quick_args: &[SUMMARY_ONLY],
        programs: &[],
        mcp_servers: false,
    },
    Benchmark {
        name: "route",
        package: "switchboard-orchestrator",
        bench: "route",
        features: &[],
        args: &[SUMMARY_ONLY],
        quick_args: &[SUMMARY_ONLY],
        programs: &[],
        mcp_servers: false,
    },
    Benchmark {
        name: "navigate",
        package: "switchboard-navigation",
        bench: "navigate",
        features: &[],
        args: &[SUMMARY_ONLY],
        quick_args: &[SUMMARY_ONLY],
        programs: &[],
        mcp_servers: false,
    },
    Benchmark {
        name: "writer",
        package: "switchboard-audit-sqlite",
        bench: "writer",
        features: &[],
        args: &[SUMMARY_ONLY],
        quick_args: &[SUMMARY_ONLY],
        programs: &[],
        mcp_servers: false,
    },
    Benchmark {
        name: "roundtrip",
        package: "switchboard-mcp",
        bench: "roundtrip",
        features: &[],
        args: &[SUMMARY_ONLY],
        quick_args: &[SUMMARY_ONLY],
        programs: &[],
        mcp_servers: false,
    },
    Benchmark {
        name: "http",
        package: "switchboard-cli",
        bench: "http",
        features: &[],
        args: &[],
        quick_args: &["quick"],
        programs: &[],
        mcp_servers: true,
    },
    Benchmark {
        name: "html",
        package: "switchboard-cli",
        bench: "html",
        features: &[],
        args: &[],
        quick_args: &["quick"],
        programs: &["wrk"],
        mcp_servers: false,
    },
    Benchmark {
        name: "remote",
        package: "switchboard-cli",
        bench: "remote",
        features: &["cluster"],
        args: &[],
        quick_args: &["quick"],
        programs: &[],
        mcp_servers: false,
    },
    Benchmark {
        name: "mounted",
        package: "switchboard-mounts",
        bench: "mounted",
        features: &[],
        args: &[],
        quick_args: &["quick"],
        programs: &[],
        mcp_servers: false,
    },
    Benchmark {
        name: "workflow",
        package: "switchboard-workflows-engine",
        bench: "workflow",
        features: &[],
        args: &[SUMMARY_ONLY],
        quick_args: &[SUMMARY_ONLY, "--quick"],
        programs: &[],
        mcp_servers: false,
    },
    Benchmark {
        name: "kit",
        package: "architecture-tests",
        bench: "kit",
        features: &[],
        args: &[],
        quick_args: &["quick"],
        programs: &[],
        mcp_servers: false,
    },
];

/// One headline row: the figure a benchmark reports under `id`, and its target.
#[derive(Debug, Clone, Copy)]
pub struct Headline {
    /// The `id` of the benchmark's `BENCH` line.
    pub id: &'static str,
    /// The benchmark (`Benchmark::name`) that prints it.
    pub benchmark: &'static str,
    /// What the row measures, against what.
    pub label: &'static str,
    /// Today's target.
    pub target: Target,
}

/// Today's headline figures and targets, in table order.
pub const HEADLINES: [Headline; 32] = [
    Headline {
        id: "invoke.json",
        benchmark: "invoke",
        label: "JSON `registry.invoke`, every check and audit, vs the direct JSON call",
        target: Target::AddsAtMostNs(2_000.0),
    },
    Headline {
        id: "invoke.typed",
        benchmark: "invoke",
        label: "typed `registry.call::<T>` vs the direct typed call",
        target: Target::Reported,
    },
    Headline {
        id: "route.exact",
        benchmark: "route",
        label: "`ask` routing, an exact intent, vs tokenising the utterance",
        target: Target::Reported,
    },
    Headline {
        id: "route.dates_and_a_colleague",
        benchmark: "route",
        label: "`ask` routing, dates and a colleague, vs tokenising the utterance",
        target: Target::Reported,
    },
    Headline {
        id: "route.typo",
        benchmark: "route",
        label: "`ask` routing, a typo (exact readings are tried first), vs tokenising the utterance",
        target: Target::Reported,
    },
    Headline {
        id: "route.filler",
        benchmark: "route",
        label: "`ask` routing, filler words around an intent, vs tokenising the utterance",
        target: Target::Reported,
    },
    Headline {
        id: "route.miss",
        benchmark: "route",
        label: "`ask` routing, a miss ranked with BM25, vs tokenising the utterance",
        target: Target::Reported,
    },
    Headline {
        id: "navigate.week",
        benchmark: "navigate",
        label: "`navigate` of the roster week vs `invoke` of `roster_list_shifts`",
        target: Target::RatioAtMost(3.0),
    },
    Headline {
        id: "navigate.execute_action",
        benchmark: "navigate",
        label: "`execute_action` of `propose_swap` vs `invoke` of the same tool",
        target: Target::AddsAtMostNs(2_000.0),
    },
    Headline {
        id: "audit_sqlite.batch_1024",
        benchmark: "writer",
        label: "SQLite audit store, batches of 1,024 (`synchronous` FULL) vs a raw INSERT loop on the same table",
        target: Target::AtLeast(100_000.0),
    },
    Headline {
        id: "mcp.stdio",
        benchmark: "roundtrip",
        label: "MCP `tools/call` over stdio vs plain rmcp",
        target: Target::RatioAtMost(1.10),
    },
    Headline {
        id: "mcp.http",
        benchmark: "roundtrip",
        label: "MCP `tools/call` over streamable HTTP (2025-11-25 sessions) vs plain rmcp",
        target: Target::RatioAtMost(1.10),
    },
    Headline {
        id: "mcp.http_2026_07_28",
        benchmark: "roundtrip",
        label: "MCP `tools/call` over streamable HTTP (2026-07-28) vs plain rmcp",
        target: Target::RatioAtMost(1.10),
    },
    Headline {
        id: "serve_http.2025_11_25.1",
        benchmark: "http",
        label: "`switchboard serve --http`, 2025-11-25, 1 client vs the floor",
        target: Target::RatioAtMost(2.0),
    },
    Headline {
        id: "serve_http.2026_07_28.1",
        benchmark: "http",
        label: "`switchboard serve --http`, 2026-07-28, 1 client vs the floor",
        target: Target::RatioAtMost(2.0),
    },
    Headline {
        id: "serve_http.2025_11_25.32",
        benchmark: "http",
        label: "`switchboard serve --http`, 2025-11-25, 32 clients vs the floor",
        target: Target::RatioAtMost(2.0),
    },
    Headline {
        id: "serve_http.2026_07_28.32",
        benchmark: "http",
        label: "`switchboard serve --http`, 2026-07-28, 32 clients vs the floor",
        target: Target::RatioAtMost(2.0),
    },
    Headline {
        id: "html.week",
        benchmark: "html",
        label: "the roster week page as HTML from `serve --http` over loopback (`wrk`, 1 connection) vs the same page as markdown",
        target: Target::MedianBelowNs(1_000_000.0),
    },
    Headline {
        id: "mounts.invoke",
        benchmark: "mounted",
        label: "`registry.invoke` of a mounted stdio tool vs an rmcp client calling the server directly",
        target: Target::RatioAtMost(1.10),
    },
    Headline {
        id: "mounts.serve_stdio",
        benchmark: "mounted",
        label: "MCP in, MCP out: a mounted tool through `switchboard serve --stdio` vs the server directly",
        target: Target::AddsAtMostNs(50_000.0),
    },
    Headline {
        id: "mounts.serve_stdio_p99",
        benchmark: "mounted",
        label: "the same through `switchboard serve --stdio`, p99 vs p99",
        target: Target::Reported,
    },
    Headline {
        id: "mounts.serve_http",
        benchmark: "mounted",
        label: "MCP in, MCP out: a mounted tool through `switchboard serve --http` vs the server on HTTP directly",
        target: Target::AddsAtMostNs(50_000.0),
    },
    Headline {
        id: "mounts.serve_http_p99",
        benchmark: "mounted",
        label: "the same through `switchboard serve --http`, p99 vs p99",
        target: Target::Reported,
    },
    Headline {
        id: "mounts.restart",
        benchmark: "mounted",
        label: "a mounted server killed until a call succeeds (backoff up to 10 ms) vs the server's own start and first call",
        target: Target::AddsAtMostNs(500_000_000.0),
    },
    Headline {
        id: "remote_mcp_link",
        benchmark: "remote",
        label: "`registry.invoke` of a roster read on a domain served by another process, over the MCP link, vs a plain rmcp client calling that process",
        target: Target::RatioAtMost(1.20),
    },
    Headline {
        id: "remote_cluster_link",
        benchmark: "remote",
        label: "the same read over the `ractor_cluster` link, vs the plain rmcp client",
        target: Target::Reported,
    },
    Headline {
        id: "workflow.memory_step",
        benchmark: "workflow",
        label: "a step of a 10-step workflow of `core_get_current_user` on the memory store vs the same `invoke` in a loop",
        target: Target::AddsAtMostNs(5_000.0),
    },
    Headline {
        id: "workflow.sqlite_rate",
        benchmark: "workflow",
        label: "durable steps per second on the SQLite store (WAL, NORMAL), one thread, vs on the memory store",
        target: Target::AtLeast(5_000.0),
    },
    Headline {
        id: "workflow.sqlite_step",
        benchmark: "workflow",
        label: "a durable step on the SQLite store, median run / 10, vs on the memory store",
        target: Target::MedianBelowNs(200_000.0),
    },
    Headline {
        id: "workflow.checkpoint_memory",
        benchmark: "workflow",
        label: "a step's two checkpoints in one commit on the memory store, timed alone, vs the whole step (the ratio is their share)",
        target: Target::Reported,
    },
    Headline {
        id: "workflow.checkpoint_sqlite",
        benchmark: "workflow",
        label: "a step's two checkpoints in one commit on the SQLite store, timed alone, vs the whole step (the ratio is their share)",
        target: Target::Reported,
    },
    Headline {
        id: "kit.sample_domains",
        benchmark: "kit",
        label: "the conformance kit over every sample tool (default cases), vs as many plain `invoke` calls",
        target: Target::MedianBelowNs(30_000_000_000.0),
    },
];

/// What `cargo xtask bench` was asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Shorter runs where a benchmark offers them (the HTTP and HTML benchmarks' `quick`).
    pub quick: bool,
    /// The benchmarks to run, by name; all of them when empty.
    pub only: Vec<String>,
}

/// The benchmarks `options` selects, or an error naming the unknown ones.
pub fn selected(options: &Options) -> anyhow::Result<Vec<Benchmark>> {
    let unknown: Vec<&str> = options
        .only
        .iter()
        .map(String::as_str)
        .filter(|name| !BENCHMARKS.iter().any(|benchmark| benchmark.name == *name))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = BENCHMARKS.iter().map(|benchmark| benchmark.name).collect();
        bail!(
            "unknown benchmark {}: choose from {}",
            unknown.join(", "),
            known.join(", ")
        );
    }
    Ok(BENCHMARKS
        .into_iter()
        .filter(|benchmark| {
            options.only.is_empty() || options.only.iter().any(|name| name == benchmark.name)
        })
        .collect())
}

/// Runs the selected benchmarks and returns the table rows: every headline of the benchmarks
/// that ran, then any figure a benchmark printed that has no headline.
pub fn run(options: &Options) -> anyhow::Result<Vec<Row>> {
    let benchmarks = selected(options)?;
    for benchmark in &benchmarks {
        ensure_programs(benchmark)?;
    }
    if benchmarks.iter().any(|benchmark| benchmark.mcp_servers) {
        crate::mcp_servers::ensure(&crate::project_root())?;
    }
    let mut measurements = Vec::new();
    for benchmark in &benchmarks {
        measurements.extend(run_one(benchmark, options.quick)?);
    }
    let headlines: Vec<Headline> = HEADLINES
        .into_iter()
        .filter(|headline| {
            benchmarks
                .iter()
                .any(|benchmark| benchmark.name == headline.benchmark)
        })
        .collect();
    Ok(rows(&headlines, &measurements))
}

/// Installs the programs `benchmark` runs when they are missing (or says how to).
fn ensure_programs(benchmark: &Benchmark) -> anyhow::Result<()> {
    if benchmark.programs.is_empty() {
        return Ok(());
    }
    let needed = Needed {
        by: &format!("the `{}` benchmark", benchmark.name),
        packages: benchmark.programs,
    };
    needed.ensure(|| benchmark.programs.iter().all(|program| can_start(program)))
}

/// Runs one benchmark with `cargo bench`, echoing its output, and returns its `BENCH` lines.
#[allow(
    clippy::print_stdout,
    reason = "a benchmark's own report is passed through to the terminal"
)]
fn run_one(benchmark: &Benchmark, quick: bool) -> anyhow::Result<Vec<Measurement>> {
    let args = if quick {
        benchmark.quick_args
    } else {
        benchmark.args
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cargo_args = vec!["bench", "-p", benchmark.package];
    let features = benchmark.features.join(",");
    if !features.is_empty() {
        cargo_args.extend(["--features", features.as_str()]);
    }
    cargo_args.extend(["--bench", benchmark.bench, "--"]);
    cargo_args.extend(args);
    let shown = format!("cargo {}", cargo_args.join(" "));
    let mut command = Command::new(cargo);
    command
        .current_dir(crate::project_root())
        .args(&cargo_args)
        .stdout(Stdio::piped());
    println!("\n==> {}", shown.trim_end());
    let mut child = command
        .spawn()
        .with_context(|| format!("could not start `{shown}`"))?;
    let stdout = child
        .stdout
        .take()
        .context("the benchmark's output was not captured")?;
    let mut measurements = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.with_context(|| format!("reading the output of `{shown}`"))?;
        match Measurement::parse_line(&line) {
            Some(parsed) => measurements.push(parsed.with_context(|| {
                format!("`{shown}` printed a BENCH line xtask cannot read: {line}")
            })?),
            None => println!("{line}"),
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(measurements)
}

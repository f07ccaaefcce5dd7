//! The conformance kit over every sample tool with its default case count, beside the same
//! number of plain `registry.invoke` calls, in one run.
//!
//! Rows, in interleaved rounds:
//!
//! - **kit**: `ToolChecks::run` on a fresh registry of the sample domains (the setup
//!   `architecture-tests` runs: the roster's store and the directory's state as probes,
//!   markers, examples), every invariant on every tool; the goal is a run within 30 s.
//! - **plain invoke**: as many `registry.invoke` calls of `core_get_current_user` as the kit
//!   made, one after another: the calls alone, without the kit's generation, shrinking, audit
//!   reads and probes.
//!
//! Run: `cargo bench -p architecture-tests --bench kit`, or `-- quick` for a short run.
//! `cargo xtask bench` collects the `BENCH` line it prints.

#![allow(clippy::print_stdout, reason = "a benchmark's output is its report")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

#[path = "../../crates/switchboard-cli/benches/shared/quick.rs"]
mod quick;
#[path = "../../crates/switchboard-mounts/benches/mounted/stats.rs"]
#[allow(dead_code, reason = "this bench reads medians only")]
mod stats;

use std::time::{Duration, Instant};

use architecture_tests::kit::{sample_checks, sample_registry};
use serde_json::json;
use switchboard::{CallContext, Initiator, RegistryConfig};

use stats::median;

// Links every sample domain.
use switchboard_domains as _;

/// The goal: one run of the kit over the sample domains within this.
const GOAL: Duration = Duration::from_secs(30);

fn main() -> anyhow::Result<()> {
    let rounds = if quick::asked_for_quick("SWITCHBOARD_BENCH_QUICK") {
        2
    } else {
        5
    };
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(run(rounds))
}

async fn run(rounds: usize) -> anyhow::Result<()> {
    let (mut kit_ns, mut plain_ns) = (Vec::new(), Vec::new());
    let (mut calls, mut tools) = (0, 0);
    for round in 0..rounds {
        let (registry, store) = sample_registry(RegistryConfig::default()).await?;
        let checks = sample_checks(&registry, store);
        let started = Instant::now();
        let report = checks.run().await;
        let kit = started.elapsed();
        anyhow::ensure!(
            report.passed(),
            "the kit failed on the sample domains:\n{report}"
        );
        calls = report.calls;
        tools = report.tools;
        let plain = plain_calls(&registry, calls).await?;
        registry.shutdown().await;
        println!(
            "round {}: kit {:.2} s ({} calls), plain invoke {:.3} s",
            round + 1,
            kit.as_secs_f64(),
            calls,
            plain.as_secs_f64()
        );
        kit_ns.push(kit.as_nanos() as f64);
        plain_ns.push(plain.as_nanos() as f64);
    }
    let kit = median(&mut kit_ns);
    let plain = median(&mut plain_ns);
    println!(
        "the kit over {tools} sample tools, default cases: {:.2} s median over {rounds} rounds, \
         {calls} calls, {:.0} calls/s ({:.1}× the same number of plain invokes); goal within \
         {} s: {}",
        kit / 1e9,
        calls as f64 / (kit / 1e9),
        kit / plain,
        GOAL.as_secs(),
        if kit < GOAL.as_nanos() as f64 {
            "met"
        } else {
            "not met"
        }
    );
    stats::print_headline("kit.sample_domains", kit, plain);
    Ok(())
}

/// `count` plain calls of a read tool, one after another.
async fn plain_calls(registry: &switchboard::ToolRegistry, count: u64) -> anyhow::Result<Duration> {
    let context = CallContext::builder()
        .org("acme")
        .user("alice")
        .role("admin")
        .session("bench")
        .correlation("bench")
        .initiator(Initiator::Human)
        .build();
    let started = Instant::now();
    for _ in 0..count {
        registry
            .invoke("core_get_current_user", json!({}), &context)
            .await?;
    }
    Ok(started.elapsed())
}

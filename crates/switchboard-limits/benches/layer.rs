//! The rate-limit layer's cost when no limit is near: `registry.invoke` of a read tool
//! (`core_get_current_user`) on a registry without layers, and on one with the layer holding
//! a per-organisation, a per-user and a per-tool limit that the run never comes close to.
//!
//! Criterion measures each variant on its own; then a summary runs both in interleaved rounds
//! (so machine noise hits them alike), the order swapped every round, and prints each round's
//! mean call, the medians over rounds, the difference per call and the ratio. Target: the
//! layer adds under 1 µs per call.
//!
//! Run: `cargo bench -p switchboard-limits --bench layer` (`-- nomatch` runs the summary
//! alone).

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    num::NonZeroU32,
    time::{Duration, Instant},
};

use criterion::Criterion;
use serde_json::json;
use switchboard_core::{CallContext, Initiator};
use switchboard_limits::{Limits, RateLimitLayer, Rule, Scope};
use switchboard_registry::ToolRegistry;
// Links the directory domain, whose `core_get_current_user` is the tool measured
// (rust-lang/rust#64731: a crate that is not used is not linked).
use switchboard_domain_directory as _;

const TOOL: &str = "core_get_current_user";
const ROUNDS: usize = 15;
const CALLS_PER_ROUND: u32 = 20_000;

fn context() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .session("bench-session")
        .correlation("bench-correlation")
        .role("admin")
        .initiator(Initiator::Human)
        .build()
}

/// A billion calls a day, all at once if need be: never near in this run.
fn far_away() -> Rule {
    let calls = NonZeroU32::new(1_000_000_000).expect("not zero");
    Rule::new(calls, Duration::from_secs(86_400)).expect("a valid rule")
}

async fn registries() -> (ToolRegistry, ToolRegistry) {
    let plain = ToolRegistry::builder()
        .start()
        .await
        .expect("registry starts");
    let mut limits = Limits {
        per_org: Some(far_away()),
        per_user: Some(far_away()),
        ..Limits::default()
    };
    limits
        .tools
        .insert(TOOL.to_owned(), (far_away(), Scope::User));
    let limited = ToolRegistry::builder()
        .layer(RateLimitLayer::new(&limits))
        .start()
        .await
        .expect("registry starts");
    (plain, limited)
}

async fn invoke(registry: &ToolRegistry, context: &CallContext) {
    let result = registry.invoke(TOOL, black_box(json!({})), context).await;
    black_box(result.expect("invoke works"));
}

/// The mean call of `calls` calls, in nanoseconds.
async fn round(registry: &ToolRegistry, context: &CallContext, calls: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        invoke(registry, context).await;
    }
    start.elapsed().as_nanos() as f64 / f64::from(calls)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (plain, limited) = runtime.block_on(registries());
    let context = context();

    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("invoke, no layer", |b| {
        b.to_async(&runtime).iter(|| invoke(&plain, &context));
    });
    criterion.bench_function("invoke, rate-limit layer", |b| {
        b.to_async(&runtime).iter(|| invoke(&limited, &context));
    });
    criterion.final_summary();

    let (mut without, mut with) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        // Warm both up first.
        round(&plain, &context, CALLS_PER_ROUND / 4).await;
        round(&limited, &context, CALLS_PER_ROUND / 4).await;
        for index in 0..ROUNDS {
            if index % 2 == 0 {
                without.push(round(&plain, &context, CALLS_PER_ROUND).await);
                with.push(round(&limited, &context, CALLS_PER_ROUND).await);
            } else {
                with.push(round(&limited, &context, CALLS_PER_ROUND).await);
                without.push(round(&plain, &context, CALLS_PER_ROUND).await);
            }
            println!(
                "round {index:>2}: no layer {:>8.0} ns, rate-limit layer {:>8.0} ns",
                without[index], with[index]
            );
        }
    });
    let without = median(&mut without);
    let with = median(&mut with);
    let added = with - without;
    println!(
        "BENCH rate-limit layer: invoke {without:.0} ns without, {with:.0} ns with (median of \
         {ROUNDS} rounds of {CALLS_PER_ROUND} calls); adds {added:.0} ns per call, ratio {:.3} \
         (target: under 1000 ns)",
        with / without
    );
}

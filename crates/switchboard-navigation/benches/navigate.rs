//! Navigation, measured in process: a page against the tool call it wraps.
//!
//! `navigate` of the seeded roster week runs the week's list tool through the registry (every
//! check and its audit record), renders the page and decides its actions; the baseline, in the
//! same run, is `invoke` of that list tool with the same range. `execute_action` of
//! `propose_swap` on a worked shift (a proposal: it changes nothing, so it repeats) loads the
//! page, runs the tool and loads the next page; its baseline is `invoke` of the same tool with
//! the same params. The summary runs each figure and its baseline in interleaved rounds, prints
//! medians and ratios, and ends with one `BENCH` line per figure for `cargo xtask bench`.
//!
//! Run: `cargo bench -p switchboard-navigation --bench navigate` (`-- nomatch` for the summary
//! alone).

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use criterion::Criterion;
use serde_json::{Value, json};
use switchboard_core::{CallContext, Initiator};
use switchboard_navigation::Navigator;
use switchboard_registry::ToolRegistry;
use tokio::runtime::Runtime;

// The sample domains, linked so their tools and pages register.
use switchboard_domains as _;

const WEEK: &str = "/roster/weeks/2026-11-23";
/// Monday morning, worked by sam.
const WORKED_SHIFT: &str = "/roster/shifts/acme-2026-11-23-am";

fn context() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("mark")
        .role("manager")
        .session("bench")
        .correlation("bench")
        .initiator(Initiator::Human)
        .build()
}

/// The medians, in nanoseconds, over 31 rounds of the mean time of `runs` runs of `figure` and
/// of `baseline`. The two take turns within each round and swap places every round, so that
/// load which comes and goes hits both alike.
fn paired_medians_ns(
    runtime: &Runtime,
    runs: u32,
    mut figure: impl AsyncFnMut(),
    mut baseline: impl AsyncFnMut(),
) -> (f64, f64) {
    let mut figure_rounds = Vec::new();
    let mut baseline_rounds = Vec::new();
    for round in 0..31 {
        if round % 2 == 0 {
            figure_rounds.push(mean_ns(runtime, runs, &mut figure));
            baseline_rounds.push(mean_ns(runtime, runs, &mut baseline));
        } else {
            baseline_rounds.push(mean_ns(runtime, runs, &mut baseline));
            figure_rounds.push(mean_ns(runtime, runs, &mut figure));
        }
    }
    (median(figure_rounds), median(baseline_rounds))
}

/// The mean time of `runs` runs of `work`, in nanoseconds.
fn mean_ns(runtime: &Runtime, runs: u32, work: &mut impl AsyncFnMut()) -> f64 {
    let started = Instant::now();
    runtime.block_on(async {
        for _ in 0..runs {
            work().await;
        }
    });
    started.elapsed().as_nanos() as f64 / f64::from(runs)
}

fn median(mut rounds: Vec<f64>) -> f64 {
    rounds.sort_by(f64::total_cmp);
    rounds[rounds.len() / 2]
}

/// Prints a headline figure for `cargo xtask bench`.
fn print_figure(id: &str, median: f64, baseline: f64) {
    let figure = json!({"id": id, "median": median, "baseline": baseline, "unit": "ns"});
    println!("BENCH {figure}");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let registry: ToolRegistry = runtime
        .block_on(ToolRegistry::builder().start())
        .expect("the registry starts");
    let navigator = Navigator::new(registry.clone()).expect("the sample pages are valid");
    let context = context();
    let week_range = json!({"from": "2026-11-23", "to": "2026-11-29"});
    let swap = json!({"with_user": "mark"});
    let swap_direct = json!({"shift_id": "acme-2026-11-23-am", "with_user": "mark"});

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    criterion.bench_function("navigate week", |b| {
        b.iter(|| runtime.block_on(navigator.navigate(WEEK, &context)).is_ok())
    });
    criterion.bench_function("invoke roster_list_shifts", |b| {
        b.iter(|| {
            runtime
                .block_on(registry.invoke("roster_list_shifts", week_range.clone(), &context))
                .is_ok()
        })
    });
    criterion.final_summary();

    let (navigate, list) = paired_medians_ns(
        &runtime,
        500,
        async || {
            black_box(navigator.navigate(WEEK, &context).await.is_ok());
        },
        async || {
            black_box(
                registry
                    .invoke("roster_list_shifts", week_range.clone(), &context)
                    .await
                    .is_ok(),
            );
        },
    );
    let (action, direct) = paired_medians_ns(
        &runtime,
        500,
        async || {
            let outcome = navigator
                .execute_action(WORKED_SHIFT, "propose_swap", swap.clone(), None, &context)
                .await;
            black_box(outcome.is_ok());
        },
        async || {
            let output: Result<Value, _> = registry
                .invoke("roster_propose_shift_swap", swap_direct.clone(), &context)
                .await;
            black_box(output.is_ok());
        },
    );
    println!("\nmedians of 31 interleaved rounds of 500 calls, one caller:");
    println!(
        "  navigate {WEEK}: {navigate:.0} ns; invoke roster_list_shifts: {list:.0} ns; {:.2}x (target <= 3x)",
        navigate / list
    );
    println!(
        "  execute_action propose_swap: {action:.0} ns; invoke roster_propose_shift_swap: {direct:.0} ns; +{:.0} ns (target <= +2,000 ns; it loads the page before and after)",
        action - direct
    );
    print_figure("navigate.week", navigate, list);
    print_figure("navigate.execute_action", action, direct);
    runtime.block_on(registry.shutdown());
}

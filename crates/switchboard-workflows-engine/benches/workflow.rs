//! The workflow engine, measured: what it adds to each step over calling the same tools
//! through the registry, how many durable steps per second it makes on SQLite, and what share
//! of a step its checkpoints take.
//!
//! The workflow is ten `tool` steps of `core_get_current_user` (a directory lookup returning
//! four fields), one after the other, run to its end. Its baseline, in the same run, is the
//! same ten `registry.invoke` calls in a loop: the engine's share of a step is the difference.
//! The same workflow runs on the SQLite store (a temporary file, WAL, `synchronous` NORMAL,
//! the default) for the durable figures. A step's checkpoints are also timed alone, on both
//! stores, as the engine commits them: its start (with its params and step count) and its
//! completion (with the tool's real output) in one `RunStore::checkpoint_all`; over the step's
//! time, it is the checkpoints' share (the run's own start and end are left out).
//!
//! One core: everything runs on a current-thread tokio runtime, so the engine, the tools and
//! the store share one thread; the registry's audit writer has a thread of its own, as it has
//! for the baseline. `taskset -c 0 cargo bench …` pins the whole process to one CPU.
//!
//! The summary runs every variant once per round, in an order that turns every round, for
//! 15 rounds (5 with `-- --quick`), prints medians and ratios, and ends with one `BENCH` line
//! per headline figure for `cargo xtask bench`.
//!
//! Run: `cargo bench -p switchboard-workflows-engine --bench workflow` (`-- nomatch` for the
//! summary alone, `-- nomatch --quick` for a short one; `-- NAME --profile-time 10` runs one
//! function alone, for a profiler).

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::json;
use switchboard_workflows::{MemoryRunStore, RunStore};
use switchboard_workflows_engine::Engine;
use switchboard_workflows_sqlite::{SqliteOptions, SqliteRunStore};
use tokio::runtime::Runtime;

// The sample domains, linked so their tools register.
use switchboard_domains as _;

mod support;

use support::{Harness, STEPS, TOOL, Workload, median, print_figure, round_order};

/// Everything the variants need, built once.
struct Fixture {
    workload: Workload,
    memory: Engine,
    sqlite: Engine,
    memory_store: Arc<dyn RunStore>,
    sqlite_store: Arc<dyn RunStore>,
    _directory: tempfile::TempDir,
}

impl Fixture {
    async fn new() -> Self {
        let workload = Workload::new().await;
        let directory = tempfile::tempdir().expect("a temporary directory");
        let memory_store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        let sqlite_store: Arc<dyn RunStore> = Arc::new(
            SqliteRunStore::open_with(directory.path().join("runs.db"), SqliteOptions::default())
                .expect("the SQLite run store opens"),
        );
        Self {
            memory: workload.engine(&memory_store),
            sqlite: workload.engine(&sqlite_store),
            workload,
            memory_store,
            sqlite_store,
            _directory: directory,
        }
    }

    /// The baseline: the workflow's calls in a loop.
    async fn invoke_steps(&self) {
        let workload = &self.workload;
        for _ in 0..STEPS {
            let output = workload
                .registry
                .invoke(TOOL, json!({}), &workload.context)
                .await;
            black_box(output.expect("the tool answers"));
        }
    }
}

/// The variants of the summary.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    MemoryWorkflow,
    InvokeLoop,
    SqliteWorkflow,
    MemoryCheckpoints,
    SqliteCheckpoints,
}

impl Variant {
    const ALL: [Variant; 5] = [
        Variant::MemoryWorkflow,
        Variant::InvokeLoop,
        Variant::SqliteWorkflow,
        Variant::MemoryCheckpoints,
        Variant::SqliteCheckpoints,
    ];
}

/// What one round of one variant measured: the time of each of its runs (a workflow run,
/// ten invokes, or one step's two checkpoints), and the round's wall time.
#[derive(Default)]
struct Round {
    runs: Vec<Duration>,
    wall: Duration,
}

impl Round {
    /// The mean per step, in nanoseconds (a checkpoint round: per checkpoint).
    fn mean_ns(&self, per_run: u32) -> f64 {
        self.wall.as_nanos() as f64 / (self.runs.len() as f64 * f64::from(per_run))
    }
}

async fn measure(fixture: &Fixture, variant: Variant, runs: u32) -> Round {
    let mut round = Round::default();
    let workload = &fixture.workload;
    let memory_run = workload.running_run(&fixture.memory_store);
    let sqlite_run = workload.running_run(&fixture.sqlite_store);
    let started = Instant::now();
    for number in 1..=runs {
        let run_started = Instant::now();
        match variant {
            Variant::MemoryWorkflow => {
                workload.run_workflow(&fixture.memory).await;
            }
            Variant::InvokeLoop => fixture.invoke_steps().await,
            Variant::SqliteWorkflow => {
                workload.run_workflow(&fixture.sqlite).await;
            }
            Variant::MemoryCheckpoints => {
                workload.checkpoint_step(&fixture.memory_store, memory_run, number);
            }
            Variant::SqliteCheckpoints => {
                workload.checkpoint_step(&fixture.sqlite_store, sqlite_run, number);
            }
        }
        round.runs.push(run_started.elapsed());
    }
    round.wall = started.elapsed();
    round
}

fn summary(runtime: &Runtime, fixture: &Fixture, quick: bool) {
    let (rounds, runs) = if quick { (5, 50) } else { (15, 200) };
    let mut measured: Vec<Vec<Round>> = Variant::ALL.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for variant in round_order(&Variant::ALL, round) {
            // A checkpoint round writes as many steps as a workflow round runs.
            let count = match variant {
                Variant::MemoryCheckpoints | Variant::SqliteCheckpoints => runs * STEPS,
                _ => runs,
            };
            measured[variant as usize].push(runtime.block_on(measure(fixture, variant, count)));
        }
    }
    let per_step = |variant: Variant, per_run: u32| {
        median(
            measured[variant as usize]
                .iter()
                .map(|round| round.mean_ns(per_run))
                .collect(),
        )
    };
    let memory_step = per_step(Variant::MemoryWorkflow, STEPS);
    let invoke_step = per_step(Variant::InvokeLoop, STEPS);
    let sqlite_step = per_step(Variant::SqliteWorkflow, STEPS);
    // Each checkpoint round times one step's two checkpoints, one commit, per run.
    let memory_share = per_step(Variant::MemoryCheckpoints, 1);
    let sqlite_share = per_step(Variant::SqliteCheckpoints, 1);
    let steps_per_second = |variant: Variant| {
        median(
            measured[variant as usize]
                .iter()
                .map(|round| round.runs.len() as f64 * f64::from(STEPS) / round.wall.as_secs_f64())
                .collect(),
        )
    };
    let sqlite_rate = steps_per_second(Variant::SqliteWorkflow);
    let memory_rate = steps_per_second(Variant::MemoryWorkflow);
    let median_run_step = |variant: Variant| {
        median(
            measured[variant as usize]
                .iter()
                .flat_map(|round| &round.runs)
                .map(|run| run.as_nanos() as f64 / f64::from(STEPS))
                .collect(),
        )
    };
    let sqlite_median_step = median_run_step(Variant::SqliteWorkflow);
    let memory_median_step = median_run_step(Variant::MemoryWorkflow);
    println!(
        "\nmedians of {rounds} interleaved rounds of {runs} runs of a {STEPS}-step workflow of \
         `{TOOL}`, one thread:"
    );
    println!(
        "  engine, memory store: {:.2} µs/step; {STEPS} invokes in a loop: {:.2} µs/step; \
         +{:.2} µs/step (target <= +5 µs), {:.2}x",
        memory_step / 1e3,
        invoke_step / 1e3,
        (memory_step - invoke_step) / 1e3,
        memory_step / invoke_step
    );
    println!(
        "  engine, SQLite store (WAL, NORMAL): {sqlite_rate:.0} steps/s (target >= 5,000; \
         memory store: {memory_rate:.0}); median step {:.1} µs (target <= 200 µs; memory \
         store: {:.1} µs), each the median run's time / {STEPS}",
        sqlite_median_step / 1e3,
        memory_median_step / 1e3,
    );
    println!(
        "  a step's checkpoints alone (start and completion, one commit), memory: {:.2} µs, \
         {:.0}% of a {:.2} µs step",
        memory_share / 1e3,
        100.0 * memory_share / memory_step,
        memory_step / 1e3,
    );
    println!(
        "  a step's checkpoints alone (start and completion, one commit), SQLite: {:.2} µs, \
         {:.0}% of a {:.2} µs step (the run's own start and end, 0.3 commits per step, left \
         out)",
        sqlite_share / 1e3,
        100.0 * sqlite_share / sqlite_step,
        sqlite_step / 1e3,
    );
    print_figure("workflow.memory_step", memory_step, invoke_step, "ns");
    print_figure("workflow.sqlite_rate", sqlite_rate, memory_rate, "steps/s");
    print_figure(
        "workflow.sqlite_step",
        sqlite_median_step,
        memory_median_step,
        "ns",
    );
    print_figure(
        "workflow.checkpoint_memory",
        memory_share,
        memory_step,
        "ns",
    );
    print_figure(
        "workflow.checkpoint_sqlite",
        sqlite_share,
        sqlite_step,
        "ns",
    );
}

fn main() {
    let harness = Harness::new();
    let fixture = harness.runtime.block_on(Fixture::new());
    harness.run(
        &fixture.workload,
        |criterion, runtime| {
            criterion.bench_function("workflow of 10 reads, memory store", |b| {
                b.iter(|| runtime.block_on(fixture.workload.run_workflow(&fixture.memory)))
            });
            criterion.bench_function("10 invokes in a loop", |b| {
                b.iter(|| runtime.block_on(fixture.invoke_steps()))
            });
            criterion.bench_function("workflow of 10 reads, SQLite store", |b| {
                b.iter(|| runtime.block_on(fixture.workload.run_workflow(&fixture.sqlite)))
            });
        },
        |runtime, quick| summary(runtime, &fixture, quick),
    );
}

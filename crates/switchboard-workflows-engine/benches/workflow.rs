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

use criterion::Criterion;
use jiff::Timestamp;
use serde_json::{Value, json};
use switchboard_core::{CallContext, Initiator};
use switchboard_registry::ToolRegistry;
use switchboard_workflows::{
    Checkpoint, Definition, MemoryRunStore, NodeBuilder, NodeEvent, NodePath, NodeState, RunChange,
    RunId, RunRecord, RunState, RunStore, StepKey, StepRecord, WorkflowBuilder, WorkflowEvent,
};
use switchboard_workflows_engine::{Engine, EngineOptions};
use switchboard_workflows_sqlite::{SqliteOptions, SqliteRunStore};
use tokio::runtime::Runtime;

// The sample domains, linked so their tools register.
use switchboard_domains as _;

/// The tool every step calls.
const TOOL: &str = "core_get_current_user";
/// The workflow's steps.
const STEPS: u32 = 10;

fn context() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .role("admin")
        .session("bench")
        .correlation("bench")
        .initiator(Initiator::Human)
        .build()
}

/// Ten `TOOL` steps, one after the other.
fn ten_reads(registry: &ToolRegistry) -> Arc<Definition> {
    let mut builder = WorkflowBuilder::new("ten_reads");
    for step in 1..=STEPS {
        builder = builder.node(NodeBuilder::tool(format!("read_{step}"), TOOL).params(json!({})));
    }
    Arc::new(
        builder
            .build(&registry.list())
            .expect("the benchmark's workflow is valid"),
    )
}

/// Everything the variants need, built once.
struct Fixture {
    registry: ToolRegistry,
    context: CallContext,
    definition: Arc<Definition>,
    memory: Engine,
    sqlite: Engine,
    memory_store: Arc<dyn RunStore>,
    sqlite_store: Arc<dyn RunStore>,
    /// The tool's output, as a completed step stores it.
    output: Value,
    _directory: tempfile::TempDir,
}

impl Fixture {
    async fn new() -> Self {
        let registry = ToolRegistry::builder()
            .start()
            .await
            .expect("the registry starts");
        let context = context();
        let definition = ten_reads(&registry);
        let directory = tempfile::tempdir().expect("a temporary directory");
        let memory_store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        let sqlite_store: Arc<dyn RunStore> = Arc::new(
            SqliteRunStore::open_with(directory.path().join("runs.db"), SqliteOptions::default())
                .expect("the SQLite run store opens"),
        );
        let engine = |store: &Arc<dyn RunStore>| {
            Engine::new(
                registry.clone(),
                Arc::clone(store),
                EngineOptions::default(),
            )
        };
        let output = registry
            .invoke(TOOL, json!({}), &context)
            .await
            .expect("the tool answers");
        Self {
            memory: engine(&memory_store),
            sqlite: engine(&sqlite_store),
            registry,
            context,
            definition,
            memory_store,
            sqlite_store,
            output,
            _directory: directory,
        }
    }

    /// Runs the workflow to its end on `engine`, and checks it completed.
    async fn run_workflow(&self, engine: &Engine) -> RunId {
        let outcome = engine
            .run_to_end(Arc::clone(&self.definition), json!({}), &self.context)
            .await
            .expect("the run starts");
        assert_eq!(
            outcome.state,
            RunState::Completed,
            "the benchmark's run failed"
        );
        outcome.run
    }

    /// The baseline: the workflow's calls in a loop.
    async fn invoke_steps(&self) {
        for _ in 0..STEPS {
            let output = self.registry.invoke(TOOL, json!({}), &self.context).await;
            black_box(output.expect("the tool answers"));
        }
    }
}

/// A run in `store` to write step checkpoints to, as the engine has it once it runs.
fn running_run(fixture: &Fixture, store: &Arc<dyn RunStore>) -> RunId {
    let now = Timestamp::now();
    let record = RunRecord {
        id: RunId::new(),
        org_id: fixture.context.verify().expect("a full context").org_id,
        workflow: "ten_reads".to_owned(),
        definition: Arc::clone(&fixture.definition.document),
        input: json!({}),
        caller: fixture.context.clone(),
        parent: None,
        state: RunState::Running,
        output: None,
        wake_at: None,
        steps_taken: 0,
        created_at: now,
        updated_at: now,
    };
    store.create_run(&record).expect("the run is stored");
    record.id
}

/// Writes the two checkpoints of step `number` of `run`, its start and its completion, in one
/// `checkpoint_all` as the engine commits a step's completion with the next step's start.
fn checkpoint_step(fixture: &Fixture, store: &Arc<dyn RunStore>, run: RunId, number: u32) {
    let now = Timestamp::now();
    let path = NodePath::new(format!("read_{number}"));
    let mut step = StepRecord {
        key: StepKey {
            run,
            path: path.clone(),
            iteration: 0,
        },
        state: NodeState::Running { attempt: 1 },
        params: Some(json!({})),
        output: None,
        error: None,
        completed_seq: None,
        started_at: now,
        updated_at: now,
    };
    let start = Checkpoint {
        run,
        at: now,
        run_change: Some(RunChange {
            from: RunState::Running,
            to: RunState::Running,
            output: None,
            wake_at: None,
            steps_taken: number,
        }),
        event: WorkflowEvent::Node {
            path: path.clone(),
            iteration: 0,
            event: NodeEvent::Start,
            state: step.state.clone(),
            retry_at: None,
        },
        step: Some(step.clone()),
        fence: None,
    };
    step.state = NodeState::Completed;
    step.output = Some(fixture.output.clone());
    step.completed_seq = Some(u64::from(number));
    let complete = Checkpoint {
        run,
        at: now,
        run_change: None,
        event: WorkflowEvent::Node {
            path,
            iteration: 0,
            event: NodeEvent::Complete,
            state: NodeState::Completed,
            retry_at: None,
        },
        step: Some(step),
        fence: None,
    };
    black_box(
        store
            .checkpoint_all(&[start, complete])
            .expect("the step is written"),
    );
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
    let memory_run = running_run(fixture, &fixture.memory_store);
    let sqlite_run = running_run(fixture, &fixture.sqlite_store);
    let started = Instant::now();
    for number in 1..=runs {
        let run_started = Instant::now();
        match variant {
            Variant::MemoryWorkflow => {
                fixture.run_workflow(&fixture.memory).await;
            }
            Variant::InvokeLoop => fixture.invoke_steps().await,
            Variant::SqliteWorkflow => {
                fixture.run_workflow(&fixture.sqlite).await;
            }
            Variant::MemoryCheckpoints => {
                checkpoint_step(fixture, &fixture.memory_store, memory_run, number);
            }
            Variant::SqliteCheckpoints => {
                checkpoint_step(fixture, &fixture.sqlite_store, sqlite_run, number);
            }
        }
        round.runs.push(run_started.elapsed());
    }
    round.wall = started.elapsed();
    round
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Prints a headline figure for `cargo xtask bench`.
fn print_figure(id: &str, median: f64, baseline: f64, unit: &str) {
    let figure = json!({"id": id, "median": median, "baseline": baseline, "unit": unit});
    println!("BENCH {figure}");
}

fn summary(runtime: &Runtime, fixture: &Fixture, quick: bool) {
    let (rounds, runs) = if quick { (5, 50) } else { (15, 200) };
    let mut measured: Vec<Vec<Round>> = Variant::ALL.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        let mut order = Variant::ALL.to_vec();
        order.rotate_left(round % Variant::ALL.len());
        if round % 2 == 1 {
            order.reverse();
        }
        for variant in order {
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let fixture = runtime.block_on(Fixture::new());
    // Criterion's own `--quick` shortens its runs; the summary takes it too.
    let quick = std::env::args().any(|argument| argument == "--quick");
    // Under a profiler (`--profile-time N`), criterion runs the chosen function alone: the
    // summary would only blur the profile.
    let profiling = std::env::args().any(|argument| argument == "--profile-time");

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    criterion.bench_function("workflow of 10 reads, memory store", |b| {
        b.iter(|| runtime.block_on(fixture.run_workflow(&fixture.memory)))
    });
    criterion.bench_function("10 invokes in a loop", |b| {
        b.iter(|| runtime.block_on(fixture.invoke_steps()))
    });
    criterion.bench_function("workflow of 10 reads, SQLite store", |b| {
        b.iter(|| runtime.block_on(fixture.run_workflow(&fixture.sqlite)))
    });
    criterion.final_summary();

    if !profiling {
        summary(&runtime, &fixture, quick);
    }
    runtime.block_on(fixture.registry.shutdown());
}

//! What the workflow benchmarks share: the workload (ten `tool` steps of one directory lookup,
//! run to their end by an engine), a step's two checkpoints written as the engine commits them,
//! the order of the interleaved rounds, and the figures' medians and `BENCH` lines.
//!
//! Two benchmarks use it: this crate's `workflow` (the engine on the memory and SQLite stores)
//! and `switchboard-workflows-postgres`'s `checkpoint` (PostgreSQL beside SQLite), which
//! includes this file by its path, so that both time exactly the same step.

use std::{hint::black_box, sync::Arc, time::Duration};

use criterion::Criterion;
use jiff::Timestamp;
use serde_json::{Value, json};
use switchboard_core::{CallContext, Initiator};
use switchboard_registry::ToolRegistry;
use switchboard_workflows::{
    Checkpoint, Definition, NodeBuilder, NodeEvent, NodePath, NodeState, RunChange, RunId,
    RunRecord, RunState, RunStore, StepKey, StepRecord, WorkflowBuilder, WorkflowEvent,
};
use switchboard_workflows_engine::{Engine, EngineOptions};
use tokio::runtime::Runtime;

/// The tool every step calls.
pub(crate) const TOOL: &str = "core_get_current_user";
/// The workflow's steps.
pub(crate) const STEPS: u32 = 10;

/// What a benchmark's `main` starts with: one thread, criterion, and how it was asked to run.
pub(crate) struct Harness {
    /// A current-thread runtime: the engine, the tools and the store share one thread.
    pub(crate) runtime: Runtime,
    /// Criterion, half a second of warm-up and two seconds measured per function, then the
    /// command line's options.
    criterion: Criterion,
    /// `--quick`: criterion's own option, which shortens its runs; the summary takes it too.
    quick: bool,
    /// `--profile-time N`: criterion runs the chosen function alone, for a profiler, and the
    /// summary would only blur the profile.
    profiling: bool,
}

impl Harness {
    /// The runtime, criterion and the options of this run.
    pub(crate) fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let criterion = Criterion::default()
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .configure_from_args();
        Self {
            runtime,
            criterion,
            quick: std::env::args().any(|argument| argument == "--quick"),
            profiling: std::env::args().any(|argument| argument == "--profile-time"),
        }
    }

    /// Runs `functions` under criterion, then `summary` (told whether the run is `--quick`)
    /// unless criterion is profiling, then stops `workload`'s registry.
    pub(crate) fn run(
        mut self,
        workload: &Workload,
        functions: impl FnOnce(&mut Criterion, &Runtime),
        summary: impl FnOnce(&Runtime, bool),
    ) {
        functions(&mut self.criterion, &self.runtime);
        self.criterion.final_summary();
        if !self.profiling {
            summary(&self.runtime, self.quick);
        }
        self.runtime.block_on(workload.registry.shutdown());
    }
}

/// The registry, the caller and the workflow every variant runs, built once.
pub(crate) struct Workload {
    pub(crate) registry: ToolRegistry,
    pub(crate) context: CallContext,
    definition: Arc<Definition>,
    /// The tool's output, as a completed step stores it.
    output: Value,
}

impl Workload {
    /// Starts the registry, builds the workflow and calls the tool once for its output.
    pub(crate) async fn new() -> Self {
        let registry = ToolRegistry::builder()
            .start()
            .await
            .expect("the registry starts");
        let context = CallContext::builder()
            .org("acme")
            .user("alice")
            .role("admin")
            .session("bench")
            .correlation("bench")
            .initiator(Initiator::Human)
            .build();
        let definition = ten_reads(&registry);
        let output = registry
            .invoke(TOOL, json!({}), &context)
            .await
            .expect("the tool answers");
        Self {
            registry,
            context,
            definition,
            output,
        }
    }

    /// An engine with the default options over the registry and `store`.
    pub(crate) fn engine(&self, store: &Arc<dyn RunStore>) -> Engine {
        Engine::new(
            self.registry.clone(),
            Arc::clone(store),
            EngineOptions::default(),
        )
    }

    /// Runs the workflow to its end on `engine`, and checks it completed.
    pub(crate) async fn run_workflow(&self, engine: &Engine) -> RunId {
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

    /// A run in `store` to write step checkpoints to, as the engine has it once it runs.
    pub(crate) fn running_run(&self, store: &Arc<dyn RunStore>) -> RunId {
        let now = Timestamp::now();
        let record = RunRecord {
            id: RunId::new(),
            org_id: self.context.verify().expect("a full context").org_id,
            workflow: "ten_reads".to_owned(),
            definition: Arc::clone(&self.definition.document),
            input: json!({}),
            caller: self.context.clone(),
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

    /// Writes the two checkpoints of step `number` of `run`, its start and its completion, in
    /// one `checkpoint_all` as the engine commits a step's completion with the next step's
    /// start.
    pub(crate) fn checkpoint_step(&self, store: &Arc<dyn RunStore>, run: RunId, number: u32) {
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
            questions: Vec::new(),
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
        step.output = Some(self.output.clone());
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

/// The order the variants run in during round `round`: turned by one every round, and
/// reversed every other round, so that no variant always follows the same one.
pub(crate) fn round_order<T: Copy>(all: &[T], round: usize) -> Vec<T> {
    let mut order = all.to_vec();
    order.rotate_left(round % all.len());
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Prints a headline figure for `cargo xtask bench`.
pub(crate) fn print_figure(id: &str, median: f64, baseline: f64, unit: &str) {
    let figure = json!({"id": id, "median": median, "baseline": baseline, "unit": unit});
    println!("BENCH {figure}");
}

//! The hot path, measured: a tool called directly, through the registry (typed and JSON), and
//! through the orchestrator, with 1 caller and with 64 concurrent callers, in one run.
//!
//! Criterion measures each variant on its own; then a summary interleaves all variants round by
//! round (so machine noise hits them alike) and prints medians, p99, throughput, and the
//! headline figures: JSON invoke against the direct JSON call (target: adds at most 2 µs
//! median) and the typed registry call against the direct typed call (reported, no target). The
//! audit store's own cost is isolated by running JSON invoke once more against a store that
//! only counts records. Last, ten contended JSON phases back to back, timed until every audit
//! record is written: a 64-caller phase of the summary fits in the audit queue, so that figure
//! shows the pace the audit writer keeps up with over a longer stretch.
//!
//! Run: `cargo bench -p switchboard --bench invoke` (`-- nomatch`, a filter that matches no
//! criterion benchmark, runs the summary alone). `cargo xtask bench` collects the `BENCH`
//! lines the summary prints.

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use criterion::Criterion;
use serde_json::{Value, json};
use switchboard::{
    CallContext, Category, Initiator, NoInput, Switchboard, ToolContext, ToolRegistry,
    audit::{AuditError, AuditQuery, AuditRecord, AuditStats, AuditStore},
};
use switchboard_core::DomainCell;
use switchboard_domain_directory::{DirectoryState, GetCurrentUser, get_current_user};
use tokio::runtime::Runtime;

/// The number of concurrent callers in the contended runs.
const CALLERS: usize = 64;

/// An audit store that counts records and keeps none: the invoke path minus the audit table.
#[derive(Default)]
struct CountingStore(AtomicU64);

impl AuditStore for CountingStore {
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        for record in records {
            record.id = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        }
        Ok(())
    }

    fn query(&self, _query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        Ok(Vec::new())
    }

    fn delete_before(&self, _cutoff: jiff::Timestamp, _limit: usize) -> Result<u64, AuditError> {
        Ok(0)
    }

    fn stats(&self) -> AuditStats {
        AuditStats {
            appended: self.0.load(Ordering::Relaxed),
            ..AuditStats::default()
        }
    }
}

/// Everything the variants need, built once.
#[derive(Clone)]
struct Fixture {
    context: CallContext,
    tool_context: Arc<ToolContext<DirectoryState>>,
    runtime: Switchboard,
    registry_without_audit_table: ToolRegistry,
}

impl Fixture {
    async fn new() -> Self {
        let context = CallContext::builder()
            .org("acme")
            .user("alice")
            .session("bench-session")
            .correlation("bench-correlation")
            .role("admin")
            .initiator(Initiator::Human)
            .build();
        let caller = context.verify().expect("complete context");
        let cell = DomainCell::standalone("core", DirectoryState::seeded());
        let tool_context = Arc::new(ToolContext::new(
            caller,
            "core_get_current_user",
            Category::Read,
            cell,
        ));
        let runtime = Switchboard::start(ToolRegistry::builder())
            .await
            .expect("runtime starts");
        let registry_without_audit_table = ToolRegistry::builder()
            .audit_store(Arc::new(CountingStore::default()))
            .start()
            .await
            .expect("registry starts");
        Self {
            context,
            tool_context,
            runtime,
            registry_without_audit_table,
        }
    }
}

/// One way of calling `core_get_current_user`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    DirectTyped,
    DirectJson,
    RegistryTyped,
    RegistryJson,
    RegistryJsonNoAuditTable,
    OrchestratorAsk,
}

impl Variant {
    const ALL: [Variant; 6] = [
        Variant::DirectTyped,
        Variant::DirectJson,
        Variant::RegistryTyped,
        Variant::RegistryJson,
        Variant::RegistryJsonNoAuditTable,
        Variant::OrchestratorAsk,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::DirectTyped => "direct call, typed",
            Variant::DirectJson => "direct call, JSON in/out",
            Variant::RegistryTyped => "registry.call::<T> (typed)",
            Variant::RegistryJson => "registry.invoke (JSON)",
            Variant::RegistryJsonNoAuditTable => "registry.invoke, counting store",
            Variant::OrchestratorAsk => "orchestrator.ask",
        }
    }

    async fn run(self, fixture: &Fixture) {
        match self {
            Variant::DirectTyped => {
                let user = get_current_user(&fixture.tool_context, NoInput {}).await;
                black_box(user.expect("direct call works"));
            }
            Variant::DirectJson => {
                let params: Value = black_box(json!({}));
                let input: NoInput = serde_json::from_value(params).expect("valid input");
                let user = get_current_user(&fixture.tool_context, input)
                    .await
                    .expect("direct call works");
                black_box(serde_json::to_value(user).expect("serializable"));
            }
            Variant::RegistryTyped => {
                let user = fixture
                    .runtime
                    .registry
                    .call::<GetCurrentUser>(NoInput {}, &fixture.context)
                    .await;
                black_box(user.expect("typed call works"));
            }
            Variant::RegistryJson => invoke_json(&fixture.runtime.registry, fixture).await,
            Variant::RegistryJsonNoAuditTable => {
                invoke_json(&fixture.registry_without_audit_table, fixture).await;
            }
            Variant::OrchestratorAsk => {
                let answer = fixture
                    .runtime
                    .orchestrator
                    .ask(black_box("who am i"), &fixture.context)
                    .await;
                black_box(answer.expect("ask works"));
            }
        }
    }
}

/// `registry.invoke` of the benchmarked tool with empty params.
async fn invoke_json(registry: &ToolRegistry, fixture: &Fixture) {
    let result = registry
        .invoke(
            "core_get_current_user",
            black_box(json!({})),
            &fixture.context,
        )
        .await;
    black_box(result.expect("invoke works"));
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Runs `calls` calls of `variant` spread over `callers` concurrent tasks; returns the wall time.
async fn contended(fixture: &Fixture, variant: Variant, callers: usize, calls: u64) -> Duration {
    let per_caller = calls.div_ceil(callers as u64);
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let fixture = fixture.clone();
            tokio::spawn(async move {
                for _ in 0..per_caller {
                    variant.run(&fixture).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("caller task");
    }
    started.elapsed()
}

fn criterion_benches(criterion: &mut Criterion, runtime: &Runtime, fixture: &Fixture) {
    let mut group = criterion.benchmark_group("core_get_current_user");
    for variant in Variant::ALL {
        group.bench_function(format!("1 caller/{}", variant.name()), |bench| {
            bench.to_async(runtime).iter(|| variant.run(fixture));
        });
        group.bench_function(format!("{CALLERS} callers/{}", variant.name()), |bench| {
            bench.to_async(runtime).iter_custom(|calls| async move {
                contended(fixture, variant, CALLERS, calls.max(CALLERS as u64)).await
            });
        });
    }
    group.finish();
}

/// Per-call latencies of one variant, one caller, measured call by call.
async fn latencies(fixture: &Fixture, variant: Variant, samples: usize, into: &mut Vec<f64>) {
    for _ in 0..samples {
        let started = Instant::now();
        variant.run(fixture).await;
        into.push(started.elapsed().as_nanos() as f64);
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile(values, 0.5)
}

struct Summary {
    median_ns: f64,
    p99_ns: f64,
    throughput_1: f64,
    throughput_64: f64,
}

fn summary(runtime: &Runtime, fixture: &Fixture) {
    const ROUNDS: usize = 15;
    const SAMPLES: usize = 2_000;
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); Variant::ALL.len()];
    let mut single: Vec<Vec<f64>> = vec![Vec::new(); Variant::ALL.len()];
    let mut many: Vec<Vec<f64>> = vec![Vec::new(); Variant::ALL.len()];
    runtime.block_on(async {
        for _ in 0..ROUNDS {
            for (index, variant) in Variant::ALL.into_iter().enumerate() {
                latencies(fixture, variant, SAMPLES, &mut samples[index]).await;
                let started = Instant::now();
                contended(fixture, variant, 1, CONTENDED_CALLS / 4).await;
                single[index].push((CONTENDED_CALLS / 4) as f64 / started.elapsed().as_secs_f64());
                let elapsed = contended(fixture, variant, CALLERS, CONTENDED_CALLS).await;
                many[index].push(CONTENDED_CALLS as f64 / elapsed.as_secs_f64());
            }
        }
    });
    let sustained = runtime.block_on(sustained_invoke(fixture));
    let results: Vec<Summary> = (0..Variant::ALL.len())
        .map(|index| {
            let latencies = &mut samples[index];
            latencies.sort_by(f64::total_cmp);
            Summary {
                median_ns: percentile(latencies, 0.5),
                p99_ns: percentile(latencies, 0.99),
                throughput_1: median(&mut single[index]),
                throughput_64: median(&mut many[index]),
            }
        })
        .collect();
    let of =
        |variant: Variant| &results[Variant::ALL.iter().position(|v| *v == variant).unwrap_or(0)];

    println!();
    println!(
        "Summary: {ROUNDS} interleaved rounds; latency from {} single-caller calls per variant; throughput medians over rounds",
        ROUNDS * SAMPLES
    );
    println!(
        "{:<34} {:>10} {:>10} {:>14} {:>14} {:>8}",
        "variant", "median", "p99", "1 caller/s", "64 callers/s", "64/1"
    );
    for (variant, result) in Variant::ALL.iter().zip(&results) {
        println!(
            "{:<34} {:>8.0}ns {:>8.0}ns {:>14.0} {:>14.0} {:>7.2}x",
            variant.name(),
            result.median_ns,
            result.p99_ns,
            result.throughput_1,
            result.throughput_64,
            result.throughput_64 / result.throughput_1
        );
    }
    let direct_json = of(Variant::DirectJson);
    let direct_typed = of(Variant::DirectTyped);
    let invoke = of(Variant::RegistryJson);
    let typed = of(Variant::RegistryTyped);
    let counting = of(Variant::RegistryJsonNoAuditTable);
    let added = invoke.median_ns - direct_json.median_ns;
    let typed_ratio = typed.median_ns / direct_typed.median_ns;
    println!();
    println!(
        "JSON invoke adds {added:.0} ns median over the direct JSON call (target <= 2000 ns): {}",
        if added <= 2_000.0 { "met" } else { "NOT met" }
    );
    println!("typed registry call / direct typed call = {typed_ratio:.2}x (reported, no target)");
    println!(
        "audit table cost: invoke with the memory table {:.0} ns vs a counting store {:.0} ns median ({:+.0} ns)",
        invoke.median_ns,
        counting.median_ns,
        invoke.median_ns - counting.median_ns
    );
    println!(
        "sustained: {CALLERS} callers, {SUSTAINED_PHASES} x {CONTENDED_CALLS} JSON invokes back to back until every record is written: \
         {sustained:.0} calls/s = {:.2}x one caller's (not a target; the phases above fit in the audit queue, these do not)",
        sustained / invoke.throughput_1
    );
    print_headline("invoke.json", invoke.median_ns, direct_json.median_ns);
    print_headline("invoke.typed", typed.median_ns, direct_typed.median_ns);
}

/// A headline figure and its baseline from this run, as the line `cargo xtask bench` collects.
fn print_headline(id: &str, median_ns: f64, baseline_ns: f64) {
    let figure = json!({ "id": id, "median": median_ns, "baseline": baseline_ns, "unit": "ns" });
    println!("BENCH {figure}");
}

/// Calls per contended phase of the summary: all callers together.
const CONTENDED_CALLS: u64 = 64_000;

/// Back-to-back phases of the summary's contended JSON invoke, timed until the audit log has
/// written every record. The summary's own 64-caller phase (64,000 calls) fits in the audit
/// queue (65,536 records), so the writer can finish it after the phase is timed; this measures
/// the pace the writer keeps up with.
const SUSTAINED_PHASES: u64 = 10;

async fn sustained_invoke(fixture: &Fixture) -> f64 {
    let audit = fixture.runtime.registry.audit();
    audit.flush().await;
    let started = Instant::now();
    for _ in 0..SUSTAINED_PHASES {
        contended(fixture, Variant::RegistryJson, CALLERS, CONTENDED_CALLS).await;
    }
    audit.flush().await;
    (SUSTAINED_PHASES * CONTENDED_CALLS) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let runtime = runtime();
    let fixture = runtime.block_on(Fixture::new());
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    criterion_benches(&mut criterion, &runtime, &fixture);
    criterion.final_summary();
    summary(&runtime, &fixture);
    runtime.block_on(fixture.runtime.shutdown());
}

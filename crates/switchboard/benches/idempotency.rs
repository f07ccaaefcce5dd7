//! The price of exactly-once mutations, measured in one run: a plain read call, an execute
//! call (which always goes through the idempotency check: a fresh key each time), the
//! idempotency check alone (params digest, claim, complete, on the in-memory store), a replay
//! (a retry with a known key), and a proposal round trip (propose as an agent, approve as a
//! human).
//!
//! Criterion measures each variant; then a summary interleaves them round by round and prints
//! medians and the ratio the target is stated in (the check adds at most 1 µs median to an
//! execute call). The tools do no work and write nothing, so the runtime's share is all there
//! is to see.
//!
//! Run: `cargo bench -p switchboard --bench idempotency` (`-- nomatch` for the summary alone).

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

use criterion::{BatchSize, Criterion};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard::{
    ActionId, CallContext, IdempotencyKey, Initiator, OrgId, RegistryConfig, ToolContext,
    ToolError, ToolInput, ToolRegistry, audit::digest_json,
};
use switchboard_approvals::{
    Claim, Fingerprint, IdempotencyScope, IdempotencyStore, MemoryIdempotencyStore, StoredOutcome,
    new_action_id,
};
use tokio::runtime::Runtime;
use validator::Validate;

switchboard::domain! {
    /// Tools that do nothing, to measure the runtime around them.
    Bench { name: "bench" }
}

/// A number.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
struct Number {
    /// The number.
    n: u64,
}

/// Returns its input (read).
#[switchboard::tool(domain = Bench, category = read, permission = "bench.read")]
async fn echo(_ctx: &ToolContext, input: Number) -> Result<u64, ToolError> {
    Ok(input.n)
}

/// Returns its input (execute, writes nothing).
#[switchboard::tool(domain = Bench, category = execute, permission = "bench.run")]
async fn run(_ctx: &ToolContext, input: Number) -> Result<u64, ToolError> {
    Ok(input.n)
}

static NEXT_KEY: AtomicU64 = AtomicU64::new(0);

fn fresh_key() -> IdempotencyKey {
    IdempotencyKey::new(format!(
        "bench-{}",
        NEXT_KEY.fetch_add(1, Ordering::Relaxed)
    ))
}

#[derive(Clone)]
struct Fixture {
    registry: ToolRegistry,
    human: CallContext,
    agent: CallContext,
    store: Arc<MemoryIdempotencyStore>,
    org_id: OrgId,
    tool_name: Arc<str>,
    params: Value,
}

impl Fixture {
    async fn new() -> Self {
        let config = RegistryConfig {
            // Keeps the fresh keys of a long run from piling up.
            idempotency_retention: Duration::from_secs(2),
            ..RegistryConfig::default()
        };
        let registry = ToolRegistry::builder()
            .config(config)
            .start()
            .await
            .expect("the bench tools are well formed");
        let human = CallContext::builder()
            .org("acme")
            .user("alice")
            .session("bench-session")
            .correlation("bench-correlation")
            .role("admin")
            .initiator(Initiator::Human)
            .build();
        let mut agent = human.clone();
        agent.initiator = Initiator::Agent;
        Self {
            registry,
            human,
            agent,
            store: Arc::new(MemoryIdempotencyStore::new(Duration::from_secs(2))),
            org_id: OrgId::from("acme"),
            tool_name: Arc::from("bench_run"),
            params: json!({ "n": 7 }),
        }
    }

    async fn read(&self) -> Value {
        self.registry
            .invoke("bench_echo", self.params.clone(), &self.human)
            .await
            .expect("a read")
    }

    async fn execute(&self) -> Value {
        let mut context = self.human.clone();
        context.idempotency_key = Some(fresh_key());
        self.registry
            .invoke("bench_run", self.params.clone(), &context)
            .await
            .expect("an execute call")
    }

    async fn replay(&self) -> Value {
        let mut context = self.human.clone();
        context.idempotency_key = Some(IdempotencyKey::new("bench-replayed"));
        self.registry
            .invoke("bench_run", self.params.clone(), &context)
            .await
            .expect("a replay")
    }

    /// A fresh key in the caller's organisation: the check's input, made before the clock
    /// starts (a caller brings its key; the registry clones the context's org id).
    fn fresh_scope(&self) -> IdempotencyScope {
        IdempotencyScope::new(self.org_id.clone(), fresh_key())
    }

    /// What an execute call adds for idempotency, as the registry does it: the params'
    /// digest, a claim on the key, a fresh action id, and the completion with the result.
    fn check(&self, scope: &IdempotencyScope) {
        let digest = digest_json(&self.params).expect("JSON has a digest");
        let fingerprint = Fingerprint::new(Arc::clone(&self.tool_name), digest);
        if let Claim::Run = self
            .store
            .claim(scope, &fingerprint, jiff::Timestamp::now())
        {
            self.store.complete(
                scope,
                Arc::new(StoredOutcome::ok(new_action_id(), Value::from(7))),
            );
        }
    }

    /// The check's two parts, for the breakdown: the params' digest, and the store.
    fn digest_only(&self) {
        black_box(digest_json(&self.params).expect("JSON has a digest"));
    }

    fn store_only(
        &self,
        store: &MemoryIdempotencyStore,
        scope: &IdempotencyScope,
        digest: switchboard::audit::Digest,
    ) {
        let fingerprint = Fingerprint::new(Arc::clone(&self.tool_name), digest);
        if let Claim::Run = store.claim(scope, &fingerprint, jiff::Timestamp::now()) {
            let action_id = ActionId::new("act-bench");
            store.complete(
                scope,
                Arc::new(StoredOutcome::ok(action_id, Value::from(7))),
            );
        }
    }

    async fn proposal_round_trip(&self) -> Value {
        let proposal = self
            .registry
            .propose("bench_run", self.params.clone(), &self.agent, None)
            .await
            .expect("stored");
        self.registry
            .approve(&proposal.id, &self.human)
            .await
            .expect("approved")
            .output
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Interleaves the variants round by round and prints medians (ns per call) and ratios.
fn summary(runtime: &Runtime, fixture: &Fixture) {
    const ROUNDS: usize = 41;
    const CALLS: u32 = 2_000;
    const ROUND_TRIPS: u32 = 200;
    let mut read = Vec::new();
    let mut execute = Vec::new();
    let mut replay = Vec::new();
    let mut check = Vec::new();
    let mut digest = Vec::new();
    let mut store = Vec::new();
    let mut small_store = Vec::new();
    let mut round_trip = Vec::new();
    let params_digest = digest_json(&fixture.params).expect("JSON has a digest");
    let per_call =
        |started: Instant, calls: u32| started.elapsed().as_nanos() as f64 / f64::from(calls);
    for _ in 0..ROUNDS {
        runtime.block_on(async {
            let started = Instant::now();
            for _ in 0..CALLS {
                black_box(fixture.read().await);
            }
            read.push(per_call(started, CALLS));
            let started = Instant::now();
            for _ in 0..CALLS {
                black_box(fixture.execute().await);
            }
            execute.push(per_call(started, CALLS));
            let started = Instant::now();
            for _ in 0..CALLS {
                black_box(fixture.replay().await);
            }
            replay.push(per_call(started, CALLS));
            let started = Instant::now();
            for _ in 0..ROUND_TRIPS {
                black_box(fixture.proposal_round_trip().await);
            }
            round_trip.push(per_call(started, ROUND_TRIPS));
        });
        let scopes = || {
            (0..CALLS)
                .map(|_| fixture.fresh_scope())
                .collect::<Vec<_>>()
        };
        let fresh = scopes();
        let started = Instant::now();
        for scope in &fresh {
            fixture.check(scope);
        }
        check.push(per_call(started, CALLS));
        let started = Instant::now();
        for _ in 0..CALLS {
            fixture.digest_only();
        }
        digest.push(per_call(started, CALLS));
        let fresh = scopes();
        let started = Instant::now();
        for scope in &fresh {
            fixture.store_only(&fixture.store, scope, params_digest);
        }
        store.push(per_call(started, CALLS));
        // The same on a store holding only this round's keys.
        let small = MemoryIdempotencyStore::new(Duration::from_secs(2));
        let fresh = scopes();
        let started = Instant::now();
        for scope in &fresh {
            fixture.store_only(&small, scope, params_digest);
        }
        small_store.push(per_call(started, CALLS));
    }
    let (digest, store, small_store) = (
        median(&mut digest),
        median(&mut store),
        median(&mut small_store),
    );
    let held = fixture.store.len();
    let (read, execute, replay, check, round_trip) = (
        median(&mut read),
        median(&mut execute),
        median(&mut replay),
        median(&mut check),
        median(&mut round_trip),
    );
    println!("\nsummary (median ns per call over {ROUNDS} interleaved rounds)");
    println!("  read call (no mutation layer)        {read:>9.0}");
    println!("  execute call (fresh key each time)   {execute:>9.0}");
    println!("  idempotency check alone              {check:>9.0}");
    println!("    of which: params digest            {digest:>9.0}");
    println!("    of which: claim + complete         {store:>9.0}  ({held} keys held at the end)");
    println!("    claim + complete, 2,000 keys held  {small_store:>9.0}");
    println!("  replay (known key)                   {replay:>9.0}");
    println!("  proposal round trip (propose+approve){round_trip:>9.0}");
    println!(
        "  check / execute = {:.2}; execute - read = {:.0} ns; round trip / execute = {:.1}; target: check <= 1000 ns -> {}",
        check / execute,
        execute - read,
        round_trip / execute,
        if check <= 1000.0 { "met" } else { "MISSED" }
    );
}

fn main() {
    let runtime = runtime();
    let fixture = runtime.block_on(Fixture::new());
    // The replayed key's first run.
    runtime.block_on(fixture.replay());
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let mut group = criterion.benchmark_group("mutation");
    group.bench_function("read", |b| b.to_async(&runtime).iter(|| fixture.read()));
    group.bench_function("execute", |b| {
        b.to_async(&runtime).iter(|| fixture.execute())
    });
    group.bench_function("idempotency_check", |b| {
        b.iter_batched(
            || fixture.fresh_scope(),
            |scope| fixture.check(&scope),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("replay", |b| b.to_async(&runtime).iter(|| fixture.replay()));
    group.bench_function("proposal_round_trip", |b| {
        b.to_async(&runtime).iter(|| fixture.proposal_round_trip())
    });
    group.finish();
    summary(&runtime, &fixture);
    criterion.final_summary();
}

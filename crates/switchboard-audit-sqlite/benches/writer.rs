//! The audit writer's sustained insert rate: `append_batch` alone, in batches of 1, 64, 1,024
//! and 4,096 records, on the SQLite store (`synchronous` FULL, the default, and NORMAL) and on
//! the in-memory table, in one run.
//!
//! This is what the audit log's writer thread does with each batch, minus the digests (computed
//! before the store is called) and the queue. Records are distinct, like real calls': each
//! iteration takes the next slice of a pool of 65,536 prebuilt records (a correlation id per 4
//! records, 50 orgs, 10 tools, 200 users). Correlation ids come two ways: random, like UUIDv4s
//! or trace ids a caller passes in, which land all over the correlation index; and
//! time-ordered, like the UUIDv7s the CLI and the MCP server mint, which land at its end. When
//! the pool is used up it starts over with new correlation ids (time-ordered ones carry on
//! from the last), minted outside the timed part: no id is ever appended twice. (Until
//! 2026-11-22 the pool wrapped with the same ids, so from the second pass on a "time-ordered"
//! id landed next to its earlier copies, in the middle of the index: about half as much CPU
//! again per record as ids that never repeat.) Each (store, batch size) gets a new database file, deleted
//! afterwards; the files grow by hundreds of thousands of records while measured, so the rate
//! is a sustained one.
//!
//! Criterion measures each case on its own (its throughput line is records/s); then a summary
//! interleaves every case round by round, so machine noise hits them alike, and prints the median
//! records/s per case, the SQLite/memory ratio, and the target (at least 200,000 records/s in
//! batches).
//!
//! Run: `cargo bench -p switchboard-audit-sqlite --bench writer`. Results go in
//! `docs/benchmarks.md`.

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use criterion::{Criterion, Throughput};
use jiff::Timestamp;
use switchboard_audit::{AuditRecord, AuditStore, MemoryAuditStore, Outcome, digest_json};
use switchboard_audit_sqlite::{SqliteAuditStore, SqliteOptions, Synchronous};
use switchboard_core::{Category, CorrelationId, ErrorKind, Initiator};
use tempfile::TempDir;

const BATCH_SIZES: [usize; 4] = [1, 64, 1_024, 4_096];
const POOL: usize = 65_536;
/// The target, in records per second, for batches (64 records or more).
const TARGET: f64 = 200_000.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Memory,
    SqliteFull,
    SqliteNormal,
    SqliteFullOrderedIds,
}

impl Kind {
    const ALL: [Kind; 4] = [
        Kind::Memory,
        Kind::SqliteFull,
        Kind::SqliteNormal,
        Kind::SqliteFullOrderedIds,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Memory => "memory",
            Kind::SqliteFull => "sqlite FULL",
            Kind::SqliteNormal => "sqlite NORMAL",
            Kind::SqliteFullOrderedIds => "sqlite FULL, ordered ids",
        }
    }

    /// Whether the records' correlation ids are time-ordered (else random).
    fn ordered_ids(self) -> bool {
        self == Kind::SqliteFullOrderedIds
    }
}

/// A store under test, with the directory its file lives in.
struct Subject {
    store: Arc<dyn AuditStore>,
    _dir: Option<TempDir>,
}

fn subject(kind: Kind) -> Subject {
    let synchronous = match kind {
        Kind::Memory => {
            return Subject {
                store: Arc::new(MemoryAuditStore::new()),
                _dir: None,
            };
        }
        Kind::SqliteFull | Kind::SqliteFullOrderedIds => Synchronous::Full,
        Kind::SqliteNormal => Synchronous::Normal,
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let options = SqliteOptions::default().synchronous(synchronous);
    let store = SqliteAuditStore::open_with(dir.path().join("audit.db"), options)
        .expect("the benchmark database opens");
    Subject {
        store: Arc::new(store),
        _dir: Some(dir),
    }
}

/// A scrambled but deterministic number, for ids that scatter over an index.
fn scatter(n: u64) -> u64 {
    let mut x = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The correlation id of the `n`th record ever made (four records share one): time-ordered
/// ids grow with `n`, random ones scatter.
fn correlation_id(n: u64, ordered_ids: bool) -> CorrelationId {
    let id = n / 4;
    if ordered_ids {
        format!("bench-{id:016x}{:016x}", scatter(id)).into()
    } else {
        format!("bench-{:016x}{id:016x}", scatter(id)).into()
    }
}

/// The pool of records; `ordered_ids` picks time-ordered correlation ids over random ones.
fn pool(ordered_ids: bool) -> Vec<AuditRecord> {
    let input_hash = digest_json(&serde_json::json!({ "from": "2026-11-23", "to": "2026-11-29" }));
    let output_hash = digest_json(&serde_json::json!({ "shifts": [] }));
    let now = Timestamp::now();
    (0..POOL as u64)
        .map(|n| {
            let failed = n % 20 == 0;
            AuditRecord {
                id: 0,
                timestamp: now,
                tool: format!("roster_tool_{}", n % 10).into(),
                domain: Some("roster".into()),
                category: Some(Category::Read),
                org_id: Some(format!("org-{}", scatter(n) % 50).into()),
                user_id: Some(format!("user-{}", scatter(n + 1) % 200).into()),
                session_id: Some(format!("session-{:x}", scatter(n / 16)).into()),
                correlation_id: Some(correlation_id(n, ordered_ids)),
                initiator: Initiator::Human,
                input_hash,
                output_hash: (!failed).then_some(output_hash),
                duration_us: 40 + n % 100,
                action: None,
                outcome: if failed {
                    Outcome::Error(ErrorKind::PermissionDenied)
                } else {
                    Outcome::Ok
                },
            }
        })
        .collect()
}

/// Appends the next `batch` records of the pool; once the pool is used up, it starts over with
/// new correlation ids.
struct Feeder {
    pool: Vec<AuditRecord>,
    ordered_ids: bool,
    next: usize,
    /// How many times the pool was used up.
    passes: u64,
}

impl Feeder {
    fn new(ordered_ids: bool) -> Self {
        Self {
            pool: pool(ordered_ids),
            ordered_ids,
            next: 0,
            passes: 0,
        }
    }

    /// Makes room for the next `batch`: when the pool has fewer records left, gives every
    /// record a new correlation id and starts over. Returns the time that took (zero if
    /// nothing was needed), which the measurements leave out.
    fn make_room(&mut self, batch: usize) -> Duration {
        if self.next + batch <= self.pool.len() {
            return Duration::ZERO;
        }
        let started = Instant::now();
        self.passes += 1;
        let first = self.passes * POOL as u64;
        for (n, record) in (first..).zip(&mut self.pool) {
            record.correlation_id = Some(correlation_id(n, self.ordered_ids));
        }
        self.next = 0;
        started.elapsed()
    }

    /// Appends the next `batch` records; call [`make_room`](Self::make_room) first.
    fn append(&mut self, store: &dyn AuditStore, batch: usize) {
        let slice = &mut self.pool[self.next..self.next + batch];
        store.append_batch(slice).expect("the batch is appended");
        black_box(slice.last().map(|record| record.id));
        self.next += batch;
    }
}

/// A feeder per id style: random correlation ids, then time-ordered ones.
struct Feeders([Feeder; 2]);

impl Feeders {
    fn new() -> Self {
        Self([false, true].map(Feeder::new))
    }

    fn of(&mut self, kind: Kind) -> &mut Feeder {
        &mut self.0[usize::from(kind.ordered_ids())]
    }
}

fn criterion_benches(criterion: &mut Criterion, feeders: &mut Feeders) {
    for kind in Kind::ALL {
        let feeder = feeders.of(kind);
        let mut group = criterion.benchmark_group(format!("append_batch/{}", kind.name()));
        for batch in BATCH_SIZES {
            let subject = subject(kind);
            group.throughput(Throughput::Elements(batch as u64));
            group.bench_function(format!("batch {batch}"), |bencher| {
                bencher.iter_custom(|iterations| {
                    let mut left_out = Duration::ZERO;
                    let started = Instant::now();
                    for _ in 0..iterations {
                        left_out += feeder.make_room(batch);
                        feeder.append(&*subject.store, batch);
                    }
                    started.elapsed().saturating_sub(left_out)
                });
            });
        }
        group.finish();
    }
}

/// Records per second appending batches of `batch` for about `time`.
fn sustained_rate(
    store: &dyn AuditStore,
    feeder: &mut Feeder,
    batch: usize,
    time: Duration,
) -> f64 {
    let started = Instant::now();
    let mut left_out = Duration::ZERO;
    let mut records = 0_u64;
    while started.elapsed().saturating_sub(left_out) < time {
        left_out += feeder.make_room(batch);
        feeder.append(store, batch);
        records += batch as u64;
    }
    records as f64 / started.elapsed().saturating_sub(left_out).as_secs_f64()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn summary(feeders: &mut Feeders) {
    const ROUNDS: usize = 7;
    const TIME_PER_CASE: Duration = Duration::from_millis(300);
    let subjects: Vec<Vec<Subject>> = Kind::ALL
        .iter()
        .map(|&kind| BATCH_SIZES.iter().map(|_| subject(kind)).collect())
        .collect();
    let mut rates = vec![vec![Vec::new(); BATCH_SIZES.len()]; Kind::ALL.len()];
    for _ in 0..ROUNDS {
        for (kind_index, row) in subjects.iter().enumerate() {
            for (batch_index, subject) in row.iter().enumerate() {
                let rate = sustained_rate(
                    &*subject.store,
                    feeders.of(Kind::ALL[kind_index]),
                    BATCH_SIZES[batch_index],
                    TIME_PER_CASE,
                );
                rates[kind_index][batch_index].push(rate);
            }
        }
    }
    let medians: Vec<Vec<f64>> = rates
        .iter_mut()
        .map(|row| row.iter_mut().map(|samples| median(samples)).collect())
        .collect();

    println!();
    println!(
        "Summary: append_batch alone, {ROUNDS} interleaved rounds of {} ms per case; median \
         records/s",
        TIME_PER_CASE.as_millis()
    );
    print!("{:<36}", "store \\ batch size");
    for batch in BATCH_SIZES {
        print!(" {batch:>12}");
    }
    println!();
    for (kind, row) in Kind::ALL.iter().zip(&medians) {
        print!("{:<36}", kind.name());
        for rate in row {
            print!(" {rate:>12.0}");
        }
        println!();
    }
    for (kind_index, kind) in Kind::ALL.iter().enumerate().skip(1) {
        print!("{:<36}", format!("{} / memory", kind.name()));
        for (batch_index, rate) in medians[kind_index].iter().enumerate() {
            print!(" {:>11.3}x", rate / medians[0][batch_index]);
        }
        println!();
    }
    println!();
    for (kind_index, kind) in Kind::ALL.iter().enumerate().skip(1) {
        let batched = &medians[kind_index][1..];
        let slowest = batched.iter().copied().fold(f64::INFINITY, f64::min);
        let full_batches = medians[kind_index][BATCH_SIZES.len() - 1];
        println!(
            "{}: {full_batches:.0} records/s in batches of 4,096 (the writer's default largest \
             batch; target >= {TARGET:.0}): {}; slowest in batches of 64 or more: {slowest:.0}",
            kind.name(),
            if full_batches >= TARGET {
                "met"
            } else {
                "NOT met"
            }
        );
    }
    // The headline figure `cargo xtask bench` collects: the default store in batches of 1,024,
    // against the memory store in the same rounds.
    let batch = BATCH_SIZES
        .iter()
        .position(|&size| size == 1_024)
        .unwrap_or(0);
    let index_of = |wanted: Kind| {
        Kind::ALL
            .iter()
            .position(|&kind| kind == wanted)
            .unwrap_or(0)
    };
    let figure = serde_json::json!({
        "id": "audit_sqlite.batch_1024",
        "median": medians[index_of(Kind::SqliteFull)][batch],
        "baseline": medians[index_of(Kind::Memory)][batch],
        "unit": "records/s",
    });
    println!("BENCH {figure}");
}

fn main() {
    let mut feeders = Feeders::new();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .configure_from_args();
    criterion_benches(&mut criterion, &mut feeders);
    criterion.final_summary();
    summary(&mut feeders);
}

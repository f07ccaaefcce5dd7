//! The SQLite audit store's sustained insert rate, in batches of 1,024 records under the default
//! `synchronous = FULL`, beside two baselines measured in the same run: the same rows inserted
//! by a plain loop of one prepared `INSERT` per row and one transaction per batch (what SQLite
//! itself costs for this table and its indexes), and the in-memory store.
//!
//! This is what the audit log's writer thread does with each batch, minus the digests
//! (computed before the store is called) and the queue. Records are distinct, like real calls'
//! (`support`, shared with the PostgreSQL store's benchmark): correlation ids grow with time,
//! like the UUIDv7s the CLI and the MCP server mint; a second SQLite case uses random ones, like
//! trace ids a caller passes in, which land all over the correlation index. Each case
//! writes to its own file, which grows by hundreds of thousands of records while measured, so
//! the rates are sustained ones. The cases take turns, round by round, so that machine noise
//! hits them alike; the summary is the median of the rounds.
//!
//! Two rates per case: records per second of wall time (what a caller sees, `fsync` waits
//! included) and, on Linux, records per second of this thread's CPU time (from
//! `/proc/thread-self/schedstat`), which stays comparable when other processes share the CPUs.
//!
//! Run: `cargo bench -p switchboard-audit-sqlite --bench writer`. Target: the store sustains at
//! least 100,000 records/s in batches of 1,024.

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use rusqlite::{Connection, TransactionBehavior};
use switchboard_audit::{AuditRecord, AuditStore, MemoryAuditStore};
use switchboard_audit_sqlite::SqliteAuditStore;
use switchboard_core::Category;
use tempfile::TempDir;

mod support;

use support::{BATCH, Records, median};

const ROUNDS: usize = 7;
const TIME_PER_ROUND: Duration = Duration::from_millis(500);
/// The guard, in records per second, for the store under `synchronous = FULL`.
const TARGET: f64 = 100_000.0;

/// The same statement the store runs per record, for the raw loop.
const RAW_INSERT: &str = "INSERT INTO audit_records (timestamp_ns, tool, domain, category, \
     org_id, user_id, session_id, correlation_id, initiator, input_hash, output_hash, \
     digest_error, duration_us, outcome, action_id, action_event) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";

/// What a case appends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    SqliteStore,
    RawInsert,
    MemoryStore,
}

/// Where a case writes its batches.
enum Sink {
    Store(Box<dyn AuditStore>),
    /// A plain connection on a file the store created (so: the same table and indexes).
    Raw(Connection),
}

impl Sink {
    fn append(&mut self, batch: &mut [AuditRecord]) {
        match self {
            Sink::Store(store) => store.append_batch(batch).expect("the batch is appended"),
            Sink::Raw(connection) => raw_append(connection, batch).expect("the rows insert"),
        }
        black_box(batch.last().map(|record| record.id));
    }
}

/// The raw loop: one transaction, one prepared insert per row, as plain as rusqlite allows.
fn raw_append(connection: &mut Connection, batch: &[AuditRecord]) -> rusqlite::Result<()> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut insert = transaction.prepare_cached(RAW_INSERT)?;
        for record in batch {
            insert.execute(rusqlite::params![
                i64::try_from(record.timestamp.as_nanosecond()).unwrap_or(i64::MAX),
                &*record.tool,
                record.domain.as_deref(),
                record.category.map(Category::as_str),
                record.org_id.as_ref().map(|org| org.as_str()),
                record.user_id.as_ref().map(|user| user.as_str()),
                record.session_id.as_ref().map(|session| session.as_str()),
                record.correlation_id.as_ref().map(|id| id.as_str()),
                record.initiator.as_str(),
                record.input_hash.as_ref().map(|digest| &digest.0[..]),
                record.output_hash.as_ref().map(|digest| &digest.0[..]),
                record.digest_error.as_deref(),
                record.duration_us as i64,
                record.outcome.as_str(),
                record.action.as_ref().map(|action| action.id.as_str()),
                record.action.as_ref().map(|action| action.event.as_str()),
            ])?;
        }
    }
    transaction.commit()
}

/// One measured case: its sink, the directory its file lives in, and its records.
struct Case {
    name: &'static str,
    sink: Sink,
    _dir: Option<TempDir>,
    records: Records,
    rates: Vec<f64>,
    cpu_rates: Vec<f64>,
}

impl Case {
    fn new(name: &'static str, kind: Kind, ordered: bool) -> Self {
        let (sink, dir) = match kind {
            Kind::MemoryStore => (Sink::Store(Box::new(MemoryAuditStore::new())), None),
            Kind::SqliteStore | Kind::RawInsert => {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let path = dir.path().join("audit.db");
                let store = SqliteAuditStore::open(&path).expect("the benchmark database opens");
                let sink = if kind == Kind::RawInsert {
                    drop(store);
                    let connection = Connection::open(&path).expect("plain SQLite opens it");
                    // What the store sets on its writer connection, and the same durability.
                    connection
                        .execute_batch(
                            "PRAGMA synchronous = FULL; PRAGMA cache_size = -65536; \
                             PRAGMA wal_autocheckpoint = 16384;",
                        )
                        .expect("pragmas");
                    Sink::Raw(connection)
                } else {
                    Sink::Store(Box::new(store))
                };
                (sink, Some(dir))
            }
        };
        Self {
            name,
            sink,
            _dir: dir,
            records: Records::new(ordered),
            rates: Vec::new(),
            cpu_rates: Vec::new(),
        }
    }

    /// Appends batches for about `time` and records the rate.
    fn round(&mut self, time: Duration) {
        let mut timed = Duration::ZERO;
        let mut cpu = Some(Duration::ZERO);
        let mut records = 0_u64;
        while timed < time {
            let batch = self.records.next_batch();
            let cpu_started = thread_cpu_time();
            let started = Instant::now();
            self.sink.append(batch);
            timed += started.elapsed();
            cpu = match (cpu, cpu_started, thread_cpu_time()) {
                (Some(cpu), Some(before), Some(after)) => Some(cpu + after.saturating_sub(before)),
                _ => None,
            };
            records += BATCH as u64;
        }
        self.rates.push(records as f64 / timed.as_secs_f64());
        if let Some(cpu) = cpu {
            self.cpu_rates.push(records as f64 / cpu.as_secs_f64());
        }
    }

    /// The median wall-time rate, and the median CPU-time rate if it could be measured.
    fn medians(&mut self) -> (f64, Option<f64>) {
        (median(&mut self.rates), {
            let measured = self.cpu_rates.len() == self.rates.len();
            measured.then(|| median(&mut self.cpu_rates))
        })
    }
}

/// How long this thread has run on a CPU, where Linux tells (`None` elsewhere).
fn thread_cpu_time() -> Option<Duration> {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanoseconds = schedstat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanoseconds))
}

fn main() {
    let mut cases = [
        Case::new("sqlite store", Kind::SqliteStore, true),
        Case::new("raw INSERT loop, same table", Kind::RawInsert, true),
        Case::new(
            "sqlite store, random correlation ids",
            Kind::SqliteStore,
            false,
        ),
        Case::new("memory store", Kind::MemoryStore, true),
    ];
    for round in 1..=ROUNDS {
        for case in &mut cases {
            case.round(TIME_PER_ROUND);
        }
        println!("round {round}/{ROUNDS} done");
    }
    let medians: Vec<(f64, Option<f64>)> = cases.iter_mut().map(Case::medians).collect();
    let cpu_text =
        |rate: Option<f64>| rate.map_or_else(|| "-".to_owned(), |rate| format!("{rate:.0}"));
    println!();
    println!(
        "append_batch in batches of {BATCH}, synchronous = FULL: median of {ROUNDS} interleaved \
         rounds of {} ms",
        TIME_PER_ROUND.as_millis()
    );
    println!(
        "{:<40} {:>12} {:>14} {:>16}",
        "case", "records/s", "per CPU-s", "/ raw INSERT"
    );
    let raw = medians[1].0;
    for (case, (rate, cpu_rate)) in cases.iter().zip(&medians) {
        println!(
            "{:<40} {rate:>12.0} {:>14} {:>15.2}x",
            case.name,
            cpu_text(*cpu_rate),
            rate / raw
        );
    }
    let (store, store_cpu) = medians[0];
    println!();
    println!(
        "guard: the SQLite store sustains {store:.0} records/s in batches of {BATCH} (target >= \
         {TARGET:.0}): {}; {} records per second of CPU time",
        if store >= TARGET { "met" } else { "NOT met" },
        cpu_text(store_cpu)
    );
    // The line `cargo xtask bench` collects.
    println!(
        "BENCH {}",
        serde_json::json!({"id": "audit_sqlite.batch_1024", "median": store, "baseline": raw, "unit": "records/s"})
    );
}

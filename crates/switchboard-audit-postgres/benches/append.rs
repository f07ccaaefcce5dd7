//! The PostgreSQL audit store's sustained append rate, in batches of 1,024 records, beside the
//! SQLite store's (`synchronous = FULL`, its default) in the same run.
//!
//! This is what the audit log's writer thread does with each batch, minus the digests
//! (computed before the store is called) and the queue. Records are distinct, like real calls',
//! the same ones the SQLite store's `writer` bench appends (its `support`, included here by
//! path), correlation ids growing with time like the UUIDv7s the CLI mints. Each store writes
//! to its own new database, which grows by hundreds of thousands of records while measured, so
//! the rates are sustained ones.
//!
//! Beside the store, a baseline on the same kind of table: the other way PostgreSQL takes a
//! batch in, its ids reserved first (`nextval` over the batch) and the rows sent by a binary
//! `COPY`, so that the store's choice of one `INSERT … SELECT FROM unnest(…)` is measured, not
//! assumed.
//!
//! Criterion measures each case on its own (`append_batch_1024/…`); then a summary runs them
//! in interleaved rounds, so that machine noise hits them alike, and prints the median records
//! per second of each, their ratio to SQLite, the server's durability settings (`fsync`,
//! `synchronous_commit`: a test server runs with `fsync = off`, which a production one does
//! not) and one `BENCH` line for `cargo xtask bench`.
//!
//! The server is the one `SWITCHBOARD_TEST_POSTGRES_URL` names (its user must be able to create
//! a database; the benchmark drops it at the end), as for the tests. Run:
//! `SWITCHBOARD_TEST_POSTGRES_URL=postgres://… cargo bench -p switchboard-audit-postgres --bench
//! append` (`-- nomatch` for the summary alone). Target: at least 50,000 records/s.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark reports to its terminal"
)]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use criterion::{Criterion, Throughput};
use switchboard_audit::{AuditRecord, AuditStore};
use switchboard_audit_postgres::PostgresAuditStore;
use switchboard_audit_sqlite::SqliteAuditStore;
use switchboard_core::Category;
use switchboard_postgres::{
    Client, Database, QueryError,
    tokio_postgres::{binary_copy::BinaryCopyInWriter, types::Type},
};
use switchboard_test_postgres::{TestDatabase, URL_VARIABLE};
use tempfile::TempDir;

/// The records appended, shared with the SQLite store's `writer` bench.
#[path = "../../switchboard-audit-sqlite/benches/support/mod.rs"]
mod support;

use support::{BATCH, Records, median};

const ROUNDS: usize = 9;
const TIME_PER_ROUND: Duration = Duration::from_millis(500);
/// The goal, in records per second, for the PostgreSQL store.
const TARGET: f64 = 50_000.0;

/// Reserves `$1` ids from the identity's sequence, for the `COPY` baseline.
const RESERVE_IDS: &str = "SELECT nextval(pg_get_serial_sequence('audit_records', 'id')) \
     FROM generate_series(1, $1::bigint)";

/// The `COPY` baseline's statement: every column given, the ids reserved first.
const COPY_IN: &str = "COPY audit_records (id, timestamp_ns, tool, domain, category, org_id, \
     user_id, session_id, correlation_id, initiator, input_hash, output_hash, digest_error, \
     duration_us, outcome, action_id, action_event) FROM STDIN (FORMAT binary)";

/// The types of [`COPY_IN`]'s columns, in order.
const COPY_TYPES: [Type; 17] = [
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::BYTEA,
    Type::BYTEA,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
];

/// The other way PostgreSQL takes a batch in: reserve the ids (one statement), then a binary
/// `COPY` of the rows with their ids (one statement, one transaction).
async fn copy_batch(client: &Client, batch: &[AuditRecord]) -> Result<Vec<i64>, QueryError> {
    let count = i64::try_from(batch.len()).unwrap_or(i64::MAX);
    let reserve = client.prepare_cached(RESERVE_IDS).await?;
    let mut ids: Vec<i64> = client
        .query(&reserve, &[&count])
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
    ids.sort_unstable();
    let copy = client.prepare_cached(COPY_IN).await?;
    let sink = client.copy_in(&copy).await?;
    let mut writer = std::pin::pin!(BinaryCopyInWriter::new(sink, &COPY_TYPES));
    for (record, id) in batch.iter().zip(&ids) {
        let timestamp_ns = i64::try_from(record.timestamp.as_nanosecond()).unwrap_or(i64::MAX);
        let duration_us = record.duration_us as i64;
        writer
            .as_mut()
            .write(&[
                id,
                &timestamp_ns,
                &&*record.tool,
                &record.domain.as_deref(),
                &record.category.map(Category::as_str),
                &record.org_id.as_ref().map(|id| id.as_str()),
                &record.user_id.as_ref().map(|id| id.as_str()),
                &record.session_id.as_ref().map(|id| id.as_str()),
                &record.correlation_id.as_ref().map(|id| id.as_str()),
                &record.initiator.as_str(),
                &record.input_hash.as_ref().map(|digest| &digest.0[..]),
                &record.output_hash.as_ref().map(|digest| &digest.0[..]),
                &record.digest_error.as_deref(),
                &duration_us,
                &record.outcome.as_str(),
                &record.action.as_ref().map(|action| action.id.as_str()),
                &record.action.as_ref().map(|action| action.event.as_str()),
            ])
            .await?;
    }
    writer.finish().await?;
    Ok(ids)
}

/// Where a case writes its batches.
enum Sink {
    Store(Box<dyn AuditStore>),
    /// [`copy_batch`] on the connections of a PostgreSQL store (so: the same table).
    Copy(Database),
}

impl Sink {
    fn append(&self, batch: &mut [AuditRecord]) {
        match self {
            Sink::Store(store) => store.append_batch(batch).expect("the batch is appended"),
            Sink::Copy(database) => {
                let records = batch.to_vec();
                let ids = database
                    .call(move |client| async move { copy_batch(&client, &records).await })
                    .expect("the rows are copied in");
                for (record, id) in batch.iter_mut().zip(ids) {
                    record.id = id.unsigned_abs();
                }
            }
        }
    }
}

/// One case under measurement, what it writes to, and its records.
struct Case {
    name: &'static str,
    sink: Sink,
    records: Records,
    rates: Vec<f64>,
}

impl Case {
    fn new(name: &'static str, sink: Sink) -> Self {
        Self {
            name,
            sink,
            records: Records::new(true),
            rates: Vec::new(),
        }
    }

    /// Appends the next batch and returns how long the store took.
    fn append_one(&mut self) -> Duration {
        let batch = self.records.next_batch();
        let started = Instant::now();
        self.sink.append(batch);
        let took = started.elapsed();
        black_box(batch.last().map(|record| record.id));
        took
    }

    /// Appends batches for about `time` and records the rate.
    fn round(&mut self, time: Duration) {
        let mut timed = Duration::ZERO;
        let mut records = 0_u64;
        while timed < time {
            timed += self.append_one();
            records += BATCH as u64;
        }
        self.rates.push(records as f64 / timed.as_secs_f64());
    }

    fn median(&mut self) -> f64 {
        median(&mut self.rates)
    }
}

/// The databases the cases write to, deleted when dropped.
struct Databases {
    postgres: TestDatabase,
    copy: TestDatabase,
    sqlite: TempDir,
}

impl Databases {
    fn create(runtime: &tokio::runtime::Runtime, server_url: &str) -> Self {
        let create = || {
            runtime
                .block_on(TestDatabase::create(server_url))
                .expect("the benchmark database is created on the server")
        };
        Self {
            postgres: create(),
            copy: create(),
            sqlite: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    fn cases(&self) -> [Case; 3] {
        let postgres =
            PostgresAuditStore::open(self.postgres.url()).expect("the PostgreSQL store opens");
        let copy = PostgresAuditStore::open(self.copy.url())
            .expect("the PostgreSQL store opens")
            .database()
            .clone();
        let sqlite = SqliteAuditStore::open(self.sqlite.path().join("audit.db"))
            .expect("the SQLite store opens");
        [
            Case::new("postgres store", Sink::Store(Box::new(postgres))),
            Case::new("postgres binary COPY, same table", Sink::Copy(copy)),
            Case::new("sqlite store (FULL)", Sink::Store(Box::new(sqlite))),
        ]
    }
}

/// The server's settings that decide what a commit costs.
fn durability(runtime: &tokio::runtime::Runtime, database: &TestDatabase) -> String {
    runtime.block_on(async {
        let client = database.connect().await.expect("a plain client connects");
        let mut shown = Vec::new();
        for setting in ["server_version", "fsync", "synchronous_commit", "wal_level"] {
            let value: String = client
                .query_one(&format!("SHOW {setting}"), &[])
                .await
                .expect("SHOW")
                .get(0);
            shown.push(format!("{setting} = {value}"));
        }
        shown.join(", ")
    })
}

fn criterion_benches(criterion: &mut Criterion, databases: &Databases) {
    let mut group = criterion.benchmark_group("append_batch_1024");
    group.throughput(Throughput::Elements(BATCH as u64));
    for mut case in databases.cases() {
        group.bench_function(case.name, |bencher| {
            bencher.iter_custom(|iterations| (0..iterations).map(|_| case.append_one()).sum());
        });
    }
    group.finish();
}

fn summary(databases: &Databases) -> (f64, f64) {
    let mut cases = databases.cases();
    for round in 1..=ROUNDS {
        for case in &mut cases {
            case.round(TIME_PER_ROUND);
        }
        println!("round {round}/{ROUNDS} done");
    }
    let [postgres, copy, sqlite] = cases.each_mut().map(Case::median);
    println!();
    println!(
        "append_batch in batches of {BATCH}: median of {ROUNDS} interleaved rounds of {} ms, \
         records per second",
        TIME_PER_ROUND.as_millis()
    );
    println!("{:<32} {:>12} {:>14}", "case", "records/s", "/ sqlite");
    for (case, rate) in cases.iter().zip([postgres, copy, sqlite]) {
        println!("{:<32} {rate:>12.0} {:>13.2}x", case.name, rate / sqlite);
    }
    (postgres, sqlite)
}

fn main() {
    let server_url = std::env::var(URL_VARIABLE)
        .ok()
        .filter(|url| !url.is_empty());
    let Some(server_url) = server_url else {
        eprintln!(
            "{URL_VARIABLE} is not set: this benchmark needs a PostgreSQL server whose user may \
             create databases; set it to that server's URL (postgres://USER:PASSWORD@HOST:PORT/\
             postgres), for example the one `cargo xtask postgres` starts"
        );
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let databases = Databases::create(&runtime, &server_url);
    let settings = durability(&runtime, &databases.postgres);
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sample_size(20)
        .configure_from_args();
    criterion_benches(&mut criterion, &databases);
    criterion.final_summary();
    let (postgres, sqlite) = summary(&databases);
    println!();
    println!("server: {settings}");
    println!(
        "goal: the PostgreSQL store sustains {postgres:.0} records/s in batches of {BATCH} \
         (goal >= {TARGET:.0}): {}; {:.2}x the SQLite store's {sqlite:.0}",
        if postgres >= TARGET { "met" } else { "NOT met" },
        postgres / sqlite
    );
    // The line `cargo xtask bench` collects.
    println!(
        "BENCH {}",
        serde_json::json!({"id": "audit_postgres.batch_1024", "median": postgres, "baseline": sqlite, "unit": "records/s"})
    );
}

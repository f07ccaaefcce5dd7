//! What an idempotent mutation's store operations cost on PostgreSQL, beside the SQLite store
//! measured in the same run: the claim of a new key and its completion (the two writes every
//! first run of an execute or restricted tool adds), and the replay of a done key (a retry).
//!
//! Each case runs on SQLite with `synchronous = FULL` (the default) and `NORMAL`, and on
//! PostgreSQL (a fresh database on the server `SWITCHBOARD_TEST_POSTGRES_URL` names, dropped
//! afterwards; the server's `fsync` and `synchronous_commit` are printed, since they decide
//! what a commit costs). Criterion measures each case on its own; then a summary times every
//! operation, interleaving the stores round by round so that machine noise hits them alike,
//! and prints the median and p99 per operation and the ratio of PostgreSQL to SQLite.
//!
//! Run: `SWITCHBOARD_TEST_POSTGRES_URL=postgres://… cargo bench -p
//! switchboard-approvals-postgres --bench stores` (`cargo xtask test` starts a server; any
//! server where the user may create databases does).

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use criterion::Criterion;
use jiff::Timestamp;
use serde_json::json;
use switchboard_approvals::{
    Claim, Fingerprint, IdempotencyScope, IdempotencyStore, StoredOutcome,
};
use switchboard_approvals_postgres::ApprovalsDatabase;
use switchboard_approvals_sqlite::{SqliteOptions, Synchronous};
use switchboard_core::{ActionId, digest_json};
use switchboard_test_postgres::{TestDatabase, URL_VARIABLE};
use tempfile::TempDir;

const RETENTION: Duration = Duration::from_secs(24 * 3_600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    SqliteFull,
    SqliteNormal,
    Postgres,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::SqliteFull, Kind::SqliteNormal, Kind::Postgres];

    fn name(self) -> &'static str {
        match self {
            Kind::SqliteFull => "sqlite FULL",
            Kind::SqliteNormal => "sqlite NORMAL",
            Kind::Postgres => "postgres",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    NewKey,
    Replay,
}

impl Case {
    const ALL: [Case; 2] = [Case::NewKey, Case::Replay];

    fn name(self) -> &'static str {
        match self {
            Case::NewKey => "new key (claim + complete)",
            Case::Replay => "replay (claim of a done key)",
        }
    }
}

/// A store under test with what keeps its storage alive, and a counter for fresh keys.
struct Subject {
    keys: Arc<dyn IdempotencyStore>,
    next: u64,
    _dir: Option<TempDir>,
    _database: Option<TestDatabase>,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn subject(kind: Kind) -> Subject {
    let synchronous = match kind {
        Kind::Postgres => {
            let database = runtime()
                .block_on(switchboard_test_postgres::test_database())
                .expect("a fresh database on the benchmark's server");
            let approvals =
                ApprovalsDatabase::open(database.url()).expect("the approvals tables open");
            return Subject {
                keys: Arc::new(approvals.idempotency_store(RETENTION)),
                next: 0,
                _dir: None,
                _database: Some(database),
            };
        }
        Kind::SqliteFull => Synchronous::Full,
        Kind::SqliteNormal => Synchronous::Normal,
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let database = switchboard_approvals_sqlite::ApprovalsDatabase::open_with(
        dir.path().join("approvals.db"),
        SqliteOptions::default().synchronous(synchronous),
    )
    .expect("the benchmark's SQLite database opens");
    Subject {
        keys: Arc::new(database.idempotency_store(RETENTION)),
        next: 0,
        _dir: Some(dir),
        _database: None,
    }
}

fn fingerprint() -> Fingerprint {
    Fingerprint::new(
        "roster_assign_shift",
        digest_json(&json!({ "shift_id": "acme-2026-11-24-pm", "user_id": "sam" }))
            .expect("JSON has a digest"),
    )
}

fn outcome(n: u64) -> Arc<StoredOutcome> {
    Arc::new(StoredOutcome::ok(
        ActionId::new(format!("act-bench-{n}")),
        json!({ "id": "acme-2026-11-24-pm", "org_id": "acme", "assignee": "sam", "n": n }),
    ))
}

/// The key every replay claims: completed once, when the subject is prepared.
fn replayed_key() -> IdempotencyScope {
    IdempotencyScope::new("acme".into(), "bench-replayed".into())
}

fn prepare(subject: &Subject, print: &Fingerprint) {
    let key = replayed_key();
    if matches!(
        subject.keys.claim(&key, print, Timestamp::now()),
        Claim::Run
    ) {
        subject.keys.complete(&key, outcome(0));
    }
}

/// One operation of `case` on `subject`.
fn operate(subject: &mut Subject, case: Case, print: &Fingerprint) {
    subject.next += 1;
    let n = subject.next;
    match case {
        Case::NewKey => {
            let key = IdempotencyScope::new("acme".into(), format!("bench-{n}").into());
            let claim = subject.keys.claim(&key, print, Timestamp::now());
            assert!(matches!(claim, Claim::Run), "a new key runs: {claim:?}");
            subject.keys.complete(&key, outcome(n));
        }
        Case::Replay => {
            let claim = subject.keys.claim(&replayed_key(), print, Timestamp::now());
            assert!(matches!(claim, Claim::Done(_)), "a done key replays");
            black_box(claim);
        }
    }
}

fn criterion_benches(criterion: &mut Criterion, print: &Fingerprint) {
    for case in Case::ALL {
        let mut group = criterion.benchmark_group(case.name());
        for kind in Kind::ALL {
            let mut subject = subject(kind);
            prepare(&subject, print);
            group.bench_function(kind.name(), |bencher| {
                bencher.iter(|| operate(&mut subject, case, print));
            });
        }
        group.finish();
    }
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let last = sorted.len().saturating_sub(1);
    let index = ((last as f64) * fraction).round() as usize;
    sorted[index.min(last)]
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// The server's settings that decide what a commit costs.
fn server_settings() -> String {
    runtime().block_on(async {
        let database = switchboard_test_postgres::test_database()
            .await
            .expect("a database on the benchmark's server");
        let client = database.connect().await.expect("connects");
        let mut settings = Vec::new();
        for name in ["server_version", "fsync", "synchronous_commit"] {
            let value: String = client
                .query_one(&format!("SHOW {name}"), &[])
                .await
                .map(|row| row.get(0))
                .unwrap_or_else(|error| format!("unknown ({error})"));
            settings.push(format!("{name} = {value}"));
        }
        settings.join(", ")
    })
}

fn summary(print: &Fingerprint) {
    const ROUNDS: usize = 10;
    const OPERATIONS_PER_ROUND: usize = 200;
    let mut subjects: Vec<Vec<Subject>> = Case::ALL
        .iter()
        .map(|_| {
            Kind::ALL
                .iter()
                .map(|&kind| {
                    let subject = subject(kind);
                    prepare(&subject, print);
                    subject
                })
                .collect()
        })
        .collect();
    let mut samples = vec![vec![Vec::new(); Kind::ALL.len()]; Case::ALL.len()];
    for _ in 0..ROUNDS {
        for (case_index, row) in subjects.iter_mut().enumerate() {
            for (kind_index, subject) in row.iter_mut().enumerate() {
                for _ in 0..OPERATIONS_PER_ROUND {
                    let started = Instant::now();
                    operate(subject, Case::ALL[case_index], print);
                    samples[case_index][kind_index].push(started.elapsed());
                }
            }
        }
    }
    println!();
    println!("PostgreSQL server: {}", server_settings());
    println!(
        "Summary: {ROUNDS} interleaved rounds of {OPERATIONS_PER_ROUND} operations per case and \
         store; µs per operation (median and p99), and the ratio of PostgreSQL to each SQLite"
    );
    for (case, row) in Case::ALL.iter().zip(samples.iter_mut()) {
        println!("{}", case.name());
        let mut medians = Vec::new();
        for (kind, durations) in Kind::ALL.iter().zip(row.iter_mut()) {
            durations.sort();
            let (median, p99) = (percentile(durations, 0.5), percentile(durations, 0.99));
            medians.push((median, p99));
            println!(
                "  {:<14} median {:>9.1} µs   p99 {:>9.1} µs",
                kind.name(),
                micros(median),
                micros(p99)
            );
        }
        let (postgres_median, postgres_p99) = medians[2];
        for (index, kind) in [Kind::SqliteFull, Kind::SqliteNormal].iter().enumerate() {
            let (median, p99) = medians[index];
            println!(
                "  postgres / {:<14} median {:>5.2}x   p99 {:>5.2}x",
                kind.name(),
                micros(postgres_median) / micros(median),
                micros(postgres_p99) / micros(p99)
            );
        }
    }
}

fn main() {
    if std::env::var(URL_VARIABLE).map_or(true, |url| url.trim().is_empty()) {
        panic!(
            "this benchmark needs a PostgreSQL server: set {URL_VARIABLE} to the URL of a user \
             who may create databases, such as the one `cargo xtask postgres` starts and prints \
             (postgres://USER:PASSWORD@HOST:PORT/postgres)"
        );
    }
    let print = fingerprint();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .configure_from_args();
    criterion_benches(&mut criterion, &print);
    criterion.final_summary();
    summary(&print);
}

//! A durable workflow step on PostgreSQL beside the same step on SQLite, in one run: the whole
//! step through the engine (a registry call and its checkpoints), and the step's checkpoints
//! alone (its start and its completion in one `RunStore::checkpoint_all`, as the engine commits
//! them).
//!
//! The workflow is ten `tool` steps of `core_get_current_user`, run to its end; a step's time
//! is the run's time over ten. SQLite is a temporary file in WAL mode with `synchronous`
//! NORMAL (its default); PostgreSQL is a fresh database on the server
//! `SWITCHBOARD_TEST_POSTGRES_URL` names, with the server's defaults (`synchronous_commit`
//! on, so each commit waits for its WAL flush). The goal is a PostgreSQL step's median
//! within 2x of SQLite's. For scale, it also times the floor of any PostgreSQL store call: one
//! `SELECT 1` through the store's runtime and pool.
//!
//! The summary runs every variant once per round, in an order that turns every round, for
//! 15 rounds (5 with `-- --quick`), and prints medians and ratios, then one `BENCH` line per
//! figure.
//!
//! Run: `SWITCHBOARD_TEST_POSTGRES_URL=postgres://… cargo bench -p
//! switchboard-workflows-postgres --bench checkpoint` (`-- nomatch --quick` for a short
//! summary alone).

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use switchboard_test_postgres::{TestDatabase, URL_VARIABLE, test_database};
use switchboard_workflows::RunStore;
use switchboard_workflows_engine::Engine;
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore};
use switchboard_workflows_sqlite::{SqliteOptions, SqliteRunStore};
use tokio::runtime::Runtime;

// The sample domains, linked so their tools register.
use switchboard_domains as _;

/// The workload, its checkpoints and the figures, shared with the engine's `workflow` bench.
#[path = "../../switchboard-workflows-engine/benches/support/mod.rs"]
mod support;

use support::{Harness, STEPS, TOOL, Workload, median, print_figure, round_order};

/// Everything the variants need, built once.
struct Fixture {
    workload: Workload,
    sqlite: Engine,
    postgres: Engine,
    sqlite_store: Arc<dyn RunStore>,
    postgres_store: Arc<dyn RunStore>,
    /// The PostgreSQL store's connections, for the round trip's floor.
    postgres_database: switchboard_postgres::Database,
    _directory: tempfile::TempDir,
    _database: TestDatabase,
}

impl Fixture {
    async fn new() -> Self {
        if std::env::var(URL_VARIABLE).is_err() {
            panic!(
                "{URL_VARIABLE} is not set: this benchmark measures PostgreSQL beside SQLite and \
                 needs a server, e.g. {URL_VARIABLE}=postgres://USER:PASSWORD@127.0.0.1:5432/postgres"
            );
        }
        let workload = Workload::new().await;
        let directory = tempfile::tempdir().expect("a temporary directory");
        let sqlite_store: Arc<dyn RunStore> = Arc::new(
            SqliteRunStore::open_with(directory.path().join("runs.db"), SqliteOptions::default())
                .expect("the SQLite run store opens"),
        );
        let database = test_database().await.expect("a fresh PostgreSQL database");
        let postgres = PostgresRunStore::open(&PostgresOptions::new(database.url()))
            .expect("the PostgreSQL run store opens");
        let postgres_database = postgres.database().clone();
        let postgres_store: Arc<dyn RunStore> = Arc::new(postgres);
        Self {
            sqlite: workload.engine(&sqlite_store),
            postgres: workload.engine(&postgres_store),
            workload,
            sqlite_store,
            postgres_store,
            postgres_database,
            _directory: directory,
            _database: database,
        }
    }
}

/// The variants of the summary.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    SqliteWorkflow,
    PostgresWorkflow,
    SqliteCheckpoints,
    PostgresCheckpoints,
    PostgresRoundTrip,
}

impl Variant {
    const ALL: [Variant; 5] = [
        Variant::SqliteWorkflow,
        Variant::PostgresWorkflow,
        Variant::SqliteCheckpoints,
        Variant::PostgresCheckpoints,
        Variant::PostgresRoundTrip,
    ];
}

/// The time of each run of one round of one variant (a workflow run, or one step's two
/// checkpoints).
async fn measure(fixture: &Fixture, variant: Variant, runs: u32) -> Vec<Duration> {
    let workload = &fixture.workload;
    let sqlite_run = workload.running_run(&fixture.sqlite_store);
    let postgres_run = workload.running_run(&fixture.postgres_store);
    let mut times = Vec::with_capacity(runs as usize);
    for number in 1..=runs {
        let started = Instant::now();
        match variant {
            Variant::SqliteWorkflow => {
                workload.run_workflow(&fixture.sqlite).await;
            }
            Variant::PostgresWorkflow => {
                workload.run_workflow(&fixture.postgres).await;
            }
            Variant::SqliteCheckpoints => {
                workload.checkpoint_step(&fixture.sqlite_store, sqlite_run, number);
            }
            Variant::PostgresCheckpoints => {
                workload.checkpoint_step(&fixture.postgres_store, postgres_run, number);
            }
            Variant::PostgresRoundTrip => {
                let one: i32 = fixture
                    .postgres_database
                    .call(
                        |client| async move { Ok(client.query_one("SELECT 1", &[]).await?.get(0)) },
                    )
                    .expect("the database answers");
                black_box(one);
            }
        }
        times.push(started.elapsed());
    }
    times
}

fn summary(runtime: &Runtime, fixture: &Fixture, quick: bool) {
    let (rounds, runs) = if quick { (5, 20) } else { (15, 50) };
    let mut measured: Vec<Vec<f64>> = Variant::ALL.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for variant in round_order(&Variant::ALL, round) {
            let (count, per_run) = match variant {
                Variant::SqliteCheckpoints
                | Variant::PostgresCheckpoints
                | Variant::PostgresRoundTrip => (runs * STEPS, 1),
                _ => (runs, STEPS),
            };
            let times = runtime.block_on(measure(fixture, variant, count));
            measured[variant as usize].extend(
                times
                    .iter()
                    .map(|time| time.as_nanos() as f64 / f64::from(per_run)),
            );
        }
    }
    let median_of = |variant: Variant| median(measured[variant as usize].clone());
    let sqlite_step = median_of(Variant::SqliteWorkflow);
    let postgres_step = median_of(Variant::PostgresWorkflow);
    let sqlite_checkpoints = median_of(Variant::SqliteCheckpoints);
    let postgres_checkpoints = median_of(Variant::PostgresCheckpoints);
    let round_trip = median_of(Variant::PostgresRoundTrip);
    println!(
        "\nmedians of {rounds} interleaved rounds, a {STEPS}-step workflow of `{TOOL}` \
         ({runs} runs a round), one thread:"
    );
    println!(
        "  a durable workflow step: PostgreSQL {:.1} µs, SQLite (WAL, NORMAL) {:.1} µs: \
         {:.2}x (goal <= 2x)",
        postgres_step / 1e3,
        sqlite_step / 1e3,
        postgres_step / sqlite_step
    );
    println!(
        "  a step's checkpoints alone (start and completion, one commit): PostgreSQL {:.1} µs, \
         SQLite {:.1} µs: {:.2}x",
        postgres_checkpoints / 1e3,
        sqlite_checkpoints / 1e3,
        postgres_checkpoints / sqlite_checkpoints
    );
    println!(
        "  the floor: one PostgreSQL round trip through the store's runtime (`SELECT 1`): \
         {:.1} µs",
        round_trip / 1e3
    );
    print_figure("workflow.postgres_step", postgres_step, sqlite_step, "ns");
    print_figure(
        "workflow.checkpoint_postgres",
        postgres_checkpoints,
        sqlite_checkpoints,
        "ns",
    );
}

fn main() {
    let harness = Harness::new();
    let fixture = harness.runtime.block_on(Fixture::new());
    harness.run(
        &fixture.workload,
        |criterion, runtime| {
            criterion.bench_function("workflow of 10 reads, SQLite store", |b| {
                b.iter(|| runtime.block_on(fixture.workload.run_workflow(&fixture.sqlite)))
            });
            criterion.bench_function("workflow of 10 reads, PostgreSQL store", |b| {
                b.iter(|| runtime.block_on(fixture.workload.run_workflow(&fixture.postgres)))
            });
        },
        |runtime, quick| summary(runtime, &fixture, quick),
    );
}

//! What the persistent stores cost on the call path, against the in-memory stores measured in
//! the same run: the store operations of one mutation, nothing else.
//!
//! - `new key`: `claim` of a new key then `complete` with a small JSON result: what every
//!   first run of an execute or restricted tool adds. On SQLite: two commits (the claim before
//!   the tool runs, the result after).
//! - `replay`: `claim` of a completed key (a retry): one indexed read on SQLite.
//! - `proposal`: `insert` then `decide` (approve) then `get`: what an agent's proposal and its
//!   approval add, minus the tool's run.
//!
//! Each case runs on the in-memory store, on SQLite with `synchronous = FULL` (the default:
//! every commit `fsync`s the WAL) and with `NORMAL`. Each SQLite case gets a new database file,
//! deleted afterwards. Criterion measures each case on its own; then a summary interleaves
//! them round by round, so machine noise hits them alike, and prints the median time per
//! operation and the ratio to the in-memory store.
//!
//! Run: `cargo bench -p switchboard-approvals-sqlite --bench stores`.

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use criterion::Criterion;
use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use switchboard_approvals::{
    Claim, Decision, Fingerprint, IdempotencyScope, IdempotencyStore, MemoryIdempotencyStore,
    MemoryProposalStore, Proposal, ProposalStatus, ProposalStore, Proposer, StoredOutcome,
};
use switchboard_approvals_sqlite::{ApprovalsDatabase, SqliteOptions, Synchronous};
use switchboard_core::digest_json;
use switchboard_core::{ActionId, Initiator};
use tempfile::TempDir;

const RETENTION: Duration = Duration::from_secs(24 * 3_600);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Memory,
    SqliteFull,
    SqliteNormal,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Memory, Kind::SqliteFull, Kind::SqliteNormal];

    fn name(self) -> &'static str {
        match self {
            Kind::Memory => "memory",
            Kind::SqliteFull => "sqlite FULL",
            Kind::SqliteNormal => "sqlite NORMAL",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    NewKey,
    Replay,
    Proposal,
}

impl Case {
    const ALL: [Case; 3] = [Case::NewKey, Case::Replay, Case::Proposal];

    fn name(self) -> &'static str {
        match self {
            Case::NewKey => "new key (claim + complete)",
            Case::Replay => "replay (claim of a done key)",
            Case::Proposal => "proposal (insert + approve + get)",
        }
    }
}

/// The stores under test, with the directory their file lives in, and a counter for fresh
/// keys and ids.
struct Subject {
    keys: Arc<dyn IdempotencyStore>,
    proposals: Arc<dyn ProposalStore>,
    next: u64,
    _dir: Option<TempDir>,
}

fn subject(kind: Kind) -> Subject {
    let synchronous = match kind {
        Kind::Memory => {
            return Subject {
                keys: Arc::new(MemoryIdempotencyStore::new(RETENTION)),
                proposals: Arc::new(MemoryProposalStore::new()),
                next: 0,
                _dir: None,
            };
        }
        Kind::SqliteFull => Synchronous::Full,
        Kind::SqliteNormal => Synchronous::Normal,
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let database = ApprovalsDatabase::open_with(
        dir.path().join("approvals.db"),
        SqliteOptions::default().synchronous(synchronous),
    )
    .expect("the benchmark database opens");
    Subject {
        keys: Arc::new(database.idempotency_store(RETENTION)),
        proposals: Arc::new(database.proposal_store()),
        next: 0,
        _dir: Some(dir),
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

fn proposal(n: u64) -> Proposal {
    let now = Timestamp::now();
    Proposal {
        id: format!("prop-bench-{n}").into(),
        org_id: "acme".into(),
        tool: Arc::from("roster_assign_shift"),
        params: Arc::new(json!({ "shift_id": "acme-2026-11-24-pm", "user_id": "sam" })),
        summary: "assign the Tuesday evening to sam".to_owned(),
        proposer: Proposer {
            user_id: "sam".into(),
            session_id: "session".into(),
            correlation_id: format!("correlation-{n}").into(),
            initiator: Initiator::Agent,
            agent_type: Some("planner".into()),
            thread_id: None,
            project_id: None,
        },
        created_at: now,
        expires_at: now
            .saturating_add(SignedDuration::from_hours(24))
            .unwrap_or(now),
        status: ProposalStatus::Pending,
    }
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
            assert!(matches!(claim, Claim::Run), "a new key runs");
            subject.keys.complete(&key, outcome(n));
        }
        Case::Replay => {
            let claim = subject.keys.claim(&replayed_key(), print, Timestamp::now());
            assert!(matches!(claim, Claim::Done(_)), "a done key replays");
            black_box(claim);
        }
        Case::Proposal => {
            let stored = proposal(n);
            subject
                .proposals
                .insert(stored.clone())
                .expect("the proposal is stored");
            let decided = subject.proposals.decide(
                &stored.org_id,
                &stored.id,
                Decision::Approve { by: "mark".into() },
                Timestamp::now(),
            );
            assert!(decided.is_ok(), "a pending proposal is approved");
            black_box(
                subject
                    .proposals
                    .get(&stored.org_id, &stored.id)
                    .expect("the proposal reads back"),
            );
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

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn summary(print: &Fingerprint) {
    const ROUNDS: usize = 9;
    const TIME_PER_CASE: Duration = Duration::from_millis(250);
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
                let started = Instant::now();
                let mut operations = 0_u32;
                while started.elapsed() < TIME_PER_CASE {
                    operate(subject, Case::ALL[case_index], print);
                    operations += 1;
                }
                let per_operation = started.elapsed().as_secs_f64() / f64::from(operations);
                samples[case_index][kind_index].push(per_operation * 1e6);
            }
        }
    }
    println!();
    println!(
        "Summary: {ROUNDS} interleaved rounds of {} ms per case; median µs per operation, and \
         the ratio to the in-memory store",
        TIME_PER_CASE.as_millis()
    );
    print!("{:<36}", "case \\ store");
    for kind in Kind::ALL {
        print!(" {:>16}", kind.name());
    }
    println!();
    for (case, row) in Case::ALL.iter().zip(samples.iter_mut()) {
        let medians: Vec<f64> = row.iter_mut().map(|samples| median(samples)).collect();
        print!("{:<36}", case.name());
        for value in &medians {
            print!(" {value:>13.2} µs");
        }
        println!();
        print!("{:<36}", "  ratio to memory");
        for value in &medians {
            print!(" {:>15.0}x", value / medians[0]);
        }
        println!();
    }
}

fn main() {
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

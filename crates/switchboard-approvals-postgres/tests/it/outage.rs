//! A server stopped mid-use (`pg_ctl stop -m immediate`, as a crash would, on a private test
//! cluster): every operation fails closed with a clear error within the call timeout (no
//! hang); nothing acknowledged before the stop is lost; and once the server is back the stores
//! recover by themselves.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use switchboard_approvals::{
    Claim, Decision, Fingerprint, IdempotencyScope, IdempotencyStore, Proposal, ProposalStatus,
    ProposalStore, Proposer, StoredOutcome, TransitionError,
};
use switchboard_approvals_postgres::{ApprovalsDatabase, PostgresOptions};
use switchboard_core::{ActionId, Initiator, InvokeError, digest_json};
use switchboard_test_postgres::{TestCluster, TestDatabase};

const CALL_TIMEOUT: Duration = Duration::from_secs(2);
const RETENTION: Duration = Duration::from_secs(3_600);

fn proposal(id: &str) -> Proposal {
    let now = Timestamp::now();
    Proposal {
        id: id.into(),
        org_id: "acme".into(),
        tool: Arc::from("roster_assign_shift"),
        params: Arc::new(json!({ "shift_id": "acme-2026-11-24-pm", "user_id": "sam" })),
        summary: "assign sam".to_owned(),
        proposer: Proposer {
            user_id: "sam".into(),
            session_id: "session".into(),
            correlation_id: "correlation".into(),
            initiator: Initiator::Agent,
            agent_type: None,
            thread_id: None,
            project_id: None,
        },
        created_at: now,
        expires_at: now
            .saturating_add(SignedDuration::from_hours(24))
            .expect("in range"),
        status: ProposalStatus::Pending,
    }
}

fn scope(key: &str) -> IdempotencyScope {
    IdempotencyScope::new("acme".into(), key.into())
}

fn print() -> Fingerprint {
    Fingerprint::new("t", digest_json(&json!({ "n": 1 })).expect("a digest"))
}

fn refusal_code(claim: Claim) -> String {
    match claim {
        Claim::Done(outcome) => match &outcome.result {
            Err(InvokeError::ToolFailed { error, .. }) => error.code().to_owned(),
            other => panic!("expected a tool_failed refusal, got {other:?}"),
        },
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Runs `operation`, checking it answers within the call timeout (and a margin).
fn promptly<T>(what: &str, operation: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let answer = operation();
    assert!(
        started.elapsed() < CALL_TIMEOUT + Duration::from_secs(2),
        "{what} took {:?}, past the call timeout",
        started.elapsed()
    );
    answer
}

#[test]
fn a_server_stopped_mid_use_fails_closed_loses_nothing_acknowledged_and_recovers() {
    let mut cluster = TestCluster::start().expect("a private cluster");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let test: TestDatabase = runtime
        .block_on(TestDatabase::create(&cluster.url()))
        .expect("a database on the private cluster");
    let options = PostgresOptions::new(test.url())
        .with_call_timeout(CALL_TIMEOUT)
        .with_connect_timeout(Duration::from_secs(1));
    let database = ApprovalsDatabase::open_with(&options).expect("opens");
    let (proposals, keys) = (
        database.proposal_store(),
        database.idempotency_store(RETENTION),
    );
    // Acknowledged before the crash: a proposal, a decision, a first result.
    let (kept, decided) = (proposal("prop-kept"), proposal("prop-decided"));
    proposals.insert(kept.clone()).expect("stored");
    proposals.insert(decided.clone()).expect("stored");
    let approved = proposals
        .decide(
            &decided.org_id,
            &decided.id,
            Decision::Approve { by: "mark".into() },
            Timestamp::now(),
        )
        .expect("decided");
    assert!(matches!(
        keys.claim(&scope("done"), &print(), Timestamp::now()),
        Claim::Run
    ));
    keys.complete(
        &scope("done"),
        Arc::new(StoredOutcome::ok(ActionId::from("act-done"), json!("ran"))),
    );

    cluster
        .stop_immediate()
        .expect("the server stops as a crash would");

    let read = promptly("a read", || proposals.get(&kept.org_id, &kept.id));
    let error = read.expect_err("a read of a stopped server is an error, not `None`");
    assert_eq!(error.action, "reading proposal prop-kept");
    assert!(!error.reason.contains(cluster.password()), "{error}");
    let decision = promptly("a decision", || {
        proposals.decide(
            &kept.org_id,
            &kept.id,
            Decision::Approve { by: "mark".into() },
            Timestamp::now(),
        )
    });
    assert!(
        matches!(decision, Err(TransitionError::Store(_))),
        "{decision:?}"
    );
    let claim = promptly("a claim", || {
        keys.claim(&scope("new"), &print(), Timestamp::now())
    });
    assert_eq!(refusal_code(claim), "idempotency_store_unavailable");

    cluster.start_again().expect("the server starts again");

    // The pool reconnects by itself: the first calls may still meet dead connections.
    let started = Instant::now();
    let back = loop {
        match proposals.get(&kept.org_id, &kept.id) {
            Ok(found) => break found,
            Err(error) if started.elapsed() < Duration::from_secs(20) => {
                drop(error);
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(error) => panic!("the store did not recover within 20 s: {error}"),
        }
    };
    assert_eq!(back, Some(kept.clone()));
    assert_eq!(
        proposals.get(&decided.org_id, &decided.id),
        Ok(Some(approved)),
        "the decision acknowledged before the crash is kept"
    );
    match keys.claim(&scope("done"), &print(), Timestamp::now()) {
        Claim::Done(outcome) => assert_eq!(outcome.action_id, "act-done"),
        other => panic!("the first result acknowledged before the crash replays, got {other:?}"),
    }
    assert!(
        matches!(
            keys.claim(&scope("new"), &print(), Timestamp::now()),
            Claim::Run
        ),
        "the claim refused while the server was down recorded nothing"
    );
    assert!(
        proposals
            .decide(
                &kept.org_id,
                &kept.id,
                Decision::Approve { by: "mark".into() },
                Timestamp::now(),
            )
            .is_ok(),
        "the decision refused while the server was down left the proposal pending"
    );
    drop((proposals, keys, database));
    drop(test);
}

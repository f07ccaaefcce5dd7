//! What the file adds to the conformance suites: proposals, decisions and first results
//! survive a restart (a reopened file); a claim nobody finished is in doubt, never run again;
//! two processes on one file (two databases opened on it) decide once and run a key once; and
//! a database that cannot be written fails closed: nothing runs, nothing is decided, and the
//! caller is told so (an error naming the file, not "not found").

use std::{
    sync::{Arc, Barrier},
    thread,
    time::Duration,
};

use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use switchboard_approvals::{
    Claim, Decision, Fingerprint, IdempotencyScope, IdempotencyStore, Proposal, ProposalStatus,
    ProposalStore, Proposer, StoredOutcome, TransitionError,
};
use switchboard_approvals_sqlite::{ApprovalsDatabase, SqliteOptions};
use switchboard_core::digest_json;
use switchboard_core::{ActionId, Initiator, InvokeError, ToolError};

const RETENTION: Duration = Duration::from_secs(3_600);

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

fn open(path: &std::path::Path) -> ApprovalsDatabase {
    ApprovalsDatabase::open(path).expect("the approvals database opens")
}

fn proposal(id: &str, org: &str) -> Proposal {
    let now = Timestamp::now();
    Proposal {
        id: id.into(),
        org_id: org.into(),
        tool: Arc::from("roster_assign_shift"),
        params: Arc::new(json!({ "shift_id": "acme-2026-11-24-pm", "user_id": "sam" })),
        summary: "assign the Tuesday evening to sam".to_owned(),
        proposer: Proposer {
            user_id: "sam".into(),
            session_id: "session".into(),
            correlation_id: "correlation".into(),
            initiator: Initiator::Agent,
            agent_type: Some("planner".into()),
            thread_id: None,
            project_id: Some("p1".into()),
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

fn print(n: u64) -> Fingerprint {
    Fingerprint::new(
        "roster_assign_shift",
        digest_json(&json!({ "n": n })).expect("JSON has a digest"),
    )
}

fn done(claim: Claim) -> Arc<StoredOutcome> {
    match claim {
        Claim::Done(outcome) => outcome,
        Claim::Run => panic!("expected a replay, the key would run"),
        Claim::Running(_) => panic!("expected a replay, the key is running"),
        Claim::Conflict => panic!("expected a replay, got a conflict"),
    }
}

/// The `tool_failed` code of a made-up refusal.
fn refusal_code(outcome: &StoredOutcome) -> &str {
    match &outcome.result {
        Err(InvokeError::ToolFailed { error, .. }) => error.code(),
        other => panic!("expected a tool_failed refusal, got {other:?}"),
    }
}

#[test]
fn proposals_and_decisions_survive_a_reopen() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    let (pending, approved, rejected) = (
        proposal("prop-pending", "acme"),
        proposal("prop-approved", "acme"),
        proposal("prop-rejected", "globex"),
    );
    let approved_now;
    let rejected_now;
    {
        let store = open(&path).proposal_store();
        for proposal in [&pending, &approved, &rejected] {
            store.insert(proposal.clone()).expect("stored");
        }
        store
            .decide(
                &approved.org_id,
                &approved.id,
                Decision::Approve { by: "mark".into() },
                Timestamp::now(),
            )
            .expect("pending");
        store
            .record_outcome(&approved.org_id, &approved.id, "ok")
            .expect("recorded");
        approved_now = store
            .get(&approved.org_id, &approved.id)
            .expect("readable")
            .expect("stored");
        rejected_now = store
            .decide(
                &rejected.org_id,
                &rejected.id,
                Decision::Reject {
                    by: "gina".into(),
                    feedback: "not this week".to_owned(),
                },
                Timestamp::now(),
            )
            .expect("pending");
    }
    let store = open(&path).proposal_store();
    assert_eq!(
        store.get(&pending.org_id, &pending.id),
        Ok(Some(pending.clone()))
    );
    assert_eq!(
        store.get(&approved.org_id, &approved.id),
        Ok(Some(approved_now.clone()))
    );
    assert!(matches!(
        &approved_now.status,
        ProposalStatus::Approved { outcome: Some(outcome), .. } if outcome == "ok"
    ));
    assert_eq!(
        store.get(&rejected.org_id, &rejected.id),
        Ok(Some(rejected_now))
    );
    assert_eq!(store.list(&"acme".into()).expect("readable").len(), 2);
    let again = store.decide(
        &approved.org_id,
        &approved.id,
        Decision::Approve { by: "alice".into() },
        Timestamp::now(),
    );
    assert!(
        matches!(again, Err(TransitionError::Closed(_))),
        "a decision made before the restart is final: {again:?}"
    );
}

#[test]
fn first_results_survive_a_reopen_and_replay_unchanged_without_their_typed_copy() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    let now = Timestamp::now();
    let ok = Arc::new(StoredOutcome {
        action_id: ActionId::from("act-ok"),
        result: Ok(json!({ "id": "acme-2026-11-24-pm", "assignee": "sam" })),
        typed: Some(Arc::new(7_u8)),
    });
    let failed = Arc::new(StoredOutcome {
        action_id: ActionId::from("act-failed"),
        result: Err(InvokeError::ToolFailed {
            tool: "roster_assign_shift".to_owned(),
            error: ToolError::new("shift_not_found", "no shift `x` in your organisation"),
        }),
        typed: None,
    });
    {
        let store = open(&path).idempotency_store(RETENTION);
        for (key, outcome) in [("ok", &ok), ("failed", &failed)] {
            assert!(matches!(
                store.claim(&scope(key), &print(1), now),
                Claim::Run
            ));
            store.complete(&scope(key), Arc::clone(outcome));
        }
    }
    let store = open(&path).idempotency_store(RETENTION);
    for (key, outcome) in [("ok", &ok), ("failed", &failed)] {
        let replayed = done(store.claim(&scope(key), &print(1), now));
        assert_eq!(replayed.action_id, outcome.action_id);
        assert_eq!(replayed.result, outcome.result);
        assert!(
            replayed.typed.is_none(),
            "a typed copy is a value of the process that made it"
        );
    }
    assert!(matches!(
        store.claim(&scope("ok"), &print(2), now),
        Claim::Conflict
    ));
    assert_eq!(store.len(), 2);
}

#[test]
fn a_claim_left_unfinished_by_a_crash_is_in_doubt_and_never_runs_again() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    let now = Timestamp::now();
    {
        // The process claims the key, starts the tool, and dies: nothing completes or
        // releases the key.
        let store = open(&path).idempotency_store(RETENTION);
        assert!(matches!(
            store.claim(&scope("k"), &print(1), now),
            Claim::Run
        ));
    }
    let store = open(&path).idempotency_store(RETENTION);
    for _ in 0..2 {
        let answer = done(store.claim(&scope("k"), &print(1), now));
        assert_eq!(refusal_code(&answer), "outcome_unknown");
        let message = answer.result.as_ref().expect_err("a refusal").to_string();
        assert!(message.contains("`k`"), "{message}");
        assert!(message.contains("Nothing ran now"), "{message}");
        assert_eq!(answer.action_id, "in-doubt:k");
    }
    assert!(matches!(
        store.claim(&scope("k"), &print(2), now),
        Claim::Conflict
    ));
    // Once the retention has passed since the claim, the key is new again.
    let later = now
        .saturating_add(SignedDuration::try_from(RETENTION).expect("fits"))
        .expect("in range");
    assert!(matches!(
        store.claim(&scope("k"), &print(1), later),
        Claim::Run
    ));
}

#[test]
fn another_process_finishing_its_claim_turns_the_doubt_into_its_result() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    let now = Timestamp::now();
    let first = open(&path).idempotency_store(RETENTION);
    let second = open(&path).idempotency_store(RETENTION);
    assert!(matches!(
        first.claim(&scope("k"), &print(1), now),
        Claim::Run
    ));
    let meanwhile = done(second.claim(&scope("k"), &print(1), now));
    assert_eq!(refusal_code(&meanwhile), "outcome_unknown");
    let result = Arc::new(StoredOutcome::ok(
        ActionId::from("act-1"),
        json!("ran once"),
    ));
    first.complete(&scope("k"), Arc::clone(&result));
    let replayed = done(second.claim(&scope("k"), &print(1), now));
    assert_eq!(replayed.action_id, "act-1");
    assert_eq!(replayed.result, Ok(json!("ran once")));
}

#[test]
fn two_processes_racing_for_a_new_key_run_it_once() {
    const CALLERS_PER_PROCESS: usize = 6;
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    let processes: Vec<Arc<dyn IdempotencyStore>> = (0..2)
        .map(|_| Arc::new(open(&path).idempotency_store(RETENTION)) as Arc<dyn IdempotencyStore>)
        .collect();
    for round in 0..10 {
        let key = scope(&format!("race-{round}"));
        let barrier = Barrier::new(2 * CALLERS_PER_PROCESS);
        let runs: usize = thread::scope(|threads| {
            let handles: Vec<_> = processes
                .iter()
                .flat_map(|store| std::iter::repeat_n(store, CALLERS_PER_PROCESS))
                .map(|store| {
                    let (barrier, key) = (&barrier, &key);
                    threads.spawn(move || {
                        barrier.wait();
                        matches!(store.claim(key, &print(1), Timestamp::now()), Claim::Run)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| usize::from(handle.join().expect("a claiming thread")))
                .sum()
        });
        assert_eq!(runs, 1, "round {round}: the key ran {runs} times");
    }
}

#[test]
fn racing_deciders_in_two_processes_have_one_winner() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    let processes = [open(&path).proposal_store(), open(&path).proposal_store()];
    for round in 0..10 {
        let proposal = proposal(&format!("prop-{round}"), "acme");
        processes[0].insert(proposal.clone()).expect("stored");
        let barrier = Barrier::new(8);
        let wins: usize = thread::scope(|threads| {
            let handles: Vec<_> = (0..8)
                .map(|decider| {
                    let (barrier, proposal) = (&barrier, &proposal);
                    let store = &processes[decider % 2];
                    threads.spawn(move || {
                        barrier.wait();
                        let decision = Decision::Approve {
                            by: format!("approver-{decider}").into(),
                        };
                        store
                            .decide(&proposal.org_id, &proposal.id, decision, Timestamp::now())
                            .is_ok()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| usize::from(handle.join().expect("a deciding thread")))
                .sum()
        });
        assert_eq!(wins, 1, "round {round}: {wins} approvals won");
    }
}

#[test]
fn a_database_that_cannot_be_written_fails_closed() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    let database = ApprovalsDatabase::open_with(
        &path,
        SqliteOptions::default().busy_timeout(Duration::from_millis(50)),
    )
    .expect("opens");
    let keys = database.idempotency_store(RETENTION);
    let proposals = database.proposal_store();
    let pending = proposal("prop-locked", "acme");
    proposals.insert(pending.clone()).expect("stored");

    // Another process holds the write lock for longer than the busy timeout.
    let blocker = rusqlite::Connection::open(&path).expect("a second connection");
    blocker
        .execute_batch("BEGIN EXCLUSIVE")
        .expect("the write lock");

    let claim = keys.claim(&scope("k"), &print(1), Timestamp::now());
    let answer = done(claim);
    assert_eq!(refusal_code(&answer), "idempotency_store_unavailable");
    let decided = proposals.decide(
        &pending.org_id,
        &pending.id,
        Decision::Approve { by: "mark".into() },
        Timestamp::now(),
    );
    let Err(TransitionError::Store(error)) = decided else {
        panic!("a decision the store could not record is its error, got {decided:?}");
    };
    assert_eq!(error.action, "deciding proposal prop-locked");
    assert!(
        error.reason.contains(&path.display().to_string()),
        "the error names the file: {error}"
    );
    let refused = proposals.insert(proposal("prop-new", "acme"));
    assert!(
        matches!(&refused, Err(error) if error.action == "storing proposal prop-new"),
        "a proposal the store could not keep is an error: {refused:?}"
    );

    blocker.execute_batch("ROLLBACK").expect("released");
    // Nothing was recorded while it failed: the key runs and the proposal is still pending.
    assert!(matches!(
        keys.claim(&scope("k"), &print(1), Timestamp::now()),
        Claim::Run
    ));
    assert_eq!(
        proposals.get(&pending.org_id, &pending.id),
        Ok(Some(pending)),
        "the failed decision left the proposal pending"
    );
    assert_eq!(
        proposals.get(&"acme".into(), &"prop-new".into()),
        Ok(None),
        "the refused proposal was not stored"
    );
}

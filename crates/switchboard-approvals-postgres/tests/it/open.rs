//! Opening the approvals tables: a fresh database is migrated to this build's version and a
//! reopen migrates nothing; a database at every earlier version migrates with its rows kept;
//! a database whose approvals tables are newer than the binary is refused with one clear line;
//! a wrong password is refused without the password in the message.

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use switchboard_approvals::{
    Claim, Fingerprint, IdempotencyScope, IdempotencyStore, Proposal, ProposalStatus,
    ProposalStore, Proposer, StoredOutcome,
};
use switchboard_approvals_postgres::{
    ApprovalsDatabase, OpenError, PostgresOptions, SCHEMA_VERSION,
};
use switchboard_core::{ActionId, Initiator, digest_json};
use switchboard_test_postgres::TestDatabase;

use crate::common::fresh_database;

/// The approvals row of `switchboard_schema`, read with a client of its own.
fn stored_version(test: &TestDatabase) -> i64 {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let client = test.connect().await.expect("connects");
            client
                .query_one(
                    "SELECT version FROM switchboard_schema WHERE store = 'approvals'",
                    &[],
                )
                .await
                .expect("the approvals row")
                .get::<_, i64>(0)
        })
}

fn execute(test: &TestDatabase, sql: &str) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let client = test.connect().await.expect("connects");
            client.batch_execute(sql).await.expect("the statement runs");
        });
}

fn sample_proposal() -> Proposal {
    let created_at = Timestamp::constant(1_795_000_000, 123_456_789);
    Proposal {
        id: "prop-kept".into(),
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
        created_at,
        expires_at: created_at
            .saturating_add(SignedDuration::from_hours(24 * 365 * 20))
            .expect("in range"),
        status: ProposalStatus::Pending,
    }
}

fn kept_key() -> (IdempotencyScope, Fingerprint) {
    (
        IdempotencyScope::new("acme".into(), "kept".into()),
        Fingerprint::new("t", digest_json(&json!({ "n": 1 })).expect("a digest")),
    )
}

#[test]
fn a_fresh_database_is_migrated_and_a_reopen_migrates_nothing() {
    let test = fresh_database();
    let database = ApprovalsDatabase::open(test.url()).expect("opens");
    assert_eq!(database.schema_version(), SCHEMA_VERSION);
    assert!(
        database
            .proposal_store()
            .list(&"acme".into())
            .expect("readable")
            .is_empty()
    );
    assert_eq!(stored_version(&test), SCHEMA_VERSION);
    drop(database);
    drop(ApprovalsDatabase::open(test.url()).expect("reopens"));
    assert_eq!(stored_version(&test), SCHEMA_VERSION);
}

#[test]
fn a_database_at_every_earlier_version_migrates_with_its_rows_kept() {
    for from in 0..SCHEMA_VERSION {
        let test = fresh_database();
        let options = PostgresOptions::new(test.url());
        let older = ApprovalsDatabase::open_at(&options, from).expect("opens at the older version");
        // Rows written by the older version (none at version 0: it has no tables).
        if from >= 1 {
            older
                .proposal_store()
                .insert(sample_proposal())
                .expect("stored");
            let keys = older.idempotency_store(std::time::Duration::from_secs(3_600));
            let (scope, print) = kept_key();
            assert!(matches!(
                keys.claim(&scope, &print, Timestamp::now()),
                Claim::Run
            ));
            keys.complete(
                &scope,
                Arc::new(StoredOutcome::ok(ActionId::from("act-kept"), json!(1))),
            );
        }
        drop(older);
        let database = ApprovalsDatabase::open_with(&options).expect("migrates");
        assert_eq!(stored_version(&test), SCHEMA_VERSION, "from version {from}");
        let proposals = database.proposal_store();
        let keys = database.idempotency_store(std::time::Duration::from_secs(3_600));
        let (scope, print) = kept_key();
        if from >= 1 {
            assert_eq!(
                proposals.get(&"acme".into(), &"prop-kept".into()),
                Ok(Some(sample_proposal())),
                "from version {from}"
            );
            assert!(matches!(
                keys.claim(&scope, &print, Timestamp::now()),
                Claim::Done(outcome) if outcome.action_id == "act-kept"
            ));
        } else {
            proposals
                .insert(sample_proposal())
                .expect("the tables work");
            assert!(matches!(
                keys.claim(&scope, &print, Timestamp::now()),
                Claim::Run
            ));
        }
    }
}

#[test]
fn a_database_newer_than_the_binary_is_refused() {
    let test = fresh_database();
    drop(ApprovalsDatabase::open(test.url()).expect("opens"));
    execute(
        &test,
        &format!(
            "UPDATE switchboard_schema SET version = {} WHERE store = 'approvals'",
            SCHEMA_VERSION + 1
        ),
    );
    let error = ApprovalsDatabase::open(test.url()).expect_err("a newer schema is refused");
    assert!(
        matches!(error, OpenError::TooNew { found, supported, .. }
            if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("approvals"), "{message}");
    assert!(message.contains("newer"), "{message}");
    assert_eq!(
        stored_version(&test),
        SCHEMA_VERSION + 1,
        "nothing was written"
    );
}

#[test]
fn a_wrong_password_is_refused_without_showing_it() {
    let test = fresh_database();
    let config = test.config().expect("a config");
    let user = config.get_user().expect("a user");
    let host = match &config.get_hosts()[0] {
        switchboard_postgres::tokio_postgres::config::Host::Tcp(host) => host.clone(),
        other => panic!("a TCP host, got {other:?}"),
    };
    let port = config.get_ports()[0];
    let url = format!(
        "postgres://{user}:not-the-password-7f3a@{host}:{port}/{}",
        test.name()
    );
    let error = ApprovalsDatabase::open(&url).expect_err("a wrong password is refused");
    let message = error.to_string();
    assert!(
        matches!(error, OpenError::Authentication { .. }),
        "{error:?}"
    );
    assert!(!message.contains("not-the-password-7f3a"), "{message}");
}

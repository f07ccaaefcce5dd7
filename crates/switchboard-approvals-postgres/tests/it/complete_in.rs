//! `complete_in`: a key completed inside a tool's own transaction is done exactly when that
//! transaction commits, and the registry's completion afterwards changes nothing.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;
use serde_json::json;
use switchboard_approvals::{
    Claim, Fingerprint, IdempotencyScope, IdempotencyStore, StoredOutcome,
};
use switchboard_approvals_postgres::ApprovalsDatabase;
use switchboard_core::{ActionId, Digest, IdempotencyKey, OrgId};

const RETENTION: Duration = Duration::from_secs(3600);

fn claim_is_done_with(claim: Claim, expected: &StoredOutcome) {
    match claim {
        Claim::Done(stored) => {
            assert_eq!(stored.action_id, expected.action_id);
            assert_eq!(stored.result, expected.result);
        }
        other => panic!("expected the first result, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_completed_in_a_transaction_is_done_only_once_it_commits() {
    let test = switchboard_test_postgres::test_database()
        .await
        .expect("a test database (run the tests through `cargo xtask test`)");
    let url = test.url().to_owned();
    let (first, other_node) = tokio::task::spawn_blocking(move || {
        let open = || ApprovalsDatabase::open(&url).expect("the approvals tables open");
        (
            open().idempotency_store(RETENTION),
            open().idempotency_store(RETENTION),
        )
    })
    .await
    .expect("opened");
    let scope = IdempotencyScope::new(OrgId::from("acme"), IdempotencyKey::new("key-1"));
    let fingerprint = Fingerprint::new("roster_assign_shift", Digest([7; 32]));
    assert!(matches!(
        first.claim(&scope, &fingerprint, Timestamp::now()),
        Claim::Run
    ));
    let outcome = StoredOutcome::ok(ActionId::new("act-1"), json!({ "assignee": "sam" }));
    let mut client = test.connect().await.expect("a client");

    let rolled_back = client.transaction().await.expect("a transaction");
    assert!(
        first
            .complete_in(&rolled_back, &scope, &outcome)
            .await
            .expect("completed in the transaction")
    );
    rolled_back.rollback().await.expect("rolled back");
    assert!(
        matches!(
            other_node.claim(&scope, &fingerprint, Timestamp::now()),
            Claim::Running(_)
        ),
        "a completion whose transaction rolled back must not be seen"
    );

    let committed = client.transaction().await.expect("a transaction");
    assert!(
        first
            .complete_in(&committed, &scope, &outcome)
            .await
            .expect("completed in the transaction")
    );
    committed.commit().await.expect("committed");
    claim_is_done_with(
        other_node.claim(&scope, &fingerprint, Timestamp::now()),
        &outcome,
    );

    // The registry completes the key after the tool returns: the same result, again.
    first.complete(&scope, Arc::new(outcome.clone()));
    claim_is_done_with(
        other_node.claim(&scope, &fingerprint, Timestamp::now()),
        &outcome,
    );
}

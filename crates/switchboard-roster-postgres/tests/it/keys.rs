//! A change and its call's idempotency key commit together: a node that dies between the
//! change and the registry's completion leaves the key done, never in doubt; and a change whose
//! key this node no longer holds is not made.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;
use serde_json::json;
use switchboard_approvals::{Claim, Fingerprint, IdempotencyScope, IdempotencyStore};
use switchboard_approvals_postgres::{ApprovalsDatabase, PostgresIdempotencyStore};
use switchboard_core::{ActionId, ActionKey, Digest, IdempotencyKey, OrgId};
use switchboard_domain_roster::{Changed, RosterBook, RosterChange, RosterError, RosterStore};
use switchboard_roster_postgres::PostgresRosterStore;

use crate::common::fresh_database;

const RETENTION: Duration = Duration::from_secs(3600);
const SHIFT: &str = "acme-2026-11-28-am";

fn keys(url: &str) -> Arc<PostgresIdempotencyStore> {
    Arc::new(
        ApprovalsDatabase::open(url)
            .expect("the approvals tables open")
            .idempotency_store(RETENTION),
    )
}

/// The seeded roster at `url`, completing each change's key through `keys`.
async fn seeded_roster(url: &str, keys: Arc<PostgresIdempotencyStore>) -> PostgresRosterStore {
    let roster = PostgresRosterStore::open(url)
        .expect("opens")
        .completing_keys_of(keys);
    roster.seed(RosterBook::seeded()).await.expect("seeded");
    roster
}

fn assign_to_alice() -> RosterChange {
    Box::new(|book: &mut RosterBook| {
        let shift = book.assign(&OrgId::from("acme"), SHIFT, "alice")?;
        Changed::new(shift)
    })
}

async fn assignee(store: &PostgresRosterStore) -> Option<String> {
    let acme = OrgId::from("acme");
    let book = store.load(acme.clone()).await.expect("loads");
    book.find(&acme, SHIFT)
        .expect("the seeded shift")
        .assignee
        .clone()
}

/// The key of the call, claimed by `keys`.
fn claimed(keys: &PostgresIdempotencyStore) -> (IdempotencyScope, Fingerprint, ActionKey) {
    let scope = IdempotencyScope::new(OrgId::from("acme"), IdempotencyKey::new("assign-1"));
    let fingerprint = Fingerprint::new("roster_assign_shift", Digest([1; 32]));
    assert!(matches!(
        keys.claim(&scope, &fingerprint, Timestamp::now()),
        Claim::Run
    ));
    let action = ActionKey {
        org_id: scope.org_id.clone(),
        key: scope.key.clone(),
        action_id: ActionId::new("act-assign-1"),
    };
    (scope, fingerprint, action)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_leaves_its_key_done_even_if_the_registry_never_completes_it() {
    let test = fresh_database().await;
    let node_a = keys(test.url());
    let node_b = keys(test.url());
    let roster = seeded_roster(test.url(), Arc::clone(&node_a)).await;
    let (scope, fingerprint, action) = claimed(&node_a);
    let changed = roster
        .change(OrgId::from("acme"), Some(action), assign_to_alice())
        .await
        .expect("alice takes the shift");
    // The registry of node A would complete the key now; it never does (the node died).
    match node_b.claim(&scope, &fingerprint, Timestamp::now()) {
        Claim::Done(stored) => {
            assert_eq!(stored.action_id, ActionId::new("act-assign-1"));
            assert_eq!(stored.result, Ok(changed.output.clone()));
        }
        other => panic!("the key must be done with the change's output, got {other:?}"),
    }
    assert_eq!(changed.output["assignee"], json!("alice"));
    assert_eq!(assignee(&roster).await.as_deref(), Some("alice"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_key_this_node_does_not_hold_is_not_made() {
    let test = fresh_database().await;
    let holder = keys(test.url());
    let other = keys(test.url());
    // This roster completes keys through `other`, which never claimed the call's key.
    let roster = seeded_roster(test.url(), other).await;
    let before = assignee(&roster).await;
    let (_, _, action) = claimed(&holder);
    let error = roster
        .change(OrgId::from("acme"), Some(action), assign_to_alice())
        .await
        .expect_err("the key is not this node's");
    assert!(
        matches!(&error, RosterError::Unavailable { reason } if reason.contains("no longer held")),
        "{error}"
    );
    assert_eq!(assignee(&roster).await, before, "the change was kept");
}

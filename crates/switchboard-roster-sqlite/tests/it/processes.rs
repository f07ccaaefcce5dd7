//! Two store values on one file, as two processes see it (`serve`, and `switchboard approve`
//! in another process): a change made through one is what the other loads, changes made at
//! once through both are all kept, and a change waits for the other's write lock up to the busy
//! timeout, then fails without keeping anything.

use std::time::Duration;

use rusqlite::Connection;
use switchboard_domain_roster::{RosterBook, RosterError, RosterStore, conformance};
use switchboard_roster_sqlite::{SqliteOptions, SqliteRosterStore};

use crate::common::{TempStore, acme, notice_texts, post};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_through_one_store_is_what_the_other_loads() {
    let first = TempStore::new();
    first.seed(RosterBook::seeded()).await.expect("seeded");
    let second = SqliteRosterStore::open(first.path()).expect("a second store on the file");
    second
        .seed(RosterBook::seeded())
        .await
        .expect("seeding on the second is harmless");

    first
        .change(acme(), None, post("through the first".to_owned()))
        .await
        .expect("posted through the first");
    assert_eq!(notice_texts(&second).await, ["through the first"]);

    second
        .change(acme(), None, post("through the second".to_owned()))
        .await
        .expect("posted through the second");
    assert_eq!(
        notice_texts(&*first).await,
        ["through the first", "through the second"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_made_at_once_through_two_stores_are_all_kept() {
    let first = TempStore::new();
    let second = SqliteRosterStore::open(first.path()).expect("a second store on the file");
    conformance::concurrent_changes_of_one_organisation_are_serialized(&[&*first, &second]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_waits_for_another_writer_up_to_the_busy_timeout() {
    let waiting = TempStore::new();
    // Both stores open before the lock is taken: opening takes the write lock too, to migrate.
    let impatient = SqliteRosterStore::open_with(
        waiting.path(),
        SqliteOptions::default().busy_timeout(Duration::from_millis(100)),
    )
    .expect("opens");
    let patient = SqliteRosterStore::open(waiting.path()).expect("opens");
    // Another process holds the write lock.
    let other = Connection::open(waiting.path()).expect("another connection");
    other
        .execute_batch("BEGIN IMMEDIATE")
        .expect("the other takes the lock");

    let error = impatient
        .change(acme(), None, post("too late".to_owned()))
        .await
        .expect_err("the lock is held past the busy timeout");
    match &error {
        RosterError::Unavailable { reason } => assert!(
            reason.contains("locked") && reason.contains(&waiting.path().display().to_string()),
            "{reason}"
        ),
        other => panic!("expected Unavailable, got {other:?}"),
    }

    // The patient store (5 s) gets the lock once the other commits.
    let posting = tokio::spawn(async move {
        patient
            .change(acme(), None, post("after the wait".to_owned()))
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !posting.is_finished(),
        "the change did not wait for the lock"
    );
    other.execute_batch("COMMIT").expect("the other commits");
    posting
        .await
        .expect("the task ends")
        .expect("posted once the lock is free");

    assert_eq!(
        notice_texts(&*waiting).await,
        ["after the wait"],
        "the failed change left something"
    );
}

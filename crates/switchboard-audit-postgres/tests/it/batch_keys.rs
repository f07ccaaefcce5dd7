//! A batch is stored once per key: the audit writer's retry of a batch whose attempt timed out
//! on this side but committed on the server (a server that froze, then resumed) reads the ids
//! back instead of inserting the records again.
//!
//! The late commit is made on cue: a plain client holds `audit_batches` locked, so an attempt
//! waits on the server past the store's call timeout and fails on this side, then commits on
//! the server once the lock is released, as it would when a frozen server resumes.

use std::{
    thread,
    time::{Duration, Instant},
};

use switchboard_audit::{AuditQuery, AuditStore, BatchKey};
use switchboard_audit_postgres::{PostgresAuditStore, PostgresOptions};

use crate::common::{fresh_database, record};

const CALL_TIMEOUT: Duration = Duration::from_secs(1);

/// How many records of `correlation` the store holds.
/// How many records of `correlation` the store holds, asked again while the database is
/// marked unresponsive after a timeout (calls then fail at once until a probe has an answer).
fn count(store: &PostgresAuditStore, correlation: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match store.query(&AuditQuery::correlation(correlation)) {
            Ok(records) => return records.len(),
            Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(50)),
            Err(error) => panic!("the store answers: {error}"),
        }
    }
}

#[test]
fn the_same_key_twice_stores_the_batch_once_and_gives_the_same_ids() {
    let database = fresh_database();
    let store = PostgresAuditStore::open(database.url()).expect("opens");
    let key = BatchKey::new();
    let mut first = vec![record("twice"); 3];
    store.append_keyed_batch(key, &mut first).expect("appends");
    let mut again = vec![record("twice"); 3];
    store
        .append_keyed_batch(key, &mut again)
        .expect("a known key is an answer, not an error");
    let ids = |records: &[switchboard_audit::AuditRecord]| -> Vec<u64> {
        records.iter().map(|record| record.id).collect()
    };
    assert_eq!(ids(&again), ids(&first));
    assert_eq!(count(&store, "twice"), 3);
    assert_eq!(
        store.stats().appended,
        3,
        "the second call appended nothing"
    );
    // Another key is another batch, even with the same records.
    let mut other = vec![record("twice"); 3];
    store
        .append_keyed_batch(BatchKey::new(), &mut other)
        .expect("appends");
    assert!(other[0].id > first[2].id);
    assert_eq!(count(&store, "twice"), 6);
}

#[test]
fn an_attempt_that_timed_out_and_committed_late_is_not_stored_again_by_its_retry() {
    let database = fresh_database();
    let store = PostgresAuditStore::open_with(
        &PostgresOptions::new(database.url()).with_call_timeout(CALL_TIMEOUT),
    )
    .expect("opens");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let locker = runtime
        .block_on(database.connect())
        .expect("a plain client connects");
    runtime
        .block_on(locker.batch_execute("BEGIN; LOCK TABLE audit_batches IN ACCESS EXCLUSIVE MODE"))
        .expect("the lock is taken");

    // Another store value (another node's) with a longer timeout, for the retry.
    let second = PostgresAuditStore::open_with(
        &PostgresOptions::new(database.url()).with_call_timeout(CALL_TIMEOUT * 5),
    )
    .expect("a second store opens");
    let key = BatchKey::new();
    let mut records = vec![record("late"); 4];
    let began = Instant::now();
    let error = store
        .append_keyed_batch(key, &mut records)
        .expect_err("the attempt waits on the lock past the call timeout");
    assert!(
        began.elapsed() < CALL_TIMEOUT + Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
    assert!(records.iter().all(|record| record.id == 0), "{error}");
    // A retry while the first attempt still waits on the server: it waits too.
    let retrying = thread::spawn({
        let mut records = vec![record("late"); 4];
        let store = second;
        // Refused at once until a probe has had an answer (the earlier call timed out), then
        // tried again, as the audit writer does.
        move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                match store.append_keyed_batch(key, &mut records) {
                    Err(error)
                        if error.to_string().contains("fail at once")
                            && Instant::now() < deadline =>
                    {
                        thread::sleep(Duration::from_millis(20));
                    }
                    answer => return answer.map(|()| records),
                }
            }
        }
    });
    thread::sleep(Duration::from_millis(300));
    // The server resumes: the first attempt's statement commits, unseen by its caller.
    runtime
        .block_on(locker.batch_execute("COMMIT"))
        .expect("the lock is released");
    let overlapping = retrying.join().expect("the retry's thread");
    // Whichever of the two got there second stored nothing: it read the ids back, or failed
    // on the key and left nothing behind.
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(&store, "late") == 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(count(&store, "late"), 4, "stored once: {overlapping:?}");
    let mut last = vec![record("late"); 4];
    store
        .append_keyed_batch(key, &mut last)
        .expect("the last retry gets the stored batch's ids (the database answers again)");
    let stored: Vec<u64> = store
        .query(&AuditQuery::correlation("late"))
        .expect("queries")
        .iter()
        .rev()
        .map(|record| record.id)
        .collect();
    assert_eq!(
        last.iter().map(|record| record.id).collect::<Vec<_>>(),
        stored
    );
    if let Ok(overlapping) = overlapping {
        assert_eq!(
            overlapping
                .iter()
                .map(|record| record.id)
                .collect::<Vec<_>>(),
            stored
        );
    }
    assert_eq!(count(&store, "late"), 4);
}

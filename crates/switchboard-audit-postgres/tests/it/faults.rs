//! The server going away under the store, on a private cluster stopped as a crash would stop it
//! (`pg_ctl stop -m immediate`): every batch whose `append_batch` returned `Ok` is there after
//! the restart, exactly once; a batch that failed is there whole or not at all; a call while the
//! server is down fails with a clear error within the call timeout, and the store recovers by
//! itself once the server is back.

use std::{
    collections::BTreeMap,
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use jiff::Timestamp;
use switchboard_audit::{AuditQuery, AuditRecord, AuditStore};
use switchboard_audit_postgres::{PostgresAuditStore, PostgresOptions};
use switchboard_test_postgres::TestCluster;

use crate::common::{correlation_digest, record};

const CALL_TIMEOUT: Duration = Duration::from_secs(2);

fn cluster() -> TestCluster {
    TestCluster::start().expect("a private PostgreSQL cluster starts")
}

fn open(cluster: &TestCluster) -> PostgresAuditStore {
    PostgresAuditStore::open_with(
        &PostgresOptions::new(cluster.url()).with_call_timeout(CALL_TIMEOUT),
    )
    .expect("the audit store opens")
}

/// The batch of one append attempt: `size` records, all with the attempt's correlation id.
fn batch(attempt: usize, size: usize) -> Vec<AuditRecord> {
    (0..size)
        .map(|_| record(&format!("attempt-{attempt}")))
        .collect()
}

/// Waits until `condition` holds, at most `timeout`; says whether it held.
fn wait_for(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    condition()
}

#[test]
fn acknowledged_batches_survive_an_immediate_stop_mid_stream_exactly_once() {
    const BATCH: usize = 64;
    const OK_BEFORE_THE_STOP: usize = 30;
    const OK_AFTER_THE_RESTART: usize = 30;
    let mut cluster = cluster();
    let store = open(&cluster);
    // Attempt number → whether its `append_batch` returned Ok.
    let outcomes = Mutex::new(BTreeMap::<usize, bool>::new());
    let done = AtomicBool::new(false);
    let ok_count = || {
        outcomes
            .lock()
            .expect("outcomes")
            .values()
            .filter(|ok| **ok)
            .count()
    };
    let failed_count = || {
        outcomes
            .lock()
            .expect("outcomes")
            .values()
            .filter(|ok| !**ok)
            .count()
    };
    thread::scope(|scope| {
        // The writer: a new batch per attempt, as fast as the store takes them; after a failure
        // it waits a little, as the audit writer backs off.
        scope.spawn(|| {
            let mut attempt = 0;
            while !done.load(Ordering::Acquire) {
                let mut records = batch(attempt, BATCH);
                let ok = store.append_batch(&mut records).is_ok();
                outcomes.lock().expect("outcomes").insert(attempt, ok);
                if !ok {
                    thread::sleep(Duration::from_millis(50));
                }
                attempt += 1;
            }
        });
        // The load and the faults; the writer stops whatever happens, so that a failed step
        // fails the test instead of leaving the writer running.
        let mut steps = || -> Result<(), String> {
            if !wait_for(Duration::from_secs(60), || ok_count() >= OK_BEFORE_THE_STOP) {
                return Err("the writer never got going".to_owned());
            }
            cluster
                .stop_immediate()
                .map_err(|error| format!("the server does not stop: {error}"))?;
            let acknowledged_before_the_restart = ok_count();
            if !wait_for(Duration::from_secs(30), || failed_count() >= 3) {
                return Err("appends do not fail while the server is down".to_owned());
            }
            cluster
                .start_again()
                .map_err(|error| format!("the server does not start again: {error}"))?;
            if !wait_for(Duration::from_secs(60), || {
                ok_count() >= acknowledged_before_the_restart + OK_AFTER_THE_RESTART
            }) {
                return Err("appends do not succeed again after the restart".to_owned());
            }
            Ok(())
        };
        let outcome = steps();
        done.store(true, Ordering::Release);
        if let Err(failure) = outcome {
            panic!("{failure}");
        }
    });
    let outcomes = outcomes.into_inner().expect("outcomes");
    // A new store, as after a restart of the node too.
    drop(store);
    let reopened = open(&cluster);
    let mut expected_total = 0;
    for (attempt, ok) in &outcomes {
        let correlation_id = format!("attempt-{attempt}");
        let found = reopened
            .query(&AuditQuery::correlation(correlation_id.as_str()))
            .expect("the store answers after the restart");
        if *ok {
            assert_eq!(
                found.len(),
                BATCH,
                "acknowledged batch {attempt} must be there exactly once"
            );
        } else {
            assert!(
                found.is_empty() || found.len() == BATCH,
                "failed batch {attempt} must be there whole or not at all, found {} records",
                found.len()
            );
        }
        assert!(
            found
                .iter()
                .all(|found| found.input_hash == correlation_digest(&correlation_id))
        );
        expected_total += found.len();
    }
    let all = reopened
        .query(&AuditQuery::all())
        .expect("every row decodes");
    assert_eq!(all.len(), expected_total, "no record of an unknown attempt");
    assert!(outcomes.values().filter(|ok| !**ok).count() >= 3);
}

#[test]
fn a_stopped_server_is_a_clear_error_within_the_call_timeout_and_the_store_recovers() {
    let mut cluster = cluster();
    let store = open(&cluster);
    let mut before = vec![record("before")];
    store.append_batch(&mut before).expect("appends");
    cluster.stop_immediate().expect("the server stops at once");

    let started = Instant::now();
    let mut lost = vec![record("while-down")];
    let error = store
        .append_batch(&mut lost)
        .expect_err("no server, no append");
    assert!(
        started.elapsed() < CALL_TIMEOUT + Duration::from_secs(2),
        "the append gave up after {:?}",
        started.elapsed()
    );
    assert_eq!(lost[0].id, 0, "a failed append assigns no id");
    let message = error.to_string();
    assert!(message.contains("audit database"), "{message}");
    assert!(message.contains("appending a batch"), "{message}");
    assert!(
        message.contains(&cluster.port().to_string()),
        "names the database: {message}"
    );
    assert!(!message.contains(cluster.password()), "{message}");

    let started = Instant::now();
    let error = store
        .query(&AuditQuery::all())
        .expect_err("no server, no query");
    assert!(started.elapsed() < CALL_TIMEOUT + Duration::from_secs(2));
    assert!(error.to_string().contains("querying"), "{error}");
    store
        .delete_before(Timestamp::now(), 10)
        .expect_err("no server, no retention");
    assert_eq!(store.stats().appended, 1, "failures count nothing");

    cluster.start_again().expect("the server starts again");
    let mut after = vec![record("after")];
    let recovered = wait_for(Duration::from_secs(30), || {
        let mut attempt = after.clone();
        let ok = store.append_batch(&mut attempt).is_ok();
        if ok {
            after = attempt;
        }
        ok
    });
    assert!(recovered, "the store appends again once the server is back");
    let all = store
        .query(&AuditQuery::all())
        .expect("the store answers again");
    let ids: Vec<u64> = all.iter().map(|found| found.id).collect();
    assert_eq!(ids, [after[0].id, before[0].id]);
}

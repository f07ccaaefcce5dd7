//! A server that stops mid-use (`pg_ctl stop -m immediate`, on a private cluster): every
//! operation fails closed with a `Backend` error naming the database, within the call timeout
//! and without the password; what was acknowledged before is all there after the restart, and
//! the same store value works again by itself.

use std::time::{Duration, Instant};

use switchboard_test_postgres::{TestCluster, TestDatabase};
use switchboard_workflows::{RunStore, RunStoreError};
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore};

use crate::common::{resumed, run};

#[test]
fn a_stopped_server_fails_calls_quickly_and_the_store_recovers_when_it_is_back() {
    let mut cluster = TestCluster::start().expect("a private cluster (PostgreSQL installed?)");
    let database = tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(TestDatabase::create(&cluster.url()))
        .expect("a database on the private cluster");
    let options = PostgresOptions::new(database.url())
        .with_call_timeout(Duration::from_secs(2))
        .with_connect_timeout(Duration::from_secs(1));
    let store = PostgresRunStore::open(&options).expect("opens");
    let kept = run("acme");
    store.create_run(&kept).expect("created");
    assert_eq!(store.checkpoint(&resumed(kept.id, 1)).expect("written"), 1);

    cluster.stop_immediate().expect("the server stops");
    let started = Instant::now();
    let refused = store.checkpoint(&resumed(kept.id, 2));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "no hang past the call timeout: {:?}",
        started.elapsed()
    );
    match &refused {
        Err(RunStoreError::Backend { action, reason }) => {
            assert!(action.contains(&kept.id.to_string()), "{action}");
            assert!(reason.contains("workflows database"), "{reason}");
            assert!(!reason.contains(cluster.password()), "{reason}");
        }
        other => panic!("expected a Backend error, got {other:?}"),
    }
    assert!(matches!(
        store.run(kept.id),
        Err(RunStoreError::Backend { .. })
    ));

    cluster.start_again().expect("the server starts again");
    let mut recovered = None;
    for _ in 0..50 {
        if let Ok(found) = store.run(kept.id) {
            recovered = Some(found);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut acknowledged = kept.clone();
    acknowledged.updated_at = resumed(kept.id, 1).at;
    assert_eq!(
        recovered,
        Some(Some(acknowledged)),
        "the run was kept as last written"
    );
    assert_eq!(
        store.events(kept.id, 0, 10).expect("readable").len(),
        1,
        "the acknowledged checkpoint survived; the refused one was not written"
    );
    assert_eq!(store.checkpoint(&resumed(kept.id, 3)).expect("written"), 2);
}

//! The audit log's policies: what a caller meets when the queue is full, when a call counts
//! as acknowledged, what shutdown and retention do, and that concurrent callers lose nothing.
//!
//! The stores here are built to misbehave on cue: one holds every batch until the test opens a
//! gate (a stuck disk), one refuses every batch (a full disk).

use std::{
    sync::{
        Arc, Condvar, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use jiff::Timestamp;
use switchboard_audit::{
    AuditConfig, AuditError, AuditLog, AuditQuery, AuditRecord, AuditStats, AuditStore, Durability,
    MemoryAuditStore, Outcome, WhenFull, digest_json,
};
use switchboard_core::{CorrelationId, Initiator};

/// Generous bound for things that must happen; a hang fails instead of stalling CI.
const PATIENCE: Duration = Duration::from_secs(20);

fn pending(correlation: &str) -> AuditRecord {
    pending_at(correlation, Timestamp::now())
}

fn pending_at(correlation: &str, timestamp: Timestamp) -> AuditRecord {
    AuditRecord {
        asks: Vec::new(),
        switch: None,
        node: None,
        id: 0,
        timestamp,
        tool: "core_get_current_user".into(),
        domain: Some("core".into()),
        category: None,
        org_id: Some("acme".into()),
        user_id: Some("alice".into()),
        session_id: Some("s".into()),
        correlation_id: Some(CorrelationId::from(correlation)),
        initiator: Initiator::Agent,
        input_hash: Some(digest_json(&serde_json::json!({"n": 1})).expect("JSON has a digest")),
        output_hash: Some(digest_json(&serde_json::json!(["alice"])).expect("JSON has a digest")),
        digest_error: None,
        duration_us: 1,
        outcome: Outcome::Ok,
        action: None,
    }
}

async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {PATIENCE:?}"))
}

/// A memory store whose appends wait until the gate is open.
#[derive(Default)]
struct GatedStore {
    inner: MemoryAuditStore,
    open: Mutex<bool>,
    opened: Condvar,
}

impl GatedStore {
    fn open_gate(&self) {
        *self.open.lock().expect("gate lock") = true;
        self.opened.notify_all();
    }
}

impl switchboard_audit::conformance::WrappedStore for GatedStore {
    fn inner(&self) -> &dyn AuditStore {
        &self.inner
    }

    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        let open = self.open.lock().expect("gate lock");
        drop(
            self.opened
                .wait_while(open, |open| !*open)
                .expect("gate lock"),
        );
        self.inner.append_batch(records)
    }
}

/// A store that refuses every batch.
#[derive(Default)]
struct FullDisk {
    attempts: AtomicU64,
}

impl AuditStore for FullDisk {
    fn append_batch(&self, _: &mut [AuditRecord]) -> Result<(), AuditError> {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        Err(AuditError::Unavailable("disk full".to_owned()))
    }

    fn query(&self, _: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        Ok(Vec::new())
    }

    fn delete_before(&self, _: Timestamp, _: usize) -> Result<u64, AuditError> {
        Ok(0)
    }

    fn stats(&self) -> AuditStats {
        AuditStats::default()
    }
}

fn start(store: Arc<dyn AuditStore>, config: AuditConfig) -> AuditLog {
    AuditLog::start(store, config).expect("the writer thread starts")
}

#[tokio::test]
async fn a_relaxed_record_is_acknowledged_when_queued_and_seen_by_the_next_query() {
    let store = Arc::new(GatedStore::default());
    let log = start(store.clone(), AuditConfig::default());

    let reservation = log.reserve().await.expect("room");
    reservation
        .submit(pending("c1"))
        .acknowledged()
        .await
        .expect("queued is acknowledged under relaxed durability");
    assert_eq!(
        store.inner.stats().appended,
        0,
        "the store has not been reached yet"
    );

    let query = tokio::spawn({
        let log = log.clone();
        async move { log.query(&AuditQuery::correlation("c1")).await }
    });
    store.open_gate();
    let records = bounded("the query", query)
        .await
        .expect("query task")
        .expect("query");
    assert_eq!(
        records,
        [AuditRecord {
            node: None,
            id: records[0].id,
            ..pending_at("c1", records[0].timestamp)
        }]
    );
}

#[tokio::test]
async fn a_strict_record_is_acknowledged_only_once_stored() {
    let store = Arc::new(GatedStore::default());
    let log = start(
        store.clone(),
        AuditConfig::default().durability(Durability::Strict),
    );
    let submitted = log.reserve().await.expect("room").submit(pending("c1"));
    let mut acknowledged = tokio::spawn(submitted.acknowledged());

    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        futures::poll!(&mut acknowledged).is_pending(),
        "not acknowledged while the store holds the batch"
    );
    store.open_gate();
    bounded("the acknowledgement", acknowledged)
        .await
        .expect("task")
        .expect("stored");
    assert_eq!(store.inner.stats().appended, 1);
}

#[tokio::test]
async fn a_strict_record_the_store_refuses_is_answered_kept_retried_and_counted_lost_at_stop() {
    let store = Arc::new(FullDisk::default());
    let log = start(
        store.clone(),
        AuditConfig::default().durability(Durability::Strict),
    );
    let error = bounded(
        "the refusal",
        log.reserve()
            .await
            .expect("room")
            .submit(pending("c1"))
            .acknowledged(),
    )
    .await
    .expect_err("a record the store refused is not acknowledged");
    assert!(matches!(error, AuditError::NotWrittenYet(_)), "{error:?}");
    assert!(error.to_string().contains("disk full"), "{error}");
    assert!(log.is_failing());
    // Kept and retried while the writer runs; refused calls take no room.
    let attempts = store.attempts.load(Ordering::Relaxed);
    let refused = log
        .reserve()
        .await
        .expect_err("a strict log refuses while failing");
    assert!(
        matches!(refused, AuditError::StoreFailing(_)),
        "{refused:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(store.attempts.load(Ordering::Relaxed) > attempts);
    assert_eq!((log.stats().lost, log.stats().rejected), (0, 1));
    bounded("the shutdown", log.shutdown()).await;
    assert_eq!(log.stats().lost, 1, "the loss is counted, not silent");
}

#[tokio::test]
async fn a_full_queue_refuses_new_calls_under_the_fail_policy_and_counts_them() {
    let store = Arc::new(GatedStore::default());
    let log = start(
        store.clone(),
        AuditConfig::default()
            .queue_capacity(2)
            .when_full(WhenFull::Fail),
    );
    let first = log.reserve().await.expect("room for one");
    let second = log.reserve().await.expect("room for two");

    let error = log.reserve().await.expect_err("no room for three");
    assert!(error.to_string().contains("queue is full"), "{error}");
    assert_eq!(log.stats().rejected, 1);
    assert_eq!(log.stats().queued, 2);

    // A reservation given back frees its room.
    drop(first);
    let third = log.reserve().await.expect("room again");
    drop((second, third));
    store.open_gate();
}

#[tokio::test]
async fn a_full_queue_makes_callers_wait_under_the_block_policy_and_loses_nothing() {
    let store = Arc::new(GatedStore::default());
    let log = start(store.clone(), AuditConfig::default().queue_capacity(2));
    let submit = |n: u32| {
        let log = log.clone();
        async move {
            log.reserve()
                .await
                .expect("room")
                .submit(pending(&format!("c{n}")));
        }
    };
    // A record the writer takes off the queue and holds in the stuck store...
    submit(0).await;
    bounded("the writer taking the first batch", async {
        while log.stats().queued > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    // ...two that fill the queue behind it, and a fourth that must wait.
    submit(1).await;
    submit(2).await;
    let mut waiting = tokio::spawn(submit(3));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        futures::poll!(&mut waiting).is_pending(),
        "the fourth caller waits"
    );
    assert_eq!(log.stats().blocked, 1);

    store.open_gate();
    bounded("the blocked caller", waiting).await.expect("task");
    let stats = log.settled_stats().await;
    assert_eq!(stats.written, 4);
    assert_eq!(stats.store.appended, 4);
}

#[tokio::test]
async fn shutdown_writes_everything_queued_then_refuses() {
    let store = Arc::new(MemoryAuditStore::new());
    let log = start(store.clone(), AuditConfig::default());
    for n in 0..100 {
        log.reserve()
            .await
            .expect("room")
            .submit(pending(&format!("c{n}")));
    }
    bounded("shutdown", log.shutdown()).await;
    assert_eq!(store.stats().appended, 100);
    let error = log
        .reserve()
        .await
        .expect_err("a stopped log takes nothing");
    assert!(error.to_string().contains("shut down"), "{error}");
}

#[tokio::test]
async fn retention_deletes_only_records_older_than_the_age() {
    let store = Arc::new(MemoryAuditStore::new());
    let log = start(
        store.clone(),
        AuditConfig::default().retention(Duration::from_secs(3600), Duration::from_millis(20)),
    );
    let two_hours_ago = Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_hours(2))
        .expect("in range");
    for n in 0..5 {
        log.reserve()
            .await
            .expect("room")
            .submit(pending_at(&format!("old{n}"), two_hours_ago));
    }
    log.reserve().await.expect("room").submit(pending("new"));

    bounded("the sweep", async {
        while store.stats().expired < 5 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let left = log.query(&AuditQuery::all()).await.expect("query");
    assert_eq!(left.len(), 1);
    assert_eq!(
        left[0].correlation_id,
        Some(CorrelationId::from("new")),
        "the recent record stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_callers_lose_nothing_and_each_record_lands_once() {
    let store = Arc::new(MemoryAuditStore::new());
    let log = start(store.clone(), AuditConfig::default().queue_capacity(64));
    let callers: Vec<_> = (0..16)
        .map(|caller| {
            let log = log.clone();
            tokio::spawn(async move {
                for n in 0..500 {
                    log.reserve()
                        .await
                        .expect("room")
                        .submit(pending(&format!("{caller}-{n}")));
                }
            })
        })
        .collect();
    for caller in callers {
        bounded("a caller", caller).await.expect("caller task");
    }
    let records = log.query(&AuditQuery::all()).await.expect("query");
    assert_eq!(records.len(), 16 * 500);
    let mut correlations: Vec<_> = records
        .iter()
        .filter_map(|record| record.correlation_id.clone())
        .collect();
    correlations.sort();
    correlations.dedup();
    assert_eq!(correlations.len(), 16 * 500, "no record twice");
    assert_eq!(log.stats().written, 16 * 500);
}

#[tokio::test]
async fn the_log_stamps_its_node_on_every_record_it_writes() {
    let store = Arc::new(MemoryAuditStore::new());
    let log = AuditLog::start(
        store.clone(),
        AuditConfig::default()
            .durability(Durability::Strict)
            .node("node-a"),
    )
    .expect("the log starts");
    let mut from_elsewhere = pending("c2");
    from_elsewhere.node = Some("node-b".into());
    for record in [pending("c1"), from_elsewhere] {
        let reservation = bounded("room", log.reserve()).await.expect("room");
        bounded(
            "the record stored",
            reservation.submit(record).acknowledged(),
        )
        .await
        .expect("stored");
    }
    let mut nodes: Vec<_> = store
        .query(&AuditQuery::default())
        .expect("query")
        .into_iter()
        .map(|record| record.node.as_deref().map(str::to_owned))
        .collect();
    nodes.sort();
    assert_eq!(
        nodes,
        [Some("node-a".to_owned()), Some("node-b".to_owned())],
        "a record without a node gets the log's; one that names its node keeps it"
    );
    log.shutdown().await;
}

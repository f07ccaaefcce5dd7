//! The audit writer survives what it does not control: a store that fails or panics. Nothing
//! hangs, every lost record is counted, and the log keeps serving the calls that follow.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use jiff::Timestamp;
use switchboard_audit::{
    AuditConfig, AuditError, AuditLog, AuditRecord, AuditStore, Durability, MemoryAuditStore,
    Outcome, digest_json,
};
use switchboard_core::Initiator;

/// A memory table whose `append_batch` panics on its first `panics` calls.
struct PanicsAtFirst {
    inner: MemoryAuditStore,
    panics: AtomicU64,
}

impl switchboard_audit::conformance::WrappedStore for PanicsAtFirst {
    fn inner(&self) -> &dyn AuditStore {
        &self.inner
    }

    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        let left = self.panics.load(Ordering::SeqCst);
        if left > 0 {
            self.panics.store(left - 1, Ordering::SeqCst);
            panic!("the store panicked");
        }
        self.inner.append_batch(records)
    }
}

fn pending(correlation_id: &str) -> AuditRecord {
    AuditRecord {
        asks: Vec::new(),
        switch: None,
        node: None,
        id: 0,
        timestamp: Timestamp::now(),
        tool: "t".into(),
        domain: None,
        category: None,
        org_id: Some("acme".into()),
        user_id: None,
        session_id: None,
        correlation_id: Some(correlation_id.into()),
        initiator: Initiator::Agent,
        input_hash: Some(digest_json(&serde_json::json!({})).expect("JSON has a digest")),
        output_hash: None,
        digest_error: None,
        duration_us: 1,
        outcome: Outcome::Ok,
        action: None,
    }
}

async fn write(log: &AuditLog, record: AuditRecord) -> Result<(), AuditError> {
    log.reserve().await?.submit(record).acknowledged().await
}

fn log_over(panics: u64, durability: Durability) -> AuditLog {
    let store = PanicsAtFirst {
        inner: MemoryAuditStore::new(),
        panics: AtomicU64::new(panics),
    };
    let config = AuditConfig::default()
        .durability(durability)
        .queue_capacity(4);
    AuditLog::start(Arc::new(store), config).expect("the log starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_panics_once_is_retried_and_nothing_is_lost() {
    let log = log_over(1, Durability::Strict);
    write(&log, pending("first"))
        .await
        .expect("acknowledged once the retry succeeds");
    write(&log, pending("second")).await.expect("acknowledged");
    let stats = log.settled_stats().await;
    assert_eq!((stats.written, stats.lost), (2, 0), "{stats:?}");
    log.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_always_panics_fails_calls_instead_of_hanging_them() {
    let log = log_over(u64::MAX, Durability::Strict);
    let attempt = tokio::time::timeout(Duration::from_secs(10), write(&log, pending("doomed")))
        .await
        .expect("the call gets an answer instead of hanging");
    assert!(
        attempt.is_err(),
        "the record could not be stored: {attempt:?}"
    );
    // More calls than the queue holds: each is refused before it takes room, none waits.
    for n in 0..8 {
        let attempt = tokio::time::timeout(
            Duration::from_secs(10),
            write(&log, pending(&format!("doomed-{n}"))),
        )
        .await
        .expect("no call hangs");
        assert!(attempt.is_err());
    }
    tokio::time::timeout(Duration::from_secs(10), log.shutdown())
        .await
        .expect("shutdown returns");
    // Only the record kept for retries is lost, when the writer stops.
    assert_eq!((log.stats().lost, log.stats().rejected), (1, 8));
}

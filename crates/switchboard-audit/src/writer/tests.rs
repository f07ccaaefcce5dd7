//! Tests of the writer under a store that fails: a retried batch keeps its key, a strict
//! caller's wait is bounded, and records the store did not take are kept and written once it
//! takes them again.

use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use crate::{
    AuditConfig, AuditError, AuditLog, AuditQuery, AuditRecord, AuditStore, BatchKey, Durability,
    MemoryAuditStore,
};

/// Generous bound for what must happen; a hang fails instead of stalling the run.
const PATIENCE: Duration = Duration::from_secs(20);

async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {PATIENCE:?}"))
}

/// A memory table behind a network that may fail in both ways a database's does: refusing an
/// attempt (`down`), or losing the answer of an attempt that committed (`lose_answers`). It
/// stores each key's batch once, as a store with batch keys must, and can hold every append
/// until `held` is cleared (a frozen server).
#[derive(Default)]
struct Flaky {
    inner: MemoryAuditStore,
    down: AtomicBool,
    lose_answers: AtomicU64,
    held: AtomicBool,
    /// Every attempt's key, in order.
    keys: Mutex<Vec<BatchKey>>,
    /// The keys committed, with the ids their records got.
    committed: Mutex<Vec<(BatchKey, Vec<u64>)>>,
}

impl crate::conformance::WrappedStore for Flaky {
    fn inner(&self) -> &dyn AuditStore {
        &self.inner
    }

    fn append_batch(&self, _: &mut [AuditRecord]) -> Result<(), AuditError> {
        Err(AuditError::Unavailable(
            "the writer appends with a key".to_owned(),
        ))
    }

    fn append_keyed_batch(
        &self,
        key: BatchKey,
        records: &mut [AuditRecord],
    ) -> Result<(), AuditError> {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(key);
        while self.held.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.down.load(Ordering::SeqCst) {
            return Err(AuditError::Unavailable("connection refused".to_owned()));
        }
        let mut committed = self
            .committed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((_, ids)) = committed.iter().find(|(known, _)| *known == key) {
            for (record, id) in records.iter_mut().zip(ids) {
                record.id = *id;
            }
        } else {
            self.inner.append_batch(records)?;
            committed.push((key, records.iter().map(|record| record.id).collect()));
        }
        if self.lose_answers.load(Ordering::SeqCst) > 0 {
            self.lose_answers.fetch_sub(1, Ordering::SeqCst);
            return Err(AuditError::Unavailable(
                "timed out (the server committed anyway)".to_owned(),
            ));
        }
        Ok(())
    }
}

fn strict_log(store: &Arc<Flaky>, strict_timeout: Duration) -> AuditLog {
    let config = AuditConfig::default()
        .durability(Durability::Strict)
        .strict_timeout(strict_timeout);
    AuditLog::start(Arc::clone(store) as Arc<dyn AuditStore>, config).expect("the log starts")
}

async fn write(log: &AuditLog, correlation: &str) -> Result<(), AuditError> {
    log.reserve()
        .await?
        .submit(crate::conformance::call_record(correlation))
        .acknowledged()
        .await
}

/// Writes a record for `correlation` through the strict `log`, which must answer
/// [`AuditError::NotWrittenYet`] (`why` the record is not stored yet): the error, and how long
/// the caller waited for it.
async fn not_written_yet(log: &AuditLog, correlation: &str, why: &str) -> (AuditError, Duration) {
    let began = std::time::Instant::now();
    let error = bounded("the answer", write(log, correlation))
        .await
        .expect_err(why);
    let waited = began.elapsed();
    assert!(matches!(error, AuditError::NotWrittenYet(_)), "{error:?}");
    (error, waited)
}

/// The failing `log` refuses a reservation (`when`) with [`AuditError::StoreFailing`], before
/// the call would run.
async fn refused_while_failing(log: &AuditLog, when: &str) {
    let refused = log.reserve().await.expect_err(when);
    assert!(
        matches!(refused, AuditError::StoreFailing(_)),
        "{refused:?}"
    );
}

/// Waits until the `log` no longer counts its store as failing.
async fn recovered(log: &AuditLog) {
    bounded("recovery", async {
        while log.is_failing() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_that_committed_unseen_is_retried_under_its_key_and_stored_once() {
    let store = Arc::new(Flaky::default());
    store.lose_answers.store(2, Ordering::SeqCst);
    let log = strict_log(&store, Duration::from_secs(10));
    bounded("the acknowledgement", write(&log, "c1"))
        .await
        .expect("acknowledged once an attempt's answer arrives");
    let keys = store.keys.lock().expect("keys").clone();
    assert_eq!(keys.len(), 3, "two lost answers, then one that arrived");
    assert!(keys.iter().all(|key| *key == keys[0]), "{keys:?}");
    let stored = log.query(&AuditQuery::all()).await.expect("queries");
    assert_eq!(stored.len(), 1, "stored once: {stored:?}");
    let stats = log.stats();
    assert_eq!((stats.written, stats.lost), (1, 0), "{stats:?}");
    assert!(
        !log.is_failing(),
        "two quick failures are not a failing store"
    );
    // The next batch is another batch: another key.
    bounded("the next", write(&log, "c2"))
        .await
        .expect("stored");
    assert_ne!(store.keys.lock().expect("keys").last(), Some(&keys[0]));
    log.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strict_caller_waits_at_most_the_strict_timeout_and_its_record_is_written_later() {
    let store = Arc::new(Flaky::default());
    store.held.store(true, Ordering::SeqCst);
    let log = strict_log(&store, Duration::from_millis(200));
    let (_, waited) = not_written_yet(&log, "frozen", "not stored while the store holds it").await;
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_secs(2),
        "waited {waited:?}"
    );
    store.held.store(false, Ordering::SeqCst);
    let stored = bounded("the query", log.query(&AuditQuery::all()))
        .await
        .expect("queries");
    assert_eq!(
        stored.len(),
        1,
        "the record was kept and written: {stored:?}"
    );
    assert_eq!(log.stats().lost, 0);
    log.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_store_refuses_calls_at_once_keeps_their_records_and_recovers() {
    let store = Arc::new(Flaky::default());
    store.down.store(true, Ordering::SeqCst);
    let log = strict_log(&store, Duration::from_secs(10));
    let (error, waited) =
        not_written_yet(&log, "during", "not stored while the store is down").await;
    assert!(error.to_string().contains("connection refused"), "{error}");
    assert!(
        waited < Duration::from_secs(2),
        "answered once the writer is failing, not at the strict timeout: {waited:?}"
    );
    assert!(log.is_failing());
    refused_while_failing(&log, "refused before the call runs").await;
    // A flush (and so a query) does not wait for the store to come back.
    bounded("a flush while failing", log.flush()).await;
    store.down.store(false, Ordering::SeqCst);
    recovered(&log).await;
    bounded("a call after recovery", write(&log, "after"))
        .await
        .expect("stored");
    let stored = log.query(&AuditQuery::all()).await.expect("queries");
    let correlations: Vec<&str> = stored
        .iter()
        .filter_map(|record| record.correlation_id.as_ref().map(|id| id.as_str()))
        .collect();
    assert_eq!(correlations, ["after", "during"]);
    let stats = log.stats();
    assert_eq!(
        (stats.written, stats.lost, stats.rejected),
        (2, 0, 1),
        "{stats:?}"
    );
    log.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_does_not_answer_is_failing_before_its_own_timeout() {
    let store = Arc::new(Flaky::default());
    store.held.store(true, Ordering::SeqCst);
    let log = strict_log(&store, Duration::from_secs(30));
    let (_, waited) = not_written_yet(&log, "frozen", "not stored while the store holds it").await;
    assert!(
        waited >= super::FAILING_AFTER && waited < super::FAILING_AFTER * 2,
        "answered once the attempt went unanswered for {:?}, not at the strict timeout: \
         {waited:?}",
        super::FAILING_AFTER
    );
    assert!(log.is_failing());
    refused_while_failing(&log, "refused while the store is stuck").await;
    store.held.store(false, Ordering::SeqCst);
    recovered(&log).await;
    let stored = log.query(&AuditQuery::all()).await.expect("queries");
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(store.keys.lock().expect("keys").len(), 1, "one attempt");
    log.shutdown().await;
}

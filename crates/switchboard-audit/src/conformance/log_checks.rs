//! The checks that drive a store through an [`AuditLog`]: the batching writer thread in front
//! of it, under relaxed and strict durability, through shutdown and the retention sweep.
//!
//! These are the paths the registry uses, so they catch what the trait-level checks cannot: a
//! store that misbehaves when batches arrive from another thread, an acknowledgement given
//! before the store has the record, a query that misses records still queued.

use std::{collections::BTreeMap, future::Future, sync::Arc, time::Duration};

use jiff::{SignedDuration, Timestamp};

use super::{Failure, StoreFactory, ensure_newest_first, input_digest, query, sample};
use crate::{
    log::{AuditConfig, AuditLog, Durability},
    record::AuditRecord,
    store::AuditQuery,
};

/// Runs `check` on a two-worker runtime, so that several producers really run in parallel.
fn on_runtime<F: Future<Output = Result<(), Failure>>>(
    check: impl FnOnce() -> F,
) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| Failure::new(format!("cannot start a tokio runtime: {error}")))?;
    runtime.block_on(check())
}

fn start(make: &StoreFactory, config: AuditConfig) -> Result<AuditLog, Failure> {
    AuditLog::start(make(), config)
        .map_err(|error| Failure::new(format!("AuditLog::start failed: {error}")))
}

/// The `n`th sample as a call hands it over: the correlation id names the producer.
fn pending(producer: usize, n: usize) -> AuditRecord {
    let mut record = sample(n);
    record.correlation_id = Some(format!("producer-{producer}").into());
    record
}

/// Reserves room and hands the record over, waiting for the acknowledgement the log's durability
/// asks for.
async fn submit(log: &AuditLog, record: AuditRecord) -> Result<(), Failure> {
    let reservation = log
        .reserve()
        .await
        .map_err(|error| Failure::new(format!("reserve failed: {error}")))?;
    reservation
        .submit(record)
        .acknowledged()
        .await
        .map_err(|error| Failure::new(format!("the record was not acknowledged: {error}")))
}

/// Runs `producers` tasks, each submitting `per_producer` records one after the other, and
/// calls `after_each(producer, n)` once each is acknowledged.
async fn produce(
    log: &AuditLog,
    producers: usize,
    per_producer: usize,
    after_each: impl Fn(&AuditLog, usize, usize) -> Result<(), Failure> + Send + Sync + 'static,
) -> Result<(), Failure> {
    let after_each = Arc::new(after_each);
    let tasks: Vec<_> = (0..producers)
        .map(|producer| {
            let log = log.clone();
            let after_each = Arc::clone(&after_each);
            tokio::spawn(async move {
                for n in 0..per_producer {
                    submit(&log, pending(producer, n)).await?;
                    after_each(&log, producer, n)?;
                }
                Ok::<(), Failure>(())
            })
        })
        .collect();
    for task in tasks {
        task.await
            .map_err(|error| Failure::new(format!("a producer task failed: {error}")))??;
    }
    Ok(())
}

/// Checks that `records` are exactly `per_producer` records from each of `producers`, with the
/// digests they were sent with.
fn ensure_everything_written(
    records: &[AuditRecord],
    producers: usize,
    per_producer: usize,
) -> Result<(), Failure> {
    ensure_newest_first(records, &AuditQuery::all())?;
    let mut per_correlation: BTreeMap<String, usize> = BTreeMap::new();
    for record in records {
        let correlation = record
            .correlation_id
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        *per_correlation.entry(correlation).or_default() += 1;
    }
    let want: BTreeMap<String, usize> = (0..producers)
        .map(|producer| (format!("producer-{producer}"), per_producer))
        .collect();
    ensure!(
        per_correlation == want,
        "records per producer: {per_correlation:?}, expected {want:?}"
    );
    for record in records {
        let n = record.duration_us as usize / 3;
        ensure!(
            record.input_hash == Some(input_digest(n)),
            "record {} has input digest {:?}, not the digest of its input",
            record.id,
            record.input_hash
        );
        let want_output = record.outcome.is_ok().then(|| {
            crate::digest_json(&serde_json::json!({ "out": n })).expect("JSON has a digest")
        });
        ensure!(
            record.output_hash == want_output,
            "record {} has output digest {:?}, expected {want_output:?}",
            record.id,
            record.output_hash
        );
    }
    Ok(())
}

/// Relaxed durability: calls return once queued; a query through the log flushes first, so it
/// sees every record of every call that returned; nothing is lost.
pub fn log_relaxed_query_after_flush_sees_everything(make: &StoreFactory) -> Result<(), Failure> {
    const PRODUCERS: usize = 8;
    const PER_PRODUCER: usize = 100;
    let config = AuditConfig::default()
        .durability(Durability::Relaxed)
        .max_batch(64);
    let log = start(make, config)?;
    on_runtime(|| async {
        produce(&log, PRODUCERS, PER_PRODUCER, |_, _, _| Ok(())).await?;
        let records = log
            .query(&AuditQuery::all())
            .await
            .map_err(|error| Failure::new(format!("AuditLog::query failed: {error}")))?;
        ensure_everything_written(&records, PRODUCERS, PER_PRODUCER)?;
        let stats = log.settled_stats().await;
        let total = (PRODUCERS * PER_PRODUCER) as u64;
        ensure!(
            stats.written == total && stats.lost == 0 && stats.store.appended == total,
            "after {total} relaxed calls and a flush the stats say {stats:?}"
        );
        log.shutdown().await;
        Ok(())
    })
}

/// Strict durability: once a call is acknowledged its record is in the store, found by a query
/// straight to the store (no flush) the moment the acknowledgement arrives.
pub fn log_strict_acknowledged_records_are_in_the_store(
    make: &StoreFactory,
) -> Result<(), Failure> {
    const PRODUCERS: usize = 4;
    const PER_PRODUCER: usize = 40;
    let config = AuditConfig::default().durability(Durability::Strict);
    let log = start(make, config)?;
    on_runtime(|| async {
        produce(&log, PRODUCERS, PER_PRODUCER, |log, producer, n| {
            let question = AuditQuery::correlation(format!("producer-{producer}")).limit(1);
            let newest = query(&**log.store(), &question)?;
            ensure!(
                newest
                    .first()
                    .is_some_and(|record| record.duration_us as usize == n * 3),
                "producer {producer}'s record {n} was acknowledged, but the store's newest \
                 record of that producer is {newest:?}"
            );
            Ok(())
        })
        .await?;
        let records = query(&**log.store(), &AuditQuery::all())?;
        ensure_everything_written(&records, PRODUCERS, PER_PRODUCER)?;
        log.shutdown().await;
        Ok(())
    })
}

/// A log with a tiny queue and tiny batches (so callers block for room and batches are many)
/// writes every record it took before its shutdown returns, then refuses new ones.
pub fn log_shutdown_writes_everything_it_took(make: &StoreFactory) -> Result<(), Failure> {
    const PRODUCERS: usize = 4;
    const PER_PRODUCER: usize = 100;
    let config = AuditConfig::default().queue_capacity(8).max_batch(3);
    let log = start(make, config)?;
    on_runtime(|| async {
        produce(&log, PRODUCERS, PER_PRODUCER, |_, _, _| Ok(())).await?;
        log.shutdown().await;
        let records = query(&**log.store(), &AuditQuery::all())?;
        ensure_everything_written(&records, PRODUCERS, PER_PRODUCER)?;
        ensure!(
            log.reserve().await.is_err(),
            "a shut-down log still reserves room for records"
        );
        let stats = log.stats();
        ensure!(
            stats.lost == 0 && stats.largest_batch <= 3,
            "after shutdown the stats say {stats:?}"
        );
        Ok(())
    })
}

/// The writer's retention sweep deletes records older than the configured age and keeps the
/// others, counting them in `stats().expired`.
pub fn log_retention_sweep_deletes_expired_records(make: &StoreFactory) -> Result<(), Failure> {
    let config =
        AuditConfig::default().retention(Duration::from_secs(3_600), Duration::from_millis(20));
    let log = start(make, config)?;
    let now = Timestamp::now();
    let two_hours_ago = now - SignedDuration::from_hours(2);
    on_runtime(|| async {
        for (n, timestamp) in (0..30).map(|n| (n, if n < 20 { two_hours_ago } else { now })) {
            let mut record = pending(0, n);
            record.timestamp = timestamp;
            submit(&log, record).await?;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while log.store().stats().expired < 20 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let stats = log.settled_stats().await;
        ensure!(
            stats.store.expired == 20,
            "20 records older than the retention age; after the sweep the stats say {stats:?}"
        );
        let left = log
            .query(&AuditQuery::all())
            .await
            .map_err(|error| Failure::new(format!("AuditLog::query failed: {error}")))?;
        ensure!(
            left.len() == 10 && left.iter().all(|record| record.timestamp == now),
            "the sweep should keep exactly the 10 recent records; left: {left:?}"
        );
        log.shutdown().await;
        Ok(())
    })
}

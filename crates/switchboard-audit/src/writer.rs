//! The audit writer: one thread that moves records from the log's channel into the store.
//!
//! The [`AuditStore`] trait is synchronous and may block (a disk, a transaction), so the writer
//! gets a thread of its own rather than a task on the callers' runtime, where a blocking append
//! would stall every call scheduled on the same worker. That thread runs a single-threaded tokio
//! runtime only to wait on three things at once: records (received in batches with
//! `recv_many`), the retention sweep's timer, and the request to stop. The retention sweep's
//! store calls block the thread, which is what it is there for; an append runs on the
//! runtime's blocking pool, so that the thread can tell, while it waits, that the store is not
//! answering.
//!
//! After a batch smaller than the largest, the writer pauses for [`LINGER`] before it waits on
//! the channel again, and the records sent meanwhile make the next batch. The reason is the
//! callers' cost: a receiver waiting on a tokio channel is woken by every send, and waking this
//! thread is a system call on the caller's side. A profile of JSON invokes back to back had a
//! quarter of all samples in the kernel's wake-up and task-switch paths; with the pause,
//! `cargo xtask bench invoke` measured the p99 of a JSON invoke at 4.8 µs instead of 17.9 µs,
//! and 64 callers at 527,000 calls/s instead of 357,000 (the median barely moved). A strict
//! record or a flush ends the pause at once (`urgent`), so only relaxed records wait for it:
//! they reach the store at most a millisecond later.
//!
//! Each batch is appended with one `append_keyed_batch` (one transaction in a persistent store)
//! under a [`BatchKey`] minted for it, the same on every attempt. A batch the store refuses (or
//! panics on) is kept and tried again, with a pause that doubles from 10 ms to 1 s, until the
//! store takes it or the writer stops: the key lets a store whose timed-out attempt committed
//! after all store the batch once. An attempt runs on a blocking thread while the writer's
//! thread watches the clock. After [`FAILING_AFTER_ATTEMPTS`] failed attempts, or once an
//! attempt has gone unanswered or a batch has kept failing for [`FAILING_AFTER`], and until a
//! batch is written, the writer is *failing* (an atomic flag and a watch channel the log
//! reads): a strict log refuses new calls, and strict callers stop waiting (see `log.rs`). The
//! records of a batch still unwritten when the writer stops (after [`SHUTDOWN_GRACE`]) are
//! counted in `lost` and logged, and strict callers still waiting are told. A flush is answered
//! once the records received with it are written; whatever was sent before the flush was
//! received no later than the flush itself.

use std::{
    panic::AssertUnwindSafe,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use jiff::Timestamp;
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tracing::Instrument;

use crate::{
    log::{AuditConfig, Failing, Message},
    record::{AuditId, AuditRecord},
    store::{AuditError, AuditStore, BatchKey},
};

/// How many records one retention step deletes; a full step is followed by another at once.
const SWEEP_STEP: usize = 10_000;
/// How long a stopping writer waits for calls that took room to send their records.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// The pause after a batch's first failed attempt; it doubles up to [`MAX_RETRY_PAUSE`].
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(10);
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(1);
/// A batch's failed attempts after which the writer counts as failing, however quick they were:
/// one failure that the next attempt makes good (a broken connection replaced) is not the
/// store failing.
const FAILING_AFTER_ATTEMPTS: u64 = 3;
/// How long an attempt may go unanswered, or a batch's attempts may keep failing, before the
/// writer counts as failing whatever their number: a store that does not answer (a frozen
/// database, whose call times out only after its own call timeout) is failing too, and callers
/// must not wait for its timeout. A call that met the frozen database in a store of its own
/// first (its tool's, its idempotency key's) has waited that store's call timeout already; its
/// record then waits at most this much more.
const FAILING_AFTER: Duration = Duration::from_secs(1);
/// How long the writer pauses after a batch that did not fill (see the module docs).
pub(crate) const LINGER: Duration = Duration::from_millis(1);

/// What the writer counts, read by [`AuditLog::stats`](crate::AuditLog::stats).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) written: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) blocked: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) largest_batch: AtomicU64,
    pub(crate) write_time_us: AtomicU64,
    pub(crate) max_write_us: AtomicU64,
    /// Set once a batch has failed long enough ([`FAILING_AFTER_ATTEMPTS`], [`FAILING_AFTER`])
    /// until a batch is written.
    pub(crate) failing: AtomicBool,
}

type StoredSender = oneshot::Sender<Result<AuditId, AuditError>>;

pub(crate) struct Writer {
    pub(crate) receiver: mpsc::Receiver<Message>,
    pub(crate) store: Arc<dyn AuditStore>,
    pub(crate) config: AuditConfig,
    pub(crate) counters: Arc<Counters>,
    /// Changes (or closes, with the last log handle) when the writer is to stop.
    pub(crate) closing: watch::Receiver<bool>,
    /// Set when the writer has stopped; dropped (which also tells) if it panics.
    pub(crate) stopped: watch::Sender<bool>,
    /// While the writer is failing ([`FAILING_AFTER_ATTEMPTS`]), the store's last error:
    /// `counters.failing`, to wait on, and why.
    pub(crate) failing: watch::Sender<Failing>,
    /// Notified after a strict record or a flush is sent: ends the pause after a batch.
    pub(crate) urgent: Arc<Notify>,
    /// Once asked to stop: when the writer gives up on what it could not write.
    pub(crate) stop_by: Option<tokio::time::Instant>,
}

impl Writer {
    /// Starts the writer's thread.
    pub(crate) fn spawn(self) -> Result<(), AuditError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|error| {
                AuditError::Unavailable(format!("cannot start the audit writer's runtime: {error}"))
            })?;
        std::thread::Builder::new()
            .name("switchboard-audit".to_owned())
            .spawn(move || {
                runtime.block_on(self.run().instrument(tracing::info_span!("audit_writer")));
            })
            .map_err(|error| {
                AuditError::Unavailable(format!("cannot start the audit writer thread: {error}"))
            })?;
        Ok(())
    }

    async fn run(mut self) {
        let mut messages = Vec::with_capacity(self.config.max_batch);
        let mut sweep =
            tokio::time::interval(self.config.sweep_interval.max(Duration::from_millis(1)));
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                received = self.receiver.recv_many(&mut messages, self.config.max_batch) => {
                    // Zero: the channel is closed, drained, and no call holds room any more.
                    if received == 0 {
                        break;
                    }
                    self.handle(&mut messages).await;
                    if received < self.config.max_batch {
                        tokio::select! {
                            () = tokio::time::sleep(LINGER) => {}
                            () = self.urgent.notified() => {}
                        }
                    }
                }
                _ = sweep.tick(), if self.config.retention.is_some() => {
                    if self.sweep_step() == SWEEP_STEP as u64 {
                        sweep.reset_immediately();
                    }
                }
                // Asked to stop, or every log handle is gone: refuse new room, write the rest.
                _ = self.closing.changed(), if self.stop_by.is_none() => self.begin_stop(),
                () = tokio::time::sleep_until(
                    self.stop_by.unwrap_or_else(tokio::time::Instant::now)
                ), if self.stop_by.is_some() =>
                {
                    let unsent = self.receiver.max_capacity()
                        - self.receiver.capacity()
                        - self.receiver.len();
                    while let Ok(message) = self.receiver.try_recv() {
                        messages.push(message);
                    }
                    self.handle(&mut messages).await;
                    tracing::error!(
                        unsent,
                        "audit writer stopping with calls that took room but never sent their \
                         records"
                    );
                    break;
                }
            }
        }
        self.stopped.send_replace(true);
        tracing::debug!("audit writer stopped");
    }

    /// Refuses new room and gives the writer [`SHUTDOWN_GRACE`] to write what it has.
    fn begin_stop(&mut self) {
        self.receiver.close();
        self.stop_by = Some(tokio::time::Instant::now() + SHUTDOWN_GRACE);
    }

    /// Whether the writer was asked to stop and its grace has passed.
    fn giving_up(&self) -> bool {
        self.stop_by
            .is_some_and(|stop_by| tokio::time::Instant::now() >= stop_by)
    }

    /// Sets whether the writer is failing (with the store's error), telling the log's waiters.
    fn set_failing(&self, error: Option<&AuditError>) {
        let failing = error.is_some();
        let was = self.counters.failing.swap(failing, Ordering::AcqRel);
        if failing || was {
            self.failing
                .send_replace(error.map(|error| Arc::from(error.to_string())));
        }
    }

    /// The pause before a failed batch's next attempt. A request to stop that comes meanwhile
    /// starts the shutdown grace, and the pause never outlasts that grace.
    async fn pause_before_retry(&mut self, pause: Duration) {
        match self.stop_by {
            None => {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    _ = self.closing.changed() => self.begin_stop(),
                }
            }
            Some(stop_by) => {
                tokio::time::sleep_until(stop_by.min(tokio::time::Instant::now() + pause)).await;
            }
        }
    }

    /// Writes the records among `messages`, then answers the flushes among them.
    async fn handle(&mut self, messages: &mut Vec<Message>) {
        let mut records = Vec::with_capacity(messages.len());
        let mut waiting = Vec::with_capacity(messages.len());
        let mut flushes = Vec::new();
        for message in messages.drain(..) {
            match message {
                Message::Record { mut record, stored } => {
                    if record.node.is_none() {
                        record.node.clone_from(&self.config.node);
                    }
                    records.push(record);
                    waiting.push(stored);
                }
                Message::Flush(done) => flushes.push(done),
            }
        }
        if !records.is_empty() {
            let count = records.len();
            self.write(records, waiting)
                .instrument(tracing::debug_span!("audit_batch", records = count))
                .await;
        }
        for done in flushes {
            let _ = done.send(());
        }
    }

    /// Appends one batch under one key, retrying with a growing pause until the store takes it
    /// or the writer gives up on stopping, and tells strict callers still waiting how it went.
    async fn write(&mut self, mut records: Vec<AuditRecord>, waiting: Vec<Option<StoredSender>>) {
        let counters = Arc::clone(&self.counters);
        let count = records.len() as u64;
        let key = BatchKey::new();
        let mut pause = FIRST_RETRY_PAUSE;
        let mut attempt: u64 = 1;
        let first_attempt = Instant::now();
        let result = loop {
            let started = Instant::now();
            let Some((back, result)) = self.attempt(key, records).await else {
                counters.lost.fetch_add(count, Ordering::Relaxed);
                tracing::error!(
                    lost = count,
                    %key,
                    "audit records lost: the attempt's task ended abnormally"
                );
                return;
            };
            records = back;
            let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            counters.write_time_us.fetch_add(took, Ordering::Relaxed);
            counters.max_write_us.fetch_max(took, Ordering::Relaxed);
            match result {
                Ok(()) => {
                    counters.written.fetch_add(count, Ordering::Relaxed);
                    counters.batches.fetch_add(1, Ordering::Relaxed);
                    counters.largest_batch.fetch_max(count, Ordering::Relaxed);
                    if attempt > 1 {
                        tracing::info!(
                            attempts = attempt,
                            %key,
                            "audit batch written: the store is back"
                        );
                    }
                    tracing::trace!(took_us = took, "audit batch written");
                    if self.counters.failing.load(Ordering::Acquire) {
                        self.set_failing(None);
                    }
                    break Ok(());
                }
                Err(error) if self.giving_up() => {
                    counters.lost.fetch_add(count, Ordering::Relaxed);
                    tracing::error!(
                        %error,
                        attempts = attempt,
                        lost = count,
                        "audit records lost: the writer stopped before the store took them"
                    );
                    break Err(error);
                }
                Err(error) => {
                    if attempt == 1 {
                        tracing::warn!(
                            %error,
                            %key,
                            records = count,
                            "audit batch not written; keeping it and trying again until the \
                             store takes it"
                        );
                    } else {
                        tracing::debug!(%error, attempt, %key, "audit batch still not written");
                    }
                    if attempt >= FAILING_AFTER_ATTEMPTS || first_attempt.elapsed() >= FAILING_AFTER
                    {
                        self.set_failing(Some(&error));
                    }
                    self.pause_before_retry(pause).await;
                    pause = (pause * 2).min(MAX_RETRY_PAUSE);
                    attempt += 1;
                }
            }
        };
        // A strict caller that stopped waiting does not need the answer.
        for (record, stored) in records.iter().zip(waiting) {
            if let Some(stored) = stored {
                let _ = stored.send(result.clone().map(|()| record.id));
            }
        }
    }

    /// One attempt at a batch, on a blocking thread while this one watches the clock: an
    /// attempt still unanswered after [`FAILING_AFTER`] makes the writer failing at once, so
    /// callers stop waiting and new strict calls are refused, whatever the store's own timeout.
    /// Gives the records back with the result; `None` only if the attempt's task ended without
    /// an answer (it catches the store's panics, so never in practice).
    async fn attempt(
        &self,
        key: BatchKey,
        mut records: Vec<AuditRecord>,
    ) -> Option<(Vec<AuditRecord>, Result<(), AuditError>)> {
        let store = Arc::clone(&self.store);
        let task = tokio::task::spawn_blocking(move || {
            // A store that panics is a store that failed: retried like any failure. Left to
            // unwind, the panic would end the attempt, and with it the batch.
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
                store.append_keyed_batch(key, &mut records)
            }))
            .unwrap_or_else(|_| {
                Err(AuditError::Unavailable(
                    "the audit store panicked while appending a batch".to_owned(),
                ))
            });
            (records, result)
        });
        tokio::pin!(task);
        let slow = tokio::time::sleep(FAILING_AFTER);
        tokio::pin!(slow);
        let mut flagged = false;
        loop {
            tokio::select! {
                done = &mut task => return done.ok(),
                () = &mut slow, if !flagged => {
                    flagged = true;
                    tracing::warn!(
                        %key,
                        "the audit store has not answered an append for {FAILING_AFTER:?}"
                    );
                    self.set_failing(Some(&AuditError::Unavailable(format!(
                        "it has not answered an append for {FAILING_AFTER:?}"
                    ))));
                }
            }
        }
    }

    /// Deletes one step's worth of expired records; returns how many.
    fn sweep_step(&self) -> u64 {
        let Some(age) = self.config.retention else {
            return 0;
        };
        let Ok(age) = jiff::SignedDuration::try_from(age) else {
            return 0;
        };
        let Ok(cutoff) = Timestamp::now().checked_sub(age) else {
            return 0;
        };
        let deleted = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.store.delete_before(cutoff, SWEEP_STEP)
        }))
        .unwrap_or_else(|_| {
            Err(AuditError::Unavailable(
                "the audit store panicked while deleting expired records".to_owned(),
            ))
        });
        match deleted {
            Ok(deleted) => {
                if deleted > 0 {
                    tracing::debug!(deleted, %cutoff, "retention sweep deleted expired audit records");
                }
                deleted
            }
            Err(error) => {
                tracing::warn!(%error, "retention sweep failed; will try again");
                0
            }
        }
    }
}

#[cfg(test)]
mod tests;

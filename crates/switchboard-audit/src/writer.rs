//! The audit writer: one thread that moves records from the queue into the store.
//!
//! Each round takes what is queued, in batches of at most `max_batch`, computes the digests,
//! fills in the wall-clock timestamps of records handed over with their call's start instant
//! (one reading of the wall clock per round instead of one per call on the caller's path), and
//! appends each batch in one `append_batch` (one transaction in a persistent store, which
//! is where batching pays). Between rounds it naps (1 ms while records pour in, up to 16 ms
//! while they trickle), so records that arrive one by one still meet the store in batches and a
//! slow stream of calls does not pay a wake-up each; after a long idle spell it parks until a
//! producer wakes it.
//! A flush ticket is completed only by a round that started after the ticket was taken, so it
//! covers every record handed over before the flush.
//!
//! A batch the store refuses (or panics on) is tried again with a growing pause, then reported
//! lost: every record counted in `lost` and logged, strict callers told. The retention sweep runs here too,
//! in small steps between rounds, so it never competes with appends for the store.

use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

use futures_channel::oneshot;
use jiff::{SignedDuration, Timestamp};

use crate::{
    log::{Queued, Shared},
    record::{AuditId, AuditRecord},
    store::AuditError,
};

/// The pause between rounds while records keep coming: from `NAP_MIN`, doubling after each
/// round that found fewer than `SMALL_ROUND` records, up to `NAP_MAX`. A busy log is written
/// every millisecond; a trickle of calls costs the writer one wake-up per `NAP_MAX`, not per
/// millisecond (nobody waits for a relaxed record: strict callers and flushes wake the writer
/// themselves, and producers wake it when the queue is half full).
const NAP_MIN: Duration = Duration::from_millis(1);
const NAP_MAX: Duration = Duration::from_millis(16);
const SMALL_ROUND: usize = 64;
/// Empty rounds after which the writer parks until woken.
const NAPS_BEFORE_SLEEP: u32 = 100;
/// How many records one retention step deletes.
const SWEEP_STEP: usize = 10_000;
/// How long a shutting-down writer waits for calls that reserved room to hand their records.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

type Ack = oneshot::Sender<Result<AuditId, AuditError>>;

pub(crate) fn run(shared: &Arc<Shared>) {
    let _span = tracing::info_span!("audit_writer").entered();
    let _stopped_if_panicking = StopOnPanic(shared);
    let mut batch = Batch::with_capacity(shared.config.max_batch);
    let mut empty_rounds = 0;
    let mut nap = NAP_MIN;
    let mut next_sweep = Instant::now();
    let mut closing_since: Option<Instant> = None;
    loop {
        let ticket = shared.flush_requested.load(Ordering::SeqCst);
        let wrote = round(shared, &mut batch);
        shared.flush_completed.fetch_max(ticket, Ordering::AcqRel);
        shared.flushed.notify(usize::MAX);

        if shared.config.retention.is_some() && Instant::now() >= next_sweep {
            if sweep_step(shared) < SWEEP_STEP as u64 {
                next_sweep = Instant::now() + shared.config.sweep_interval;
            }
            continue;
        }
        if shared.closed.load(Ordering::SeqCst) {
            let outstanding = shared.reserved.load(Ordering::Acquire);
            if outstanding == 0 && shared.queue.is_empty() {
                break;
            }
            let since = *closing_since.get_or_insert_with(Instant::now);
            if since.elapsed() > SHUTDOWN_GRACE && shared.queue.is_empty() {
                tracing::error!(
                    outstanding,
                    "audit writer stopping with calls that reserved room but never handed \
                     their records over"
                );
                break;
            }
        }
        if wrote >= shared.config.max_batch {
            continue;
        }
        if wrote == 0 {
            empty_rounds += 1;
        } else {
            empty_rounds = 0;
        }
        nap = if wrote >= SMALL_ROUND {
            NAP_MIN
        } else {
            (nap * 2).min(NAP_MAX)
        };
        if shared.closed.load(Ordering::SeqCst) {
            std::thread::park_timeout(NAP_MIN);
            continue;
        }
        if empty_rounds < NAPS_BEFORE_SLEEP {
            std::thread::park_timeout(nap);
            continue;
        }
        // Nothing for a while: sleep until a producer, a flush or shutdown wakes us. The flag is
        // set before the last look at the queue, and producers read it after pushing, so one
        // of the two always sees the other.
        shared.sleeping.store(true, Ordering::SeqCst);
        if shared.queue.is_empty()
            && shared.flush_requested.load(Ordering::SeqCst)
                == shared.flush_completed.load(Ordering::SeqCst)
            && !shared.closed.load(Ordering::SeqCst)
            && next_sweep_wait(shared, next_sweep).is_none()
        {
            std::thread::park();
        } else if let Some(wait) = next_sweep_wait(shared, next_sweep) {
            std::thread::park_timeout(wait);
        }
        shared.sleeping.store(false, Ordering::SeqCst);
        empty_rounds = 0;
        nap = NAP_MIN;
    }
    shared.stopped.store(true, Ordering::Release);
    shared.flushed.notify(usize::MAX);
    shared.room.notify(usize::MAX);
    tracing::debug!("audit writer stopped");
}

/// Should the writer itself panic (a bug: stores and digests are guarded), closes the log and
/// fails what it holds, so that no caller waits forever: new reservations are refused, flushes
/// and shutdowns return, and strict callers of the records still queued get an error.
struct StopOnPanic<'a>(&'a Shared);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let shared = self.0;
        shared.closed.store(true, Ordering::SeqCst);
        let mut lost = 0;
        // Dropping a record's acknowledgement sender tells its strict caller the writer stopped.
        while shared.queue.pop().is_some() {
            lost += 1;
        }
        shared.counters.lost.fetch_add(lost, Ordering::Relaxed);
        tracing::error!(lost, "the audit writer panicked; the audit log is closed");
        shared.stopped.store(true, Ordering::Release);
        shared.flushed.notify(usize::MAX);
        shared.room.notify(usize::MAX);
    }
}

/// How long until the next sweep, when retention is on.
fn next_sweep_wait(shared: &Shared, next_sweep: Instant) -> Option<Duration> {
    shared
        .config
        .retention
        .map(|_| next_sweep.saturating_duration_since(Instant::now()))
}

/// One batch on its way to the store; the vectors are kept from batch to batch.
struct Batch {
    records: Vec<AuditRecord>,
    /// One per record: who waits for it (strict durability), if anyone.
    acks: Vec<Option<Ack>>,
    /// The ids the store gave the records, once appended.
    ids: Vec<AuditId>,
}

impl Batch {
    fn with_capacity(capacity: usize) -> Self {
        Self {
            records: Vec::with_capacity(capacity),
            acks: Vec::with_capacity(capacity),
            ids: Vec::with_capacity(capacity),
        }
    }
}

/// Writes every record queued when the round began (and whatever joins them in the last
/// batch); returns how many.
fn round(shared: &Shared, batch: &mut Batch) -> usize {
    let mut owed = shared.queue.len();
    let mut wrote = 0;
    // Read when the first record of the round needs it.
    let mut clock: Option<WallClock> = None;
    loop {
        while batch.records.len() < shared.config.max_batch {
            let Some(Queued { record, ack }) = shared.queue.pop() else {
                break;
            };
            let record =
                record.into_record(|started| clock.get_or_insert_with(WallClock::now).at(started));
            batch.records.push(record);
            batch.acks.push(ack);
        }
        if batch.records.is_empty() {
            return wrote;
        }
        let taken = batch.records.len();
        // The queue has room again; writing may take a while.
        shared.reserved.fetch_sub(taken, Ordering::AcqRel);
        shared.room.notify(taken);
        write(shared, batch);
        wrote += taken;
        owed = owed.saturating_sub(taken);
        if owed == 0 {
            return wrote;
        }
    }
}

/// The wall clock and the monotonic clock read together, to turn a call's monotonic start into
/// its wall-clock time (see [`Reservation::submit_started_at`](crate::Reservation)).
struct WallClock {
    wall: Timestamp,
    monotonic: Instant,
}

impl WallClock {
    fn now() -> Self {
        Self {
            wall: Timestamp::now(),
            monotonic: Instant::now(),
        }
    }

    /// The wall-clock time at `instant`.
    fn at(&self, instant: Instant) -> Timestamp {
        let offset = match self.monotonic.checked_duration_since(instant) {
            Some(before) => SignedDuration::try_from(before).map(|before| -before),
            None => SignedDuration::try_from(instant.duration_since(self.monotonic)),
        };
        offset
            .ok()
            .and_then(|offset| self.wall.checked_add(offset).ok())
            .unwrap_or(self.wall)
    }
}

/// Appends one batch, retrying with a growing pause, and tells strict callers how it went.
fn write(shared: &Shared, batch: &mut Batch) {
    let Batch { records, acks, ids } = batch;
    let count = records.len() as u64;
    let span = tracing::debug_span!("audit_batch", records = count);
    let _entered = span.enter();
    let mut pause = Duration::from_millis(10);
    let mut attempt = 1;
    let result = loop {
        let started = Instant::now();
        // A store that panics is a store that failed: retried, then reported lost. Left to
        // unwind, the panic would end this thread, and every caller would wait for room in a
        // queue nobody empties any more.
        // Ids an attempt that failed halfway may have pushed are not the batch's.
        ids.clear();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            shared.store.append_taken(records, ids)
        }))
        .unwrap_or_else(|_| {
            Err(AuditError::Unavailable(
                "the audit store panicked while appending a batch".to_owned(),
            ))
        });
        let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let counters = &shared.counters;
        counters.write_time_us.fetch_add(took, Ordering::Relaxed);
        counters.max_write_us.fetch_max(took, Ordering::Relaxed);
        match result {
            Ok(()) => {
                counters.written.fetch_add(count, Ordering::Relaxed);
                counters.batches.fetch_add(1, Ordering::Relaxed);
                counters.largest_batch.fetch_max(count, Ordering::Relaxed);
                tracing::trace!(took_us = took, "audit batch written");
                break Ok(());
            }
            Err(error) if attempt < shared.config.write_attempts => {
                tracing::warn!(%error, attempt, "audit batch not written; trying again");
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(1));
                attempt += 1;
            }
            Err(error) => {
                counters.lost.fetch_add(count, Ordering::Relaxed);
                tracing::error!(
                    %error,
                    attempts = attempt,
                    lost = count,
                    "audit records lost: the store refused every attempt"
                );
                break Err(error);
            }
        }
    };
    match result {
        Ok(()) => {
            for (id, ack) in ids.drain(..).zip(acks.drain(..)) {
                // A strict caller that stopped waiting does not need the answer.
                if let Some(ack) = ack {
                    let _ = ack.send(Ok(id));
                }
            }
            // Both empty from a store that keeps `append_taken`'s contract; a store that does
            // not must not make the next batch append these records again (and a strict
            // caller left without an id learns its record's fate is unknown).
            records.clear();
            acks.clear();
        }
        Err(error) => {
            records.clear();
            ids.clear();
            for ack in acks.drain(..).flatten() {
                let _ = ack.send(Err(error.clone()));
            }
        }
    }
}

/// Deletes one step's worth of expired records; returns how many.
fn sweep_step(shared: &Shared) -> u64 {
    let Some(age) = shared.config.retention else {
        return 0;
    };
    let Ok(age) = jiff::SignedDuration::try_from(age) else {
        return 0;
    };
    let Ok(cutoff) = Timestamp::now().checked_sub(age) else {
        return 0;
    };
    match shared.store.delete_before(cutoff, SWEEP_STEP) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_instant_becomes_the_wall_clock_time_it_was_read_at() {
        let clock = WallClock::now();
        let second = Duration::from_secs(1);
        let earlier = clock.monotonic.checked_sub(second).expect("a second ago");
        let later = clock.monotonic + second;
        let one = SignedDuration::from_secs(1);
        assert_eq!(clock.at(clock.monotonic), clock.wall);
        assert_eq!(
            clock.at(earlier),
            clock.wall.checked_sub(one).expect("in range")
        );
        assert_eq!(
            clock.at(later),
            clock.wall.checked_add(one).expect("in range")
        );
    }
}

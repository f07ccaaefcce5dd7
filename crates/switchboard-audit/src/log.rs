//! The audit log: the one way records reach a store.
//!
//! A call reserves room in a bounded queue *before* it runs, and hands its record over when it
//! ends; a writer thread takes records off the queue in batches, computes the digests left to
//! it and appends them to the [`AuditStore`]. So the caller's path holds no store lock and no
//! I/O (and no hashing, unless the caller chose to digest a small value itself), and a slow
//! store never slows a call down until the queue is full.
//!
//! Reserving first is what makes "nothing is dropped silently" hold under a full queue. When
//! there is no room, the policy decides before anything has happened: [`WhenFull::Block`]
//! makes the caller wait for room, [`WhenFull::Fail`] refuses the call (counted in
//! [`AuditLogStats::rejected`]). A call that was admitted always has room for its record, even
//! when its caller stops waiting halfway.
//!
//! [`Durability`] decides when a call is acknowledged: `Relaxed` once its record is queued (a
//! crash may lose the queue, at most [`AuditConfig::queue_capacity`] records), `Strict` once the
//! store has appended it (a persistent store: committed). Either way a query through
//! [`AuditLog::query`] sees every record of every call that has returned: it flushes first.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    thread::Thread,
    time::{Duration, Instant},
};

use crossbeam_queue::ArrayQueue;
use crossbeam_utils::CachePadded;
use event_listener::Event;
use futures_channel::oneshot;
use serde::Serialize;

use crate::{
    pending::{PendingRecord, QueuedRecord},
    record::{AuditId, AuditRecord},
    store::{AuditError, AuditQuery, AuditStats, AuditStore},
};

/// What a caller meets when the queue is full.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenFull {
    /// Wait for room (the default): the caller slows down to the store's pace.
    #[default]
    Block,
    /// Refuse the call before it runs, with `audit_failed`.
    Fail,
}

/// When a call counts as acknowledged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Once its record is queued (the default). Fast; a crash may lose what is queued.
    #[default]
    Relaxed,
    /// Once the store has appended its record. A crash loses nothing acknowledged.
    Strict,
}

/// How the audit log queues, writes and keeps records.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditConfig {
    /// How many records may wait for the writer (default 65,536).
    pub queue_capacity: usize,
    /// What a caller meets when the queue is full (default: block).
    pub when_full: WhenFull,
    /// When a call is acknowledged (default: relaxed).
    pub durability: Durability,
    /// The largest batch handed to the store at once (default 4,096).
    pub max_batch: usize,
    /// How often a failed batch is tried before its records are reported lost (default 5,
    /// backing off from 10 ms).
    pub write_attempts: u32,
    /// Records older than this are deleted by the retention sweep (default: kept).
    pub retention: Option<Duration>,
    /// How often the retention sweep runs (default: every minute).
    pub sweep_interval: Duration,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 65_536,
            when_full: WhenFull::Block,
            durability: Durability::Relaxed,
            max_batch: 4_096,
            write_attempts: 5,
            retention: None,
            sweep_interval: Duration::from_secs(60),
        }
    }
}

impl AuditConfig {
    /// This configuration with `durability`.
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// This configuration with `when_full`.
    #[must_use]
    pub fn when_full(mut self, when_full: WhenFull) -> Self {
        self.when_full = when_full;
        self
    }

    /// This configuration with a queue of `capacity` records (at least one).
    #[must_use]
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.queue_capacity = capacity.max(1);
        self
    }

    /// This configuration with batches of at most `max_batch` records (at least one).
    #[must_use]
    pub fn max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = max_batch.max(1);
        self
    }

    /// This configuration trying a failed batch `attempts` times (at least once).
    #[must_use]
    pub fn write_attempts(mut self, attempts: u32) -> Self {
        self.write_attempts = attempts.max(1);
        self
    }

    /// This configuration deleting records older than `age`, checking every `interval`.
    #[must_use]
    pub fn retention(mut self, age: Duration, interval: Duration) -> Self {
        self.retention = Some(age);
        self.sweep_interval = interval;
        self
    }
}

/// The audit log's counters, with the store's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AuditLogStats {
    /// The store's own counters.
    pub store: AuditStats,
    /// Records waiting for the writer now (reserved by running calls, or queued).
    pub queued: u64,
    /// Records the writer has appended to the store.
    pub written: u64,
    /// Records lost because the store failed every attempt (each also logged as an error).
    pub lost: u64,
    /// Calls refused because the queue was full under [`WhenFull::Fail`].
    pub rejected: u64,
    /// Calls that waited for room under [`WhenFull::Block`].
    pub blocked: u64,
    /// Batches appended.
    pub batches: u64,
    /// The largest batch appended.
    pub largest_batch: u64,
    /// Total time spent in the store's `append_batch`, in microseconds.
    pub write_time_us: u64,
    /// The longest single `append_batch`, in microseconds.
    pub max_write_us: u64,
}

/// A queued record and, in strict mode, who waits for it.
///
/// Aligned to a cache line, so that every slot of the queue starts on one and no two slots
/// share a line: callers on different cores fill neighbouring slots at the same time, and the
/// writer reads one slot while the next is being filled. Unaligned, whether neighbours shared a
/// line depended on where the allocator happened to put the queue, and measured with 64
/// callers on two cores that was the difference between two stable speeds of the same build
/// (docs/benchmarks.md, session 8).
#[repr(align(64))]
pub(crate) struct Queued {
    pub(crate) record: QueuedRecord,
    pub(crate) ack: Option<oneshot::Sender<Result<AuditId, AuditError>>>,
}

/// What the caller-side handles and the writer thread share.
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn AuditStore>,
    pub(crate) config: AuditConfig,
    pub(crate) queue: ArrayQueue<Queued>,
    /// Room promised to running calls plus records queued: never above the queue's capacity,
    /// so a promised push always finds room. Every call writes it, from every core: padded to
    /// a line of its own, so that the fields every call only reads are not invalidated with it.
    pub(crate) reserved: CachePadded<AtomicUsize>,
    /// Notified when the writer frees room.
    pub(crate) room: Event,
    /// Flush tickets handed out, and the newest ticket whose records are all written.
    pub(crate) flush_requested: AtomicU64,
    pub(crate) flush_completed: AtomicU64,
    /// Notified when a flush ticket completes, and when the writer stops.
    pub(crate) flushed: Event,
    /// Set by the writer before it parks without a timeout; producers then wake it.
    pub(crate) sleeping: AtomicBool,
    pub(crate) closed: AtomicBool,
    pub(crate) stopped: AtomicBool,
    pub(crate) writer: std::sync::OnceLock<Thread>,
    pub(crate) counters: Counters,
}

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
}

impl Shared {
    pub(crate) fn wake_writer(&self) {
        if let Some(writer) = self.writer.get() {
            writer.unpark();
        }
    }

    /// Takes room for one record; `Some(held)` with the records now held (reserved or
    /// queued, this one included), `None` when the queue is full.
    fn try_reserve(&self) -> Option<usize> {
        let capacity = self.queue.capacity();
        let mut held = self.reserved.load(Ordering::Relaxed);
        loop {
            if held >= capacity {
                return None;
            }
            match self.reserved.compare_exchange_weak(
                held,
                held + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(held + 1),
                Err(now) => held = now,
            }
        }
    }

    fn release(&self, count: usize) {
        self.reserved.fetch_sub(count, Ordering::AcqRel);
        self.room.notify(count);
    }

    fn closed_error() -> AuditError {
        AuditError::Unavailable("the audit log is shut down".to_owned())
    }
}

/// The handle calls write through. Clone it freely; the writer stops when the last handle is
/// dropped or [`AuditLog::shutdown`] is called, after writing every record it was given.
#[derive(Clone)]
pub struct AuditLog {
    shared: Arc<Shared>,
    _owner: Arc<Owner>,
}

/// Closes the log when the last handle goes.
struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::SeqCst);
        self.0.wake_writer();
    }
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("config", &self.shared.config)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Starts the writer thread for `store`.
    pub fn start(store: Arc<dyn AuditStore>, config: AuditConfig) -> Result<Self, AuditError> {
        let config = AuditConfig {
            queue_capacity: config.queue_capacity.max(1),
            max_batch: config.max_batch.max(1),
            write_attempts: config.write_attempts.max(1),
            ..config
        };
        let shared = Arc::new(Shared {
            store,
            queue: ArrayQueue::new(config.queue_capacity),
            config,
            reserved: CachePadded::new(AtomicUsize::new(0)),
            room: Event::new(),
            flush_requested: AtomicU64::new(0),
            flush_completed: AtomicU64::new(0),
            flushed: Event::new(),
            sleeping: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            writer: std::sync::OnceLock::new(),
            counters: Counters::default(),
        });
        let writer = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("switchboard-audit".to_owned())
            .spawn(move || crate::writer::run(&writer))
            .map_err(|error| {
                AuditError::Unavailable(format!("cannot start the audit writer thread: {error}"))
            })?;
        // The writer parks only after it has seen its own handle.
        let _ = shared.writer.set(thread.thread().clone());
        shared.wake_writer();
        Ok(Self {
            _owner: Arc::new(Owner(Arc::clone(&shared))),
            shared,
        })
    }

    /// A log over a [`MemoryAuditStore`](crate::MemoryAuditStore) with the default
    /// configuration.
    pub fn in_memory() -> Result<Self, AuditError> {
        Self::start(
            Arc::new(crate::MemoryAuditStore::new()),
            AuditConfig::default(),
        )
    }

    /// The store records go to.
    pub fn store(&self) -> &Arc<dyn AuditStore> {
        &self.shared.store
    }

    /// The configuration in force.
    pub fn config(&self) -> &AuditConfig {
        &self.shared.config
    }

    /// Promises room for one record, before the call it records runs. Waits for room or
    /// refuses, as [`AuditConfig::when_full`] says; refuses once the log is shut down.
    pub async fn reserve(&self) -> Result<Reservation<'_>, AuditError> {
        if let Some(reservation) = self.try_reserve()? {
            return Ok(reservation);
        }
        let shared = &self.shared;
        shared.counters.blocked.fetch_add(1, Ordering::Relaxed);
        tracing::debug!("audit queue full: waiting for room");
        loop {
            shared.wake_writer();
            let listener = shared.room.listen();
            if shared.closed.load(Ordering::Acquire) {
                return Err(Shared::closed_error());
            }
            if let Some(held) = shared.try_reserve() {
                return Ok(Reservation::new(self, held));
            }
            listener.await;
        }
    }

    /// [`reserve`](Self::reserve) without waiting: `Ok(None)` when the queue is full and the
    /// policy is to wait (then call `reserve`).
    pub fn try_reserve(&self) -> Result<Option<Reservation<'_>>, AuditError> {
        let shared = &self.shared;
        if shared.closed.load(Ordering::Acquire) {
            return Err(Shared::closed_error());
        }
        if let Some(held) = shared.try_reserve() {
            return Ok(Some(Reservation::new(self, held)));
        }
        match shared.config.when_full {
            WhenFull::Block => Ok(None),
            WhenFull::Fail => {
                shared.counters.rejected.fetch_add(1, Ordering::Relaxed);
                Err(AuditError::Unavailable(format!(
                    "the audit queue is full ({} records waiting for the store) and the policy \
                     is to refuse calls; the store is slower than the calls, or stuck",
                    shared.queue.capacity()
                )))
            }
        }
    }

    /// Waits until every record handed over before this call is in the store.
    pub async fn flush(&self) {
        let shared = &self.shared;
        let ticket = shared.flush_requested.fetch_add(1, Ordering::SeqCst) + 1;
        loop {
            shared.wake_writer();
            if shared.flush_completed.load(Ordering::Acquire) >= ticket
                || shared.stopped.load(Ordering::Acquire)
            {
                return;
            }
            let listener = shared.flushed.listen();
            if shared.flush_completed.load(Ordering::Acquire) >= ticket
                || shared.stopped.load(Ordering::Acquire)
            {
                return;
            }
            listener.await;
        }
    }

    /// Records matching `query`, newest first, including those of every call that has
    /// returned (the log is flushed first). The store is read on a blocking thread.
    pub async fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        self.flush().await;
        let store = Arc::clone(&self.shared.store);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let query = query.clone();
                runtime
                    .spawn_blocking(move || store.query(&query))
                    .await
                    .map_err(|error| {
                        AuditError::Unavailable(format!("the audit query task failed: {error}"))
                    })?
            }
            Err(_) => store.query(query),
        }
    }

    /// The counters, as of now (records still queued are counted in `queued`, not yet in the
    /// store's). Call [`flush`](Self::flush) first to count every returned call.
    pub fn stats(&self) -> AuditLogStats {
        let counters = &self.shared.counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        AuditLogStats {
            store: self.shared.store.stats(),
            queued: self.shared.reserved.load(Ordering::Relaxed) as u64,
            written: load(&counters.written),
            lost: load(&counters.lost),
            rejected: load(&counters.rejected),
            blocked: load(&counters.blocked),
            batches: load(&counters.batches),
            largest_batch: load(&counters.largest_batch),
            write_time_us: load(&counters.write_time_us),
            max_write_us: load(&counters.max_write_us),
        }
    }

    /// The counters once every record handed over so far is written ([`flush`](Self::flush),
    /// then [`stats`](Self::stats)).
    pub async fn settled_stats(&self) -> AuditLogStats {
        self.flush().await;
        self.stats()
    }

    /// Stops taking records, writes every record already given or promised, and waits for the
    /// writer to stop.
    pub async fn shutdown(&self) {
        let shared = &self.shared;
        shared.closed.store(true, Ordering::SeqCst);
        loop {
            shared.wake_writer();
            if shared.stopped.load(Ordering::Acquire) {
                return;
            }
            let listener = shared.flushed.listen();
            if shared.stopped.load(Ordering::Acquire) {
                return;
            }
            listener.await;
        }
    }
}

/// Room for one record in the queue, promised to a call before it runs.
///
/// Hand the record over with [`submit`](Reservation::submit); dropping the reservation unused
/// gives the room back.
///
/// It borrows the log rather than sharing it: a call holds one for its whole run, and taking
/// and dropping a reference count on every call is two atomic writes for nothing.
pub struct Reservation<'log> {
    shared: &'log Shared,
    /// The records held (reserved or queued) when this room was promised, itself included:
    /// how full the queue is, known without reading the writer's end of the queue (a cache
    /// line the writer keeps writing).
    held: usize,
    used: bool,
}

impl std::fmt::Debug for Reservation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reservation")
            .field("held", &self.held)
            .field("used", &self.used)
            .finish()
    }
}

impl<'log> Reservation<'log> {
    fn new(log: &'log AuditLog, held: usize) -> Self {
        Self {
            shared: &log.shared,
            held,
            used: false,
        }
    }

    /// Queues the record. Never waits: the room was promised. In strict mode the returned
    /// [`Submitted`] resolves once the store has the record.
    pub fn submit(self, pending: PendingRecord) -> Submitted {
        self.queue(pending, None)
    }

    /// [`submit`](Self::submit), with the record's `timestamp` set by the writer to the
    /// wall-clock time of `started`: the writer reads the wall clock once per batch and steps
    /// back by the monotonic time elapsed since `started`. A call then reads one clock to
    /// start and one to end (its duration), not a third for the wall time. The two clocks
    /// agree up to a step of the wall clock (or a suspend) while the record waits in the
    /// queue, which is milliseconds.
    #[inline]
    pub fn submit_started_at(self, pending: PendingRecord, started: Instant) -> Submitted {
        self.queue(pending, Some(started))
    }

    #[inline]
    fn queue(mut self, pending: PendingRecord, started: Option<Instant>) -> Submitted {
        self.used = true;
        let shared = self.shared;
        let (ack, submitted) = match shared.config.durability {
            Durability::Relaxed => (None, Submitted::Queued),
            Durability::Strict => {
                let (sender, receiver) = oneshot::channel();
                (Some(sender), Submitted::Waiting(receiver))
            }
        };
        if shared
            .queue
            .push(Queued {
                record: QueuedRecord::new(pending, started),
                ack,
            })
            .is_err()
        {
            // Unreachable while reservations hold: `reserved` never exceeds the capacity.
            tracing::error!("audit queue overflowed despite a reservation; record lost");
            shared.counters.lost.fetch_add(1, Ordering::Relaxed);
            shared.release(1);
            return Submitted::Failed(AuditError::Unavailable(
                "the audit queue overflowed".to_owned(),
            ));
        }
        // Wake the writer when someone waits for it, when the queue is filling up (as of this
        // record's reservation), or when it went to sleep with nothing to do. Otherwise it
        // picks the record up on its next round.
        if matches!(submitted, Submitted::Waiting(_))
            || shared.sleeping.load(Ordering::SeqCst)
            || self.held * 2 > shared.queue.capacity()
        {
            shared.wake_writer();
        }
        submitted
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.shared.release(1);
        }
    }
}

/// A record handed to the log.
#[derive(Debug)]
pub enum Submitted {
    /// Queued; under relaxed durability that is the acknowledgement.
    Queued,
    /// Strict durability: resolves once the store has appended the record.
    Waiting(oneshot::Receiver<Result<AuditId, AuditError>>),
    /// The record could not be queued.
    Failed(AuditError),
}

impl Submitted {
    /// Waits for the acknowledgement the configured durability asks for.
    pub async fn acknowledged(self) -> Result<(), AuditError> {
        match self {
            Submitted::Queued => Ok(()),
            Submitted::Failed(error) => Err(error),
            Submitted::Waiting(receiver) => match receiver.await {
                Ok(result) => result.map(drop),
                Err(_) => Err(AuditError::Unavailable(
                    "the audit writer stopped before writing the record".to_owned(),
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Queued;

    /// The queue's slots start on cache lines of their own (see [`Queued`]).
    #[test]
    fn a_queued_record_fills_whole_cache_lines() {
        assert_eq!(std::mem::align_of::<Queued>(), 64);
        assert_eq!(
            std::mem::size_of::<Queued>(),
            256,
            "four cache lines, no more"
        );
    }
}

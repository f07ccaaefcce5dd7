//! The audit log: the one way records reach a store.
//!
//! The log is a bounded `tokio::sync::mpsc` channel with one writer at its far end. A call
//! takes its permit (room for one record) *before* it runs, and sends its record on that permit
//! when it ends, which never waits; the writer receives records in batches and appends them to
//! the [`AuditStore`]. So the caller's path holds no store lock and no I/O, and a slow store
//! never slows a call down until the channel is full.
//!
//! Taking the permit first is what makes "nothing is dropped silently" hold under a full
//! channel. When there is no room, the policy decides before anything has happened:
//! [`WhenFull::Block`] makes the caller wait for room, [`WhenFull::Fail`] refuses the call
//! (counted in [`AuditLogStats::rejected`]). A call that was admitted always has room for its
//! record, even when its caller stops waiting halfway.
//!
//! [`Durability`] decides when a call is acknowledged: `Relaxed` once its record is sent (a
//! crash may lose the channel, at most [`AuditConfig::queue_capacity`] records), `Strict` once
//! the store has appended it (a persistent store: committed). Either way a query through
//! [`AuditLog::query`] sees every record of every call that has returned: it flushes first.
//!
//! A store that fails does not lose records: the writer keeps the batch and tries it again
//! until the store takes it (see `writer.rs`), and the log says so to callers. While the
//! writer is retrying ([`AuditLog::is_failing`], one atomic load), a strict log refuses new
//! calls before they run ([`AuditError::StoreFailing`], no room taken, counted in
//! [`AuditLogStats::rejected`]), and a strict caller waiting for its record is answered at once
//! with [`AuditError::NotWrittenYet`]: its record stays queued and is written later. A strict
//! caller waits at most [`AuditConfig::strict_timeout`] in any case. A relaxed log keeps taking
//! records while there is room; once the queue is full, a failing store refuses calls rather
//! than make them wait for room. So what the log holds while the store is away is bounded:
//! the queue ([`AuditConfig::queue_capacity`]) and the batch being retried
//! ([`AuditConfig::max_batch`]).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use serde::Serialize;
use tokio::sync::{Notify, mpsc, oneshot, watch};

use crate::{
    record::{AuditId, AuditRecord},
    store::{AuditError, AuditQuery, AuditStats, AuditStore},
    writer::{Counters, Writer},
};

/// Why a failing store refuses a call when the queue is full.
const QUEUE_FULL: &str = "the queue of records waiting for it is full";

/// While the writer retries a batch the store failed: the store's last error.
pub(crate) type Failing = Option<Arc<str>>;

/// How long a strict caller waits for its record by default ([`AuditConfig::strict_timeout`]).
pub const DEFAULT_STRICT_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// How many records may wait for the writer, running calls' reserved room included
    /// (default 65,536).
    pub queue_capacity: usize,
    /// What a caller meets when the queue is full (default: block).
    pub when_full: WhenFull,
    /// When a call is acknowledged (default: relaxed).
    pub durability: Durability,
    /// The largest batch handed to the store at once (default 4,096).
    pub max_batch: usize,
    /// How long a strict caller waits for its record to be stored before it is answered
    /// [`AuditError::NotWrittenYet`] (default [`DEFAULT_STRICT_TIMEOUT`], 5 s). The record is
    /// not dropped then: the writer keeps it, and retries a batch the store failed (backing
    /// off from 10 ms to 1 s) until the store takes it; only records still unwritten when the
    /// writer stops are counted [`AuditLogStats::lost`]. Below a PostgreSQL store's call
    /// timeout (10 s), so that a call never waits on a frozen database for a whole store call.
    pub strict_timeout: Duration,
    /// Records older than this are deleted by the retention sweep (default: kept).
    pub retention: Option<Duration>,
    /// How often the retention sweep runs (default: every minute).
    pub sweep_interval: Duration,
    /// The name of this node, stamped on every record the log writes (default: none), so that
    /// the records of several nodes sharing one store say which ran each call.
    pub node: Option<Arc<str>>,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 65_536,
            when_full: WhenFull::Block,
            durability: Durability::Relaxed,
            max_batch: 4_096,
            strict_timeout: DEFAULT_STRICT_TIMEOUT,
            retention: None,
            sweep_interval: Duration::from_secs(60),
            node: None,
        }
    }
}

impl AuditConfig {
    /// This configuration stamping `name` on every record as the node that ran the call.
    #[must_use]
    pub fn node(mut self, name: impl Into<Arc<str>>) -> Self {
        self.node = Some(name.into());
        self
    }

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

    /// This configuration answering a strict caller whose record is not stored within
    /// `timeout` with [`AuditError::NotWrittenYet`].
    #[must_use]
    pub fn strict_timeout(mut self, timeout: Duration) -> Self {
        self.strict_timeout = timeout;
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
    /// Records lost: still unwritten when the writer stopped, because the store failed every
    /// attempt until then (each also logged as an error).
    pub lost: u64,
    /// Calls refused before they ran: the queue was full under [`WhenFull::Fail`], or the store
    /// was failing ([`AuditError::StoreFailing`]).
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

/// What travels through the channel to the writer.
#[allow(
    clippy::large_enum_variant,
    reason = "nearly every message is a record; boxing it would allocate once per call"
)]
pub(crate) enum Message {
    /// A call's record and, under strict durability, who waits for it to be stored.
    Record {
        record: AuditRecord,
        stored: Option<oneshot::Sender<Result<AuditId, AuditError>>>,
    },
    /// Answered once every message sent before it is handled.
    Flush(oneshot::Sender<()>),
}

/// The handle calls write through. Clone it freely; the writer stops when the last handle is
/// dropped or [`AuditLog::shutdown`] is called, after writing every record it was given or
/// promised.
#[derive(Clone)]
pub struct AuditLog {
    shared: Arc<Shared>,
}

struct Shared {
    sender: mpsc::Sender<Message>,
    store: Arc<dyn AuditStore>,
    config: AuditConfig,
    counters: Arc<Counters>,
    /// Set to ask the writer to stop taking records; dropped (with the last handle) too.
    closing: watch::Sender<bool>,
    /// Set by the writer when it has stopped.
    stopped: watch::Receiver<bool>,
    /// While the writer is retrying a batch the store failed, the store's last error (the
    /// same as `counters.failing`, for waiting on it).
    failing: watch::Receiver<Failing>,
    /// Tells the writer that someone waits: a strict record or a flush was sent.
    urgent: Arc<Notify>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("config", &self.shared.config)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn closed_error() -> AuditError {
    AuditError::Unavailable("the audit log is shut down".to_owned())
}

impl AuditLog {
    /// Starts the writer thread for `store`.
    pub fn start(store: Arc<dyn AuditStore>, config: AuditConfig) -> Result<Self, AuditError> {
        let config = AuditConfig {
            queue_capacity: config.queue_capacity.max(1),
            max_batch: config.max_batch.max(1),
            ..config
        };
        let (sender, receiver) = mpsc::channel(config.queue_capacity);
        let (closing, closing_seen) = watch::channel(false);
        let (stopped_tx, stopped) = watch::channel(false);
        let (failing_tx, failing) = watch::channel(None);
        let counters = Arc::new(Counters::default());
        let urgent = Arc::new(Notify::new());
        Writer {
            receiver,
            store: Arc::clone(&store),
            config: config.clone(),
            counters: Arc::clone(&counters),
            closing: closing_seen,
            stopped: stopped_tx,
            failing: failing_tx,
            urgent: Arc::clone(&urgent),
            stop_by: None,
        }
        .spawn()?;
        Ok(Self {
            shared: Arc::new(Shared {
                sender,
                store,
                config,
                counters,
                closing,
                stopped,
                failing,
                urgent,
            }),
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

    /// Whether the writer is retrying a batch the store failed to take (until one is written).
    /// One atomic load.
    pub fn is_failing(&self) -> bool {
        self.shared.counters.failing.load(Ordering::Acquire)
    }

    /// Takes room for one record, before the call it records runs. Waits for room or refuses,
    /// as [`AuditConfig::when_full`] says; refuses once the log is shut down. While the store is
    /// failing ([`is_failing`](Self::is_failing)), refuses with [`AuditError::StoreFailing`]
    /// under strict durability, and under relaxed durability when the queue is full (a wait for
    /// room would last as long as the store's failure).
    pub async fn reserve(&self) -> Result<Reservation, AuditError> {
        let shared = &self.shared;
        if shared.config.durability == Durability::Strict && self.is_failing() {
            return Err(self.refuse_failing(
                "the audit writer is retrying the records it did not take, and a strict log runs \
                 no call until they are written",
            ));
        }
        let permit = match shared.sender.clone().try_reserve_owned() {
            Ok(permit) => permit,
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(closed_error()),
            Err(mpsc::error::TrySendError::Full(_)) if self.is_failing() => {
                return Err(self.refuse_failing(QUEUE_FULL));
            }
            Err(mpsc::error::TrySendError::Full(sender)) => match shared.config.when_full {
                WhenFull::Block => {
                    shared.counters.blocked.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!("audit queue full: waiting for room");
                    let mut failing = shared.failing.clone();
                    tokio::select! {
                        permit = sender.reserve_owned() => permit.map_err(|_| closed_error())?,
                        // `wait_for` fails only when the writer is gone: the room wait ends
                        // with the closed channel then.
                        Ok(_) = failing.wait_for(Option::is_some) => {
                            return Err(self.refuse_failing(QUEUE_FULL));
                        }
                    }
                }
                WhenFull::Fail => {
                    shared.counters.rejected.fetch_add(1, Ordering::Relaxed);
                    return Err(AuditError::Unavailable(format!(
                        "the audit queue is full ({} records waiting for the store) and the \
                         policy is to refuse calls; the store is slower than the calls, or stuck",
                        shared.config.queue_capacity
                    )));
                }
            },
        };
        let strict = shared.config.durability == Durability::Strict;
        Ok(Reservation {
            permit,
            strict: strict.then(|| Strict {
                urgent: Arc::clone(&shared.urgent),
                failing: shared.failing.clone(),
                timeout: shared.config.strict_timeout,
            }),
        })
    }

    /// Counts and logs a call refused because the store is failing, and says why.
    fn refuse_failing(&self, why: &str) -> AuditError {
        let shared = &self.shared;
        shared.counters.rejected.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(why, "call refused: the audit store is failing");
        let error = shared.failing.borrow().clone().unwrap_or_default();
        AuditError::StoreFailing(format!("{error}; {why}"))
    }

    /// Waits until every record sent before this call is in the store (or reported lost), or
    /// until the store is failing ([`is_failing`](Self::is_failing)): a flush never waits for a
    /// store to come back.
    pub async fn flush(&self) {
        if self.is_failing() {
            return;
        }
        let (done, flushed) = oneshot::channel();
        let mut failing = self.shared.failing.clone();
        let sent = tokio::select! {
            sent = self.shared.sender.send(Message::Flush(done)) => sent.is_ok(),
            _ = failing.wait_for(Option::is_some) => return,
        };
        // A stopped writer has written everything it will: nothing to wait for.
        if sent {
            self.shared.urgent.notify_one();
            tokio::select! {
                _ = flushed => {}
                _ = failing.wait_for(Option::is_some) => {}
            }
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

    /// The counters, as of now (records still in the channel are counted in `queued`, not yet
    /// in the store's). Call [`flush`](Self::flush) first to count every returned call.
    pub fn stats(&self) -> AuditLogStats {
        let shared = &self.shared;
        let counters = &shared.counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let free = shared.sender.capacity();
        AuditLogStats {
            store: shared.store.stats(),
            queued: shared.sender.max_capacity().saturating_sub(free) as u64,
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

    /// The counters once every record sent so far is written ([`flush`](Self::flush), then
    /// [`stats`](Self::stats)).
    pub async fn settled_stats(&self) -> AuditLogStats {
        self.flush().await;
        self.stats()
    }

    /// Stops taking records, writes every record already sent or promised, and waits for the
    /// writer to stop.
    pub async fn shutdown(&self) {
        self.shared.closing.send_replace(true);
        let mut stopped = self.shared.stopped.clone();
        // An error means the writer is gone already.
        let _ = stopped.wait_for(|stopped| *stopped).await;
    }
}

/// Room for one record in the channel, taken for a call before it runs.
///
/// Send the record with [`submit`](Reservation::submit); dropping the reservation unused gives
/// the room back.
#[derive(Debug)]
pub struct Reservation {
    permit: mpsc::OwnedPermit<Message>,
    /// Under strict durability, what a caller waiting for its record needs.
    strict: Option<Strict>,
}

/// What a strict record's caller waits with.
#[derive(Debug)]
struct Strict {
    /// The writer's `urgent` signal: someone waits for this record.
    urgent: Arc<Notify>,
    /// Whether the writer is retrying a failed batch: the wait ends at once then.
    failing: watch::Receiver<Failing>,
    /// The longest wait ([`AuditConfig::strict_timeout`]).
    timeout: Duration,
}

impl Reservation {
    /// Sends the record. Never waits: the room was taken. Under strict durability the returned
    /// [`Submitted`] resolves once the store has the record.
    pub fn submit(self, record: AuditRecord) -> Submitted {
        let Some(strict) = self.strict else {
            self.permit.send(Message::Record {
                record,
                stored: None,
            });
            return Submitted::Queued;
        };
        let (sender, receiver) = oneshot::channel();
        self.permit.send(Message::Record {
            record,
            stored: Some(sender),
        });
        strict.urgent.notify_one();
        Submitted::Waiting(Waiting {
            receiver,
            failing: strict.failing,
            timeout: strict.timeout,
        })
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Record { record, .. } => f.debug_tuple("Record").field(&record.tool).finish(),
            Message::Flush(_) => f.write_str("Flush"),
        }
    }
}

/// A record sent to the log.
#[derive(Debug)]
pub enum Submitted {
    /// Sent; under relaxed durability that is the acknowledgement.
    Queued,
    /// Strict durability: resolves once the store has appended the record.
    Waiting(Waiting),
}

/// A strict record on its way to the store.
#[derive(Debug)]
pub struct Waiting {
    receiver: oneshot::Receiver<Result<AuditId, AuditError>>,
    failing: watch::Receiver<Failing>,
    timeout: Duration,
}

impl Submitted {
    /// Waits for the acknowledgement the configured durability asks for. A strict record is
    /// acknowledged once the store has it; the wait ends sooner with
    /// [`AuditError::NotWrittenYet`] (the record kept, to be written later) when the store is
    /// failing or [`AuditConfig::strict_timeout`] has passed.
    pub async fn acknowledged(self) -> Result<(), AuditError> {
        let Submitted::Waiting(Waiting {
            mut receiver,
            mut failing,
            timeout,
        }) = self
        else {
            return Ok(());
        };
        let stopped = || {
            AuditError::Unavailable("the audit writer stopped before writing the record".to_owned())
        };
        tokio::select! {
            biased;
            stored = &mut receiver => stored.map_err(|_| stopped())?.map(drop),
            // Fails only when the writer is gone; its answer (or its absence) says how then.
            Ok(error) = failing.wait_for(Option::is_some) => {
                let error = error.clone().unwrap_or_default();
                // The writer may have stored this record just before it failed on a later one.
                match receiver.try_recv() {
                    Ok(stored) => stored.map(drop),
                    Err(_) => Err(AuditError::NotWrittenYet(format!(
                        "the audit store is failing: {error}"
                    ))),
                }
            }
            () = tokio::time::sleep(timeout) => Err(AuditError::NotWrittenYet(format!(
                "the audit store did not store it within {timeout:?}"
            ))),
        }
    }
}

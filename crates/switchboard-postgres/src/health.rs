//! Whether a database answers: once a call has waited a whole call timeout, the other calls to
//! the same database fail at once, until a probe gets an answer.
//!
//! A server that stops answering without closing its connections (a frozen host, a network
//! partition) makes every statement wait its full call timeout. A call runs several statements
//! in a row, often in different stores (a gate's read, the idempotency claim, the tool's
//! change, the key's completion), so without this each would wait its own timeout and one call
//! would hang for several. With it, the first timeout marks the database unresponsive for every
//! [`Database`](crate::Database) on the same target (the stores of one process on one
//! database), the calls that follow fail at once with [`QueryError::Unresponsive`], and a probe
//! clears the mark as soon as the server answers: every [`PROBE_INTERVAL`] it opens a new
//! connection and runs `SELECT 1`, bounded by the call timeout. (A new connection, not a pooled
//! one: a pooled connection may still be waiting on the statement that timed out.) The probe
//! runs on a thread of its own, shared by every target, so it outlives whichever store started
//! it. A call already waiting when the server stopped still waits its own timeout, and no
//! longer.
//!
//! A server that refuses connections (stopped, restarting) is not marked: its calls fail at
//! once by themselves.
//!
//! The mark is one atomic flag and the registry of targets one mutex taken when a store opens,
//! standard primitives; the one thing written by hand is the rule above, which no pool or client
//! offers (deadpool's timeouts bound each wait, not a run of them).

use std::{
    collections::HashMap,
    sync::{
        Arc, LazyLock, Mutex, PoisonError, Weak,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::runtime::Runtime;

use crate::{error::QueryError, options::Target};

/// How often a probe asks an unresponsive database whether it answers again.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(250);

/// The health of one target, shared by every `Database` on it.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// When the database was found unresponsive; `None` while it answers.
    unresponsive_since: Mutex<Option<Instant>>,
    /// Whether a probe is running.
    probing: AtomicBool,
}

/// Every target's health, by target; an entry lives as long as a `Database` holds it.
static HEALTH: LazyLock<Mutex<HashMap<String, Weak<Health>>>> = LazyLock::new(Mutex::default);

/// The probes' runtime: one thread for every target's probe, for the process's life. `None`
/// if the thread could not be started: nothing is then marked, and every call waits its own
/// timeout, as without this module.
static PROBES: LazyLock<Option<Runtime>> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("switchboard-postgres-probe")
        .enable_all()
        .build()
        .inspect_err(|error| tracing::error!(%error, "cannot start the database probes' thread"))
        .ok()
});

impl Health {
    /// The health of `target`, shared with every other open `Database` on it.
    pub(crate) fn of(target: &Target) -> Arc<Self> {
        let mut all = HEALTH.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|_, health| health.strong_count() > 0);
        let key = target.to_string();
        if let Some(health) = all.get(&key).and_then(Weak::upgrade) {
            return health;
        }
        let health = Arc::new(Self::default());
        all.insert(key, Arc::downgrade(&health));
        health
    }

    fn since(&self) -> Option<Instant> {
        *self
            .unresponsive_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses a call at once while the database is marked unresponsive (and makes sure a
    /// probe runs, connecting as `config` says).
    pub(crate) fn admit(
        self: &Arc<Self>,
        config: &tokio_postgres::Config,
        call_timeout: Duration,
    ) -> Result<(), QueryError> {
        let Some(since) = self.since() else {
            return Ok(());
        };
        self.probe(config, call_timeout);
        Err(QueryError::Unresponsive {
            for_: since.elapsed(),
        })
    }

    /// Notes how a call ended: a timeout marks the database unresponsive and starts a probe
    /// (unless there is no probes' thread to clear the mark again).
    pub(crate) fn note<T>(
        self: &Arc<Self>,
        result: &Result<T, QueryError>,
        config: &tokio_postgres::Config,
        call_timeout: Duration,
    ) {
        if !matches!(result, Err(QueryError::Timeout(_))) || PROBES.is_none() {
            return;
        }
        let mut since = self
            .unresponsive_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if since.is_none() {
            *since = Some(Instant::now());
            tracing::warn!(
                ?call_timeout,
                "the database did not answer a call in time; calls to it fail at once until it \
                 answers a probe"
            );
        }
        drop(since);
        self.probe(config, call_timeout);
    }

    /// Clears the mark: the database answers.
    fn clear(&self) {
        let mut since = self
            .unresponsive_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(since) = since.take() {
            tracing::info!(after = ?since.elapsed(), "the database answers again");
        }
    }

    /// Starts the probe unless one runs: a new connection and `SELECT 1` every
    /// [`PROBE_INTERVAL`] until the database answers, then clears the mark.
    fn probe(self: &Arc<Self>, config: &tokio_postgres::Config, call_timeout: Duration) {
        let Some(probes) = PROBES.as_ref() else {
            return;
        };
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let health = Arc::clone(self);
        let config = config.clone();
        probes.spawn(async move {
            // Clears `probing` however the probe ends, so that the next refused call starts
            // another.
            let _probing = Probing(Arc::clone(&health));
            loop {
                tokio::time::sleep(PROBE_INTERVAL).await;
                let answered = tokio::time::timeout(call_timeout, async {
                    let (client, connection) = config.connect(tokio_postgres::NoTls).await.ok()?;
                    let driver = tokio::spawn(connection);
                    let answer = client.simple_query("SELECT 1").await.ok();
                    drop(client);
                    let _ = driver.await;
                    answer
                })
                .await;
                if let Ok(Some(_)) = answered {
                    health.clear();
                    return;
                }
            }
        });
    }
}

/// Clears [`Health::probing`] when the probe's task ends or is dropped.
struct Probing(Arc<Health>);

impl Drop for Probing {
    fn drop(&mut self) {
        self.0.probing.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_on_one_target_share_its_health_and_other_targets_do_not() {
        let a = crate::PostgresOptions::new("postgres://app@db/one").target();
        let b = crate::PostgresOptions::new("postgres://app@db/two").target();
        let first = Health::of(&a);
        let second = Health::of(&a);
        let other = Health::of(&b);
        assert!(Arc::ptr_eq(&first, &second));
        assert!(!Arc::ptr_eq(&first, &other));
    }
}

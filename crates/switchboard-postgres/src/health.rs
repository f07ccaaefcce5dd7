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
//! (`SELECT 1`, every [`PROBE_INTERVAL`], itself bounded by the call timeout) clears the mark as
//! soon as the server answers. A call already waiting when the server stopped still waits its
//! own timeout, and no longer.
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

use deadpool_postgres::Pool;
use tokio::runtime::Handle;

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
    /// probe runs, on `handle`, against `pool`).
    pub(crate) fn admit(
        self: &Arc<Self>,
        handle: &Handle,
        pool: &Pool,
        call_timeout: Duration,
    ) -> Result<(), QueryError> {
        match self.since() {
            None => Ok(()),
            Some(since) => {
                self.probe(handle, pool, call_timeout);
                Err(QueryError::Unresponsive {
                    for_: since.elapsed(),
                })
            }
        }
    }

    /// Notes how a call ended: a timeout marks the database unresponsive and starts a probe.
    pub(crate) fn note<T>(
        self: &Arc<Self>,
        result: &Result<T, QueryError>,
        handle: &Handle,
        pool: &Pool,
        call_timeout: Duration,
    ) {
        if let Err(QueryError::Timeout(_)) = result {
            let mut since = self
                .unresponsive_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if since.is_none() {
                *since = Some(Instant::now());
                tracing::warn!(
                    ?call_timeout,
                    "the database did not answer a call in time; calls to it fail at once until \
                     it answers a probe"
                );
            }
            drop(since);
            self.probe(handle, pool, call_timeout);
        }
    }

    /// Starts the probe unless one runs: `SELECT 1` every [`PROBE_INTERVAL`] until the database
    /// answers, then clears the mark.
    fn probe(self: &Arc<Self>, handle: &Handle, pool: &Pool, call_timeout: Duration) {
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let health = Arc::clone(self);
        let pool = pool.clone();
        handle.spawn(async move {
            // Clears `probing` however the probe ends, its runtime shutting down included, so
            // that the next refused call starts another.
            let _probing = Probing(Arc::clone(&health));
            loop {
                tokio::time::sleep(PROBE_INTERVAL).await;
                let answered = tokio::time::timeout(call_timeout, async {
                    let client = pool.get().await.ok()?;
                    client.simple_query("SELECT 1").await.ok()
                })
                .await;
                if let Ok(Some(_)) = answered {
                    let mut since = health
                        .unresponsive_since
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    if let Some(since) = since.take() {
                        tracing::info!(
                            after = ?since.elapsed(),
                            "the database answers again"
                        );
                    }
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

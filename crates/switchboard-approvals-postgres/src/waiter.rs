//! Waiting on a key another node runs: the [`Waiter`] of a [`Claim::Running`] the database
//! gave, woken by `LISTEN/NOTIFY` and, as a fallback, by re-reading the key's row every
//! [`POLL_INTERVAL`].
//!
//! Racers within one store value wait on each other through its `InFlight` table, as the
//! SQLite store's do. A claim that finds the key running under another store value (another
//! node, or another store value on this one) whose node is alive gets a waiter from here. It
//! runs as a task on the store's runtime (so it can be awaited from any executor) and resolves:
//!
//! - with the first result, once the key's row is `done` (the completing statement sends
//!   `pg_notify('approvals_idempotency', <key digest>)`, which wakes it at once);
//! - with `None` (claim again) once the claim it waits on is gone: released (the releasing
//!   statement notifies too), claimed anew by someone else, or past its expiry (the claim time
//!   plus the retention: the key is new again, exactly as the SQLite store's contract says);
//! - with the in-doubt answer (`outcome_unknown`) when the claiming node dies while it waits:
//!   its liveness lock (see `liveness`) is free, so nobody will finish the run and nobody
//!   knows whether the change was made. That is what a claim made after the crash answers at
//!   once, and what the SQLite store answers for every claim of another process;
//! - with `idempotency_store_unavailable` when the database fails while it waits.
//!
//! A waiter whose owner is alive but slow keeps waiting, up to the claim's expiry: the run may
//! still finish, and running it a second time is what idempotency forbids.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;
use switchboard_approvals::{Fingerprint, IdempotencyScope, StoredOutcome, Waiter};
use switchboard_postgres::{Listener, QueryError};
use tokio::task::JoinHandle;

use crate::{
    database::Shared,
    idempotency_rows::{self, KEY_COLUMNS, KeyRow},
    liveness::alive_expression,
};

/// The channel a key's completion and release are notified on; the payload is the hex digest
/// (`switchboard_core::digest_json`) of the canonical JSON `[org, key]`.
pub const IDEMPOTENCY_CHANNEL: &str = "approvals_idempotency";

/// The channel a proposal's decision, expiry or recorded outcome is notified on; the payload
/// is the proposal's id.
pub const DECISIONS_CHANNEL: &str = "approvals_decisions";

/// Every channel the store listens on.
pub(crate) const CHANNELS: &[&str] = &[IDEMPOTENCY_CHANNEL, DECISIONS_CHANNEL];

/// How often a waiter re-reads what it waits for when no notification woke it: the longest a
/// lost notification (a listening connection that was down, a subscriber that fell behind)
/// delays a waiter, and how soon a waiter notices that the node it waits on died. Short
/// enough to go unnoticed beside a tool's run, long enough that a thousand waiters cost four
/// thousand indexed reads a second at most.
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// The claim a waiter waits on: the key, what it was claimed for, and by whom, when.
pub(crate) struct Awaited {
    pub(crate) scope: IdempotencyScope,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) owner: String,
    pub(crate) claimed_at: Timestamp,
}

/// The waiter's task, aborted when the waiter is dropped unresolved.
struct Task(JoinHandle<Option<Arc<StoredOutcome>>>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A waiter on a key another store value runs.
pub(crate) fn wait_elsewhere(shared: &Arc<Shared>, awaited: Awaited) -> Waiter {
    let handle = shared
        .database
        .handle()
        .spawn(wait(Arc::clone(shared), awaited));
    let mut task = Task(handle);
    // A task that ended without an answer (cancelled with the store) says: claim again.
    Waiter::new(async move { (&mut task.0).await.unwrap_or(None) })
}

/// The key's row and, while it is running, whether its node is alive.
pub(crate) fn read_sql() -> String {
    format!(
        "SELECT {KEY_COLUMNS}, CASE WHEN k.state = 'running' THEN {alive} ELSE false END \
         FROM approvals_idempotency_keys k WHERE k.org_id = $1 AND k.idempotency_key = $2",
        alive = alive_expression("k.owner_lock"),
    )
}

async fn read(
    shared: &Shared,
    scope: &IdempotencyScope,
) -> Result<Option<(KeyRow, bool)>, QueryError> {
    let (org, key) = (scope.org_id.to_string(), scope.key.to_string());
    shared
        .database
        .run(move |client| async move {
            let statement = client.prepare_cached(&read_sql()).await?;
            let Some(row) = client.query_opt(&statement, &[&org, &key]).await? else {
                return Ok(None);
            };
            let alive: bool = row.try_get(9)?;
            Ok(KeyRow::read(&row, 0)?.map(|key_row| (key_row, alive)))
        })
        .await
}

async fn wait(shared: Arc<Shared>, awaited: Awaited) -> Option<Arc<StoredOutcome>> {
    let payload = idempotency_rows::key_payload(&awaited.scope);
    let mut subscription = shared.listener().subscribe();
    loop {
        // Subscribed before reading: a completion between the read and the wait is heard.
        let (row, alive) = match read(&shared, &awaited.scope).await {
            Ok(Some(found)) => found,
            // Released: nothing ran, claim again.
            Ok(None) => return None,
            Err(error) => {
                shared.log_failure(
                    &format!("waiting on idempotency key {}", awaited.scope.key),
                    &error,
                );
                return Some(idempotency_rows::unavailable(
                    &awaited.scope,
                    &awaited.fingerprint.tool,
                    shared.target(),
                    &error,
                ));
            }
        };
        if row.expires_at <= Timestamp::now() || !row.matches(&awaited.fingerprint) {
            // Expired (the key is new again) or taken for something else: claim again.
            return None;
        }
        if row.done {
            return Some(idempotency_rows::replay(
                &awaited.scope,
                &row,
                shared.target(),
            ));
        }
        if row.owner != awaited.owner || row.claimed_at != awaited.claimed_at {
            // Released and claimed anew meanwhile: claim again, to wait on the new claim.
            return None;
        }
        if !alive {
            tracing::info!(
                key = %awaited.scope.key,
                "the node running an idempotency key is gone; the key is in doubt"
            );
            return Some(idempotency_rows::in_doubt(&awaited.scope, &row));
        }
        Listener::wait(&mut subscription, POLL_INTERVAL, |channel, heard| {
            channel == IDEMPOTENCY_CHANNEL && heard == payload
        })
        .await;
    }
}

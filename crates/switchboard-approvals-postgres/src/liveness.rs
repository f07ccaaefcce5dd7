//! Whether the node that claimed an idempotency key is still alive: a session advisory lock
//! each open [`ApprovalsDatabase`](crate::ApprovalsDatabase) holds for as long as it lives.
//!
//! A key claimed on another node and not finished is either still running there, or its node
//! died mid-run and nobody knows whether the change was made. The first is worth waiting
//! for; the second must be answered in doubt at once, as the SQLite store answers every claim
//! of another process. PostgreSQL tells them apart without any clock: each node takes
//! `pg_try_advisory_lock(LOCK_CLASS, id)` on a connection of its own and keeps it, every key it
//! claims records the `id` in `owner_lock`, and the server releases the lock when that
//! connection ends. A waiter reads `pg_locks`: lock held, the owner is alive; lock free, it is
//! gone. The server notices at once when the node's process exits or is killed (its socket
//! closes); when the node's host vanishes from the network, only once the server's TCP
//! keepalive gives up (`tcp_keepalives_idle` and friends), and until then waiters wait.
//!
//! The connection is taken from the pool once and detached from it (`Object::take`: the pool
//! opens another in its place when it needs one, and this one is closed, never returned to the
//! pool with the lock still held). When it fails, the task takes a new one and the same lock
//! again; meanwhile this node's running keys look abandoned to the others, who answer them in
//! doubt: the safe side, never a second run. Ids are random positive 31-bit numbers, taken only
//! if no live session holds them, so two live nodes never share one.

use std::{
    sync::{
        Weak,
        atomic::{AtomicI32, Ordering},
        mpsc::SyncSender,
    },
    time::Duration,
};

use switchboard_postgres::{Client, Database, QueryError, tokio_postgres};

use crate::database::Shared;

/// The first key of every advisory lock this store takes ("SBAP"); the second is the node's
/// id. The two-key form never collides with single-key advisory locks (the schema lock).
pub(crate) const LOCK_CLASS: i32 = 0x5342_4150;

/// How often the holding connection is checked.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// How long the holder waits before trying again when it cannot get a connection.
const RETRY_DELAY: Duration = Duration::from_millis(500);

/// The SQL expression that is true when the node whose lock id is `column` is alive.
pub(crate) fn alive_expression(column: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND classid = {LOCK_CLASS}::oid AND objid = {column}::oid AND objsubid = 2)"
    )
}

/// This node's lock id, recorded in `owner_lock` of the keys it claims.
#[derive(Debug)]
pub(crate) struct Liveness {
    id: AtomicI32,
}

impl Liveness {
    /// A lock id not taken yet: [`start`] takes it.
    pub(crate) fn new() -> Self {
        Self {
            id: AtomicI32::new(random_id()),
        }
    }

    /// The id recorded in `owner_lock` of the keys this node claims.
    pub(crate) fn id(&self) -> i32 {
        self.id.load(Ordering::Relaxed)
    }
}

/// Starts holding the lock of `shared` on its runtime, and waits up to `timeout` for the
/// first acquisition. Not holding it yet only makes this node's claims look abandoned to other
/// nodes (answered in doubt), so a slow start is logged, not refused.
pub(crate) fn start(shared: &std::sync::Arc<Shared>, timeout: Duration) {
    let (taken, first) = std::sync::mpsc::sync_channel(1);
    shared
        .database
        .handle()
        .spawn(hold(std::sync::Arc::downgrade(shared), taken));
    if first.recv_timeout(timeout).is_err() {
        tracing::warn!(
            database = %shared.database.target(),
            "the approvals store has not taken its liveness lock yet; until it does, other \
             nodes answer the keys it runs in doubt"
        );
    }
}

fn random_id() -> i32 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    // A positive 31-bit number: 0 is never used.
    (i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) & i32::MAX).max(1)
}

/// Takes a pooled connection and detaches it from the pool.
async fn dedicated_connection(database: &Database) -> Result<Client, QueryError> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    database
        .run(move |client| async move {
            let _ = sender.send(client);
            Ok(())
        })
        .await?;
    receiver.await.map_err(|_| QueryError::Closed)
}

/// Holds the lock for as long as the store lives, taking it again after a failure.
async fn hold(shared: Weak<Shared>, taken: SyncSender<()>) {
    loop {
        let connection = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let database = shared.database.clone();
            drop(shared);
            dedicated_connection(&database).await
        };
        match connection {
            Ok(connection) => {
                let client = Client::take(connection);
                if take_lock(&client, &shared).await {
                    let _ = taken.try_send(());
                    while !client.is_closed() {
                        tokio::time::sleep(CHECK_INTERVAL).await;
                        if shared.strong_count() == 0 {
                            return;
                        }
                        if client.simple_query("").await.is_err() {
                            break;
                        }
                    }
                    tracing::warn!(
                        "the approvals store lost its liveness lock's connection; taking it again"
                    );
                }
            }
            Err(error) => {
                tracing::debug!(%error, "no connection for the approvals liveness lock yet");
            }
        }
        tokio::time::sleep(RETRY_DELAY).await;
    }
}

/// Takes the lock on `client`: the node's id if free, else a new random id.
async fn take_lock(client: &tokio_postgres::Client, shared: &Weak<Shared>) -> bool {
    for _ in 0..16 {
        let Some(shared) = shared.upgrade() else {
            return false;
        };
        let id = shared.liveness.id();
        let taken = client
            .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&LOCK_CLASS, &id])
            .await;
        match taken {
            Ok(row) if row.get::<_, bool>(0) => return true,
            Ok(_) => {
                // Another live session holds it: this node's earlier claims (if any) now look
                // abandoned, which answers them in doubt.
                shared.liveness.id.store(random_id(), Ordering::Relaxed);
            }
            Err(error) => {
                tracing::debug!(%error, "taking the approvals liveness lock failed");
                return false;
            }
        }
    }
    false
}

//! [`SqliteIdempotencyStore`]: the [`IdempotencyStore`] trait on the `idempotency_keys` table,
//! with the in-flight part kept in memory.
//!
//! Two halves, because waiting is a matter of one process and results are a matter of the
//! file:
//!
//! - **In memory** (`local`): the keys this store value claimed and is running, with the
//!   `watch` channel their racers wait on (created when the first racer arrives, as in the
//!   in-memory store), and the results it completed whose typed copy it keeps (a typed copy is
//!   a Rust value and cannot be written). A claim looks here first.
//! - **In the file**: every claim is written (`state = 'running'`, this store's `owner` id)
//!   *before* the caller runs the tool, and completed with the first result. So after a
//!   restart, or in another process, a retry finds the result and replays it, and a claim
//!   nobody completed (its process died mid-run, or is still running) is never run again: it
//!   is answered in doubt (`outcome_unknown`, see `idempotency_rows`) until its retention has
//!   passed.
//!
//! A new key costs a read and two commits on the call path: the claim (one `INSERT … ON
//! CONFLICT DO UPDATE … WHERE expired`, atomic across processes) and the result. A replay
//! reads one row. A release deletes the claim. Both locks (`local`, then the connection) are held for the whole
//! of each operation, which makes `claim` atomic per key within the process; SQLite's write
//! lock makes it atomic across processes.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};
use switchboard_approvals::{
    Claim, Fingerprint, IdempotencyScope, IdempotencyStore, Retention, StoredOutcome, Waiter,
};
use switchboard_sqlite::timestamp_to_sql;
use tokio::sync::watch;

use crate::{
    database::{ApprovalsDatabase, Database, SqliteOptions},
    idempotency_rows::{self, KEY_COLUMNS, KeyRow},
};

/// What a waiter learns.
#[derive(Clone)]
enum Flight {
    Running,
    Done(Arc<StoredOutcome>),
    Released,
}

/// A key this store value knows about without reading the file.
enum Local {
    /// Claimed here, running; the sender exists once someone waits.
    Running {
        fingerprint: Fingerprint,
        sender: Option<watch::Sender<Flight>>,
    },
    /// Completed here with a typed output (or a result the file failed to take).
    Done {
        fingerprint: Fingerprint,
        outcome: Arc<StoredOutcome>,
        expires_at: Timestamp,
    },
}

/// Keys and first results in a SQLite database: results survive restarts and are shared by
/// every process that opens the file; racers within this process wait for the first caller.
pub struct SqliteIdempotencyStore {
    database: Arc<Database>,
    /// This store value's id in the `owner` column of the keys it claims.
    owner: String,
    retention: Retention,
    local: Mutex<HashMap<IdempotencyScope, Local>>,
}

impl std::fmt::Debug for SqliteIdempotencyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteIdempotencyStore")
            .field("path", &self.database.path())
            .field("owner", &self.owner)
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

impl SqliteIdempotencyStore {
    pub(crate) fn new(database: Arc<Database>, retention: Duration) -> Self {
        Self {
            database,
            owner: uuid::Uuid::new_v4().simple().to_string(),
            retention: Retention::new(retention),
            local: Mutex::new(HashMap::new()),
        }
    }

    /// Opens the approvals database at `path` (see [`ApprovalsDatabase::open`]) for
    /// idempotency keys only, keeping each first result for `retention`.
    pub fn open(
        path: impl AsRef<std::path::Path>,
        retention: Duration,
    ) -> Result<Self, switchboard_sqlite::OpenError> {
        Ok(
            ApprovalsDatabase::open_with(path, SqliteOptions::default())?
                .idempotency_store(retention),
        )
    }

    /// How long a first result is kept after it completed.
    pub fn retention(&self) -> Duration {
        self.retention.duration()
    }

    fn local(&self) -> MutexGuard<'_, HashMap<IdempotencyScope, Local>> {
        // Every change under this lock is one insertion or removal: a panic cannot leave the
        // map half-changed, so a poisoned lock is taken as is.
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn expiry(&self, from: Timestamp) -> Timestamp {
        self.retention.expiry(from)
    }

    fn maybe_sweep(&self, now: Timestamp) {
        if self.retention.sweep_due(now) {
            self.sweep(now);
        }
    }

    /// The claim against the file, for a key this store value is not running: a key that is
    /// there and not expired is answered from its row (a read); otherwise one `INSERT … ON
    /// CONFLICT DO UPDATE … WHERE expired` claims it, atomically across processes.
    fn claim_in_file(
        &self,
        connection: &Connection,
        scope: &IdempotencyScope,
        fingerprint: &Fingerprint,
        now: Timestamp,
    ) -> rusqlite::Result<Claim> {
        if let Some(claim) = self.answer_from_row(connection, scope, fingerprint, now)? {
            return Ok(claim);
        }
        // Absent or expired. Another process may claim it between the read and this insert:
        // then nothing changes here and its row answers. A row that vanishes in between
        // (another process swept it) is claimed on the next turn.
        for _ in 0..3 {
            let claimed = connection
                .prepare_cached(
                    "INSERT INTO idempotency_keys (org_id, idempotency_key, tool, params_digest, \
                     state, owner, claimed_at_ns, expires_at_ns) \
                     VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7) \
                     ON CONFLICT (org_id, idempotency_key) DO UPDATE SET \
                     tool = excluded.tool, params_digest = excluded.params_digest, \
                     state = 'running', owner = excluded.owner, \
                     claimed_at_ns = excluded.claimed_at_ns, \
                     expires_at_ns = excluded.expires_at_ns, completed_at_ns = NULL, \
                     action_id = NULL, outcome = NULL, output = NULL, error = NULL \
                     WHERE idempotency_keys.expires_at_ns <= excluded.claimed_at_ns",
                )?
                .execute(params![
                    scope.org_id.as_str(),
                    scope.key.as_str(),
                    &*fingerprint.tool,
                    fingerprint.params.0,
                    self.owner,
                    timestamp_to_sql(now),
                    timestamp_to_sql(self.expiry(now)),
                ])?;
            if claimed == 1 {
                return Ok(Claim::Run);
            }
            if let Some(claim) = self.answer_from_row(connection, scope, fingerprint, now)? {
                return Ok(claim);
            }
        }
        Err(rusqlite::Error::QueryReturnedNoRows)
    }

    /// The answer a key's row gives, if it has one that has not expired at `now`: a conflict,
    /// the first result, or the doubt of a claim nobody completed.
    fn answer_from_row(
        &self,
        connection: &Connection,
        scope: &IdempotencyScope,
        fingerprint: &Fingerprint,
        now: Timestamp,
    ) -> rusqlite::Result<Option<Claim>> {
        let row = connection
            .prepare_cached(&format!(
                "SELECT {KEY_COLUMNS} FROM idempotency_keys \
                 WHERE org_id = ?1 AND idempotency_key = ?2"
            ))?
            .query_row(
                params![scope.org_id.as_str(), scope.key.as_str()],
                KeyRow::read,
            )
            .optional()?;
        let Some(row) = row.filter(|row| row.expires_at > now) else {
            return Ok(None);
        };
        if !row.matches(fingerprint) {
            return Ok(Some(Claim::Conflict));
        }
        if !row.done {
            return Ok(Some(Claim::Done(idempotency_rows::in_doubt(scope, &row))));
        }
        Ok(Some(Claim::Done(match row.outcome() {
            Ok(outcome) => Arc::new(outcome),
            Err(problem) => {
                tracing::error!(
                    path = %self.database.path().display(),
                    key = %scope.key,
                    %problem,
                    "a stored first result cannot be read back"
                );
                idempotency_rows::unreadable(scope, &row, self.database.path(), &problem)
            }
        })))
    }
}

fn wait_on(receiver: watch::Receiver<Flight>) -> Waiter {
    Waiter::new(async move {
        let mut receiver = receiver;
        match receiver
            .wait_for(|flight| !matches!(flight, Flight::Running))
            .await
        {
            Ok(flight) => match &*flight {
                Flight::Done(outcome) => Some(Arc::clone(outcome)),
                Flight::Running | Flight::Released => None,
            },
            // The entry went away without a result: claim again.
            Err(_) => None,
        }
    })
}

fn same(stored: &Fingerprint, asked: &Fingerprint) -> bool {
    (Arc::ptr_eq(&stored.tool, &asked.tool) || stored.tool == asked.tool)
        && stored.params == asked.params
}

impl IdempotencyStore for SqliteIdempotencyStore {
    fn claim(&self, scope: &IdempotencyScope, fingerprint: &Fingerprint, now: Timestamp) -> Claim {
        self.maybe_sweep(now);
        let mut local = self.local();
        match local.get_mut(scope) {
            Some(Local::Running {
                fingerprint: stored,
                sender,
            }) => {
                if !same(stored, fingerprint) {
                    return Claim::Conflict;
                }
                let sender = sender.get_or_insert_with(|| watch::Sender::new(Flight::Running));
                return Claim::Running(wait_on(sender.subscribe()));
            }
            Some(Local::Done {
                fingerprint: stored,
                outcome,
                expires_at,
            }) if *expires_at > now => {
                if !same(stored, fingerprint) {
                    return Claim::Conflict;
                }
                return Claim::Done(Arc::clone(outcome));
            }
            Some(Local::Done { .. }) => {
                local.remove(scope);
            }
            None => {}
        }
        let claim = {
            let connection = self.database.connection();
            self.claim_in_file(&connection, scope, fingerprint, now)
        };
        match claim {
            Ok(Claim::Run) => {
                local.insert(
                    scope.clone(),
                    Local::Running {
                        fingerprint: fingerprint.clone(),
                        sender: None,
                    },
                );
                Claim::Run
            }
            Ok(other) => other,
            Err(error) => {
                self.database
                    .log_failure(&format!("claiming idempotency key {}", scope.key), &error);
                Claim::Done(idempotency_rows::unavailable(
                    scope,
                    fingerprint,
                    self.database.path(),
                    &error,
                ))
            }
        }
    }

    fn complete(&self, scope: &IdempotencyScope, outcome: Arc<StoredOutcome>) {
        let completed_at = Timestamp::now();
        let expires_at = self.expiry(completed_at);
        let mut local = self.local();
        let (fingerprint, sender) = match local.remove(scope) {
            Some(Local::Running {
                fingerprint,
                sender,
            }) => (fingerprint, sender),
            // Completed before: the first result stands.
            Some(done @ Local::Done { .. }) => {
                local.insert(scope.clone(), done);
                return;
            }
            // Not claimed here: nothing to complete.
            None => return,
        };
        let (outcome_name, output, error) = idempotency_rows::outcome_columns(&outcome);
        let written = self
            .database
            .connection()
            .prepare_cached(
                "UPDATE idempotency_keys SET state = 'done', completed_at_ns = ?4, \
                 expires_at_ns = ?5, action_id = ?6, outcome = ?7, output = ?8, error = ?9 \
                 WHERE org_id = ?1 AND idempotency_key = ?2 AND owner = ?3 AND state = 'running'",
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    scope.org_id.as_str(),
                    scope.key.as_str(),
                    self.owner,
                    timestamp_to_sql(completed_at),
                    timestamp_to_sql(expires_at),
                    outcome.action_id.as_str(),
                    outcome_name,
                    output,
                    error,
                ])
            });
        let persisted = match written {
            Ok(1) => true,
            Ok(_) => {
                tracing::warn!(
                    path = %self.database.path().display(),
                    key = %scope.key,
                    "an idempotency key's claim was gone when its result came (taken over after \
                     its retention?); the result is kept in memory only"
                );
                false
            }
            Err(error) => {
                self.database.log_failure(
                    &format!("storing the result of idempotency key {}", scope.key),
                    &error,
                );
                false
            }
        };
        // This process keeps what it cannot read back from the file: the typed copy, or the
        // whole result if the file did not take it (a restart then finds the key in doubt,
        // never free to run again).
        if outcome.typed.is_some() || !persisted {
            local.insert(
                scope.clone(),
                Local::Done {
                    fingerprint,
                    outcome: Arc::clone(&outcome),
                    expires_at,
                },
            );
        }
        drop(local);
        if let Some(sender) = sender {
            sender.send_replace(Flight::Done(outcome));
        }
    }

    fn release(&self, scope: &IdempotencyScope) {
        let mut local = self.local();
        if !matches!(local.get(scope), Some(Local::Running { .. })) {
            return;
        }
        let removed = local.remove(scope);
        let deleted = self
            .database
            .connection()
            .prepare_cached(
                "DELETE FROM idempotency_keys WHERE org_id = ?1 AND idempotency_key = ?2 \
                 AND owner = ?3 AND state = 'running'",
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    scope.org_id.as_str(),
                    scope.key.as_str(),
                    self.owner
                ])
            });
        if let Err(error) = deleted {
            // The claim stays in the file: other processes (and this one after a restart) will
            // find it in doubt until its retention passes. Never a second run.
            self.database
                .log_failure(&format!("releasing idempotency key {}", scope.key), &error);
        }
        drop(local);
        if let Some(Local::Running {
            sender: Some(sender),
            ..
        }) = removed
        {
            sender.send_replace(Flight::Released);
        }
    }

    fn sweep(&self, now: Timestamp) -> usize {
        self.local().retain(|_, entry| match entry {
            Local::Done { expires_at, .. } => *expires_at > now,
            Local::Running { .. } => true,
        });
        // The claims this store value is running are never swept; everything else past its
        // expiry is, whoever wrote it.
        let deleted = self
            .database
            .connection()
            .prepare_cached(
                "DELETE FROM idempotency_keys WHERE expires_at_ns <= ?1 \
                 AND NOT (state = 'running' AND owner = ?2)",
            )
            .and_then(|mut statement| {
                statement.execute(params![timestamp_to_sql(now), self.owner])
            });
        deleted.unwrap_or_else(|error| {
            self.database
                .log_failure("sweeping expired idempotency keys", &error);
            0
        })
    }

    fn len(&self) -> usize {
        let counted: rusqlite::Result<i64> = self.database.connection().query_row(
            "SELECT count(*) FROM idempotency_keys",
            [],
            |row| row.get(0),
        );
        match counted {
            Ok(count) => usize::try_from(count).unwrap_or(0),
            Err(error) => {
                self.database
                    .log_failure("counting idempotency keys", &error);
                0
            }
        }
    }
}

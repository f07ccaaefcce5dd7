//! [`SqliteIdempotencyStore`]: the [`IdempotencyStore`] trait on the `idempotency_keys` table,
//! with the in-flight part kept in memory.
//!
//! Two halves, because waiting is a matter of one process and results are a matter of the
//! file:
//!
//! - **In memory** (an [`InFlight`] table, shared with the in-memory store): the keys this
//!   store value claimed and is running, with the racers waiting on them, and the results it
//!   completed whose typed copy it keeps (a typed copy is a Rust value and cannot be written).
//!   A claim looks here first.
//! - **In the file**: every claim is written (`state = 'running'`, this store's `owner` id)
//!   *before* the caller runs the tool, and completed with the first result. So after a
//!   restart, or in another process, a retry finds the result and replays it, and a claim
//!   nobody completed (its process died mid-run, or is still running) is never run again: it
//!   is answered in doubt (`outcome_unknown`, see `idempotency_rows`) until its retention has
//!   passed.
//!
//! A new key costs a read and two commits on the call path: the claim (one `INSERT … ON
//! CONFLICT DO UPDATE … WHERE expired`, atomic across processes) and the result. A replay
//! reads one row. A release deletes the claim. The key's entry in the table is locked for the
//! whole of each operation, which makes `claim` atomic per key within the process; SQLite's
//! write lock makes it atomic across processes.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};
use switchboard_approvals::{
    Claim, Fingerprint, IdempotencyScope, IdempotencyStore, InFlight, Retention, StoredOutcome,
};
use switchboard_sqlite::timestamp_to_sql;

use crate::{
    database::{ApprovalsDatabase, Database, SqliteOptions},
    idempotency_rows::{self, KEY_COLUMNS, KeyRow},
};

/// Keys and first results in a SQLite database: results survive restarts and are shared by
/// every process that opens the file; racers within this process wait for the first caller.
pub struct SqliteIdempotencyStore {
    database: Arc<Database>,
    /// This store value's id in the `owner` column of the keys it claims.
    owner: String,
    retention: Retention,
    in_flight: InFlight,
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
            owner: uuid::Uuid::now_v7().simple().to_string(),
            retention: Retention::new(retention),
            in_flight: InFlight::new(),
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

    /// Writes the first result of a key this store value claimed; returns whether the file
    /// took it.
    fn write_result(
        &self,
        scope: &IdempotencyScope,
        outcome: &StoredOutcome,
        completed_at: Timestamp,
        expires_at: Timestamp,
    ) -> bool {
        let (outcome_name, output, error) = idempotency_rows::outcome_columns(outcome);
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
        match written {
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
        }
    }

    /// Deletes the claim of a key this store value is giving up.
    fn delete_claim(&self, scope: &IdempotencyScope) {
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
    }
}

impl IdempotencyStore for SqliteIdempotencyStore {
    fn claim(&self, scope: &IdempotencyScope, fingerprint: &Fingerprint, now: Timestamp) -> Claim {
        self.maybe_sweep(now);
        self.in_flight.claim(scope, fingerprint, now, || {
            let claim = {
                let connection = self.database.connection();
                self.claim_in_file(&connection, scope, fingerprint, now)
            };
            claim.unwrap_or_else(|error| {
                self.database
                    .log_failure(&format!("claiming idempotency key {}", scope.key), &error);
                Claim::Done(idempotency_rows::unavailable(
                    scope,
                    fingerprint,
                    self.database.path(),
                    &error,
                ))
            })
        })
    }

    fn complete(&self, scope: &IdempotencyScope, outcome: Arc<StoredOutcome>) {
        let completed_at = Timestamp::now();
        let expires_at = self.expiry(completed_at);
        let kept = Arc::clone(&outcome);
        self.in_flight.complete(scope, outcome, |_claimed_at| {
            let persisted = self.write_result(scope, &kept, completed_at, expires_at);
            // This process keeps what it cannot read back from the file: the typed copy, or
            // the whole result if the file did not take it (a restart then finds the key in
            // doubt, never free to run again).
            (kept.typed.is_some() || !persisted).then_some(expires_at)
        });
    }

    fn release(&self, scope: &IdempotencyScope) {
        self.in_flight.release(scope, || self.delete_claim(scope));
    }

    fn sweep(&self, now: Timestamp) -> usize {
        self.in_flight.sweep(now);
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

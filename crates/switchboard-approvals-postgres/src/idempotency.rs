//! [`PostgresIdempotencyStore`]: the [`IdempotencyStore`] trait on the
//! `approvals_idempotency_keys` table, shared by every node, with the in-flight part of this
//! store value kept in memory.
//!
//! - **In memory** (an [`InFlight`] table, shared with the in-memory and SQLite stores): the
//!   keys this store value claimed and is running, with its own racers waiting on them, and
//!   the results it completed whose typed copy it keeps. A claim looks here first.
//! - **In the database**: the claim is one statement, `INSERT … ON CONFLICT (org_id,
//!   idempotency_key) DO UPDATE … WHERE expired`, atomic across nodes: exactly one claimant
//!   gets the row, written (`state = 'running'`, this store's `owner`, its node's
//!   `owner_lock`) *before* the tool runs. The same statement reads the key's row when it
//!   loses, so a replay or a conflict is one round trip too. The first result is written with
//!   the key's completion in one `UPDATE`, which also sends `pg_notify`.
//!
//! What a claim of a key running elsewhere answers depends on whether its node is alive (its
//! liveness lock is held, see `liveness`): alive, a [`Claim::Running`] waiter that resolves with
//! the first result (see `waiter`); gone, the in-doubt answer (`outcome_unknown`), never a
//! second run, until the claim's retention has passed and the key is new again. A key whose
//! row names this store value but that it is not running is claimed again: this store value
//! never ran the tool under it (its claim's answer was lost, or its release was not written),
//! so a retry once the database answers runs the tool, rather than wait out the retention.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;
use switchboard_approvals::{
    Claim, Fingerprint, IdempotencyScope, IdempotencyStore, InFlight, Retention, StoredOutcome,
};
use switchboard_postgres::{
    OpenError, QueryError,
    tokio_postgres::{Transaction, types::ToSql},
};

use crate::{
    codec::timestamp_to_sql,
    database::{ApprovalsDatabase, Shared},
    idempotency_rows::{self, KEY_COLUMNS, KeyRow},
    liveness::alive_expression,
    waiter::{self, Awaited, IDEMPOTENCY_CHANNEL},
};

/// Keys and first results in PostgreSQL: a key runs once across every node on the database,
/// every retry on any node gets the first result, and racers on another node wait for it.
pub struct PostgresIdempotencyStore {
    shared: Arc<Shared>,
    /// This store value's id in the `owner` column of the keys it claims.
    owner: String,
    retention: Retention,
    in_flight: InFlight,
}

impl std::fmt::Debug for PostgresIdempotencyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresIdempotencyStore")
            .field("database", self.shared.target())
            .field("owner", &self.owner)
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

/// A claim's completion: the key's first result, its expiry, and a `pg_notify` to its waiters,
/// in one statement. A key already completed with the same action (by
/// [`PostgresIdempotencyStore::complete_in`], in the tool's own transaction) is written again
/// with the same result.
const COMPLETE: &str = "WITH done AS (UPDATE approvals_idempotency_keys SET state = 'done', \
     completed_at_ns = $4, expires_at_ns = $5, action_id = $6, outcome = $7, output = $8, \
     error = $9 \
     WHERE org_id = $1 AND idempotency_key = $2 AND owner = $3 \
     AND (state = 'running' OR (state = 'done' AND action_id = $6)) RETURNING 1) \
     SELECT pg_notify('approvals_idempotency', $10) FROM done";

/// The parameters of [`COMPLETE`].
struct Completion {
    org: String,
    key: String,
    owner: String,
    completed_at: i64,
    expires_at: i64,
    action_id: String,
    outcome_name: String,
    output: Option<String>,
    error: Option<String>,
    payload: String,
}

impl Completion {
    fn params(&self) -> [&(dyn ToSql + Sync); 10] {
        [
            &self.org,
            &self.key,
            &self.owner,
            &self.completed_at,
            &self.expires_at,
            &self.action_id,
            &self.outcome_name,
            &self.output,
            &self.error,
            &self.payload,
        ]
    }
}

/// What one claim statement found: whether it claimed the key, else the key's row as its
/// snapshot saw it, with whether the row's node is alive.
type Found = (bool, Option<(KeyRow, bool)>);

impl PostgresIdempotencyStore {
    pub(crate) fn new(shared: Arc<Shared>, retention: Duration) -> Self {
        Self {
            shared,
            owner: uuid::Uuid::now_v7().simple().to_string(),
            retention: Retention::new(retention),
            in_flight: InFlight::new(),
        }
    }

    /// Opens the approvals tables at `url` (see [`ApprovalsDatabase::open`]) for idempotency
    /// keys only, keeping each first result for `retention`.
    pub fn open(url: &str, retention: Duration) -> Result<Self, OpenError> {
        Ok(ApprovalsDatabase::open(url)?.idempotency_store(retention))
    }

    /// How long a first result is kept after it completed.
    pub fn retention(&self) -> Duration {
        self.retention.duration()
    }

    fn maybe_sweep(&self, now: Timestamp) {
        if self.retention.sweep_due(now) {
            self.sweep(now);
        }
    }

    /// The claim statement: claims the key if it is absent or expired at `now`, else reads it.
    fn try_claim(
        &self,
        scope: &IdempotencyScope,
        fingerprint: &Fingerprint,
        now: Timestamp,
    ) -> Result<Found, QueryError> {
        let (org, key) = (scope.org_id.to_string(), scope.key.to_string());
        let (tool, digest) = (fingerprint.tool.to_string(), fingerprint.params.0.to_vec());
        let (owner, owner_lock) = (self.owner.clone(), self.shared.liveness.id());
        let (claimed_at, expires_at) = (
            timestamp_to_sql(now),
            timestamp_to_sql(self.retention.expiry(now)),
        );
        self.shared.database.call(move |client| async move {
            let statement = client
                .prepare_cached(&format!(
                    "WITH claimed AS (INSERT INTO approvals_idempotency_keys AS k \
                     (org_id, idempotency_key, tool, params_digest, state, owner, owner_lock, \
                     claimed_at_ns, expires_at_ns) \
                     VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8) \
                     ON CONFLICT (org_id, idempotency_key) DO UPDATE SET \
                     tool = excluded.tool, params_digest = excluded.params_digest, \
                     state = 'running', owner = excluded.owner, owner_lock = excluded.owner_lock, \
                     claimed_at_ns = excluded.claimed_at_ns, \
                     expires_at_ns = excluded.expires_at_ns, completed_at_ns = NULL, \
                     action_id = NULL, outcome = NULL, output = NULL, error = NULL \
                     WHERE k.expires_at_ns <= excluded.claimed_at_ns RETURNING 1) \
                     SELECT EXISTS (SELECT 1 FROM claimed), {KEY_COLUMNS}, \
                     CASE WHEN k.state = 'running' THEN {alive} END \
                     FROM (SELECT 1) AS one LEFT JOIN approvals_idempotency_keys k \
                     ON k.org_id = $1 AND k.idempotency_key = $2",
                    alive = alive_expression("k.owner_lock"),
                ))
                .await?;
            let row = client
                .query_one(
                    &statement,
                    &[
                        &org,
                        &key,
                        &tool,
                        &digest,
                        &owner,
                        &owner_lock,
                        &claimed_at,
                        &expires_at,
                    ],
                )
                .await?;
            let claimed: bool = row.try_get(0)?;
            let alive: Option<bool> = row.try_get(10)?;
            let found = KeyRow::read(&row, 1)?.map(|key_row| (key_row, alive.unwrap_or(false)));
            Ok((claimed, found))
        })
    }

    /// The key's row read afresh, with whether its node is alive.
    fn read_row(&self, scope: &IdempotencyScope) -> Result<Option<(KeyRow, bool)>, QueryError> {
        let (org, key) = (scope.org_id.to_string(), scope.key.to_string());
        self.shared.database.call(move |client| async move {
            let statement = client.prepare_cached(&waiter::read_sql()).await?;
            let Some(row) = client.query_opt(&statement, &[&org, &key]).await? else {
                return Ok(None);
            };
            let alive: bool = row.try_get(9)?;
            Ok(KeyRow::read(&row, 0)?.map(|key_row| (key_row, alive)))
        })
    }

    /// The claim against the database, for a key this store value is not running.
    fn claim_in_database(
        &self,
        scope: &IdempotencyScope,
        fingerprint: &Fingerprint,
        now: Timestamp,
    ) -> Result<Claim, QueryError> {
        // A row the statement's snapshot could not see (claimed by a transaction that
        // committed meanwhile) is read again; a row that vanishes in between (released or
        // swept) is claimed on the next turn.
        for _ in 0..3 {
            let (claimed, found) = self.try_claim(scope, fingerprint, now)?;
            if claimed {
                return Ok(Claim::Run);
            }
            if self.is_own_unrun_claim(found.as_ref(), fingerprint, now)
                && self.reclaim(scope, now)?
            {
                return Ok(Claim::Run);
            }
            if let Some(claim) = self.answer(found, scope, fingerprint, now) {
                return Ok(claim);
            }
            if let Some(claim) = self.answer(self.read_row(scope)?, scope, fingerprint, now) {
                return Ok(claim);
            }
        }
        Err(QueryError::Decode(format!(
            "idempotency key {} changed under three claims in a row",
            scope.key
        )))
    }

    /// Whether `found` is a claim this store value made and is not running (a claim it runs is
    /// in its in-flight table, which is asked before the database): its answer was lost (the
    /// statement committed, the reply did not arrive), or its release could not be written.
    /// Either way the registry never ran the tool under it, so the claim may be taken again.
    fn is_own_unrun_claim(
        &self,
        found: Option<&(KeyRow, bool)>,
        fingerprint: &Fingerprint,
        now: Timestamp,
    ) -> bool {
        found.is_some_and(|(row, _)| {
            !row.done && row.owner == self.owner && row.expires_at > now && row.matches(fingerprint)
        })
    }

    /// Takes this store value's own unrun claim of `scope` again, from `now`; `false` if the
    /// row changed meanwhile (completed, released, or taken over after its expiry).
    fn reclaim(&self, scope: &IdempotencyScope, now: Timestamp) -> Result<bool, QueryError> {
        let (org, key, owner) = (
            scope.org_id.to_string(),
            scope.key.to_string(),
            self.owner.clone(),
        );
        let (claimed_at, expires_at) = (
            timestamp_to_sql(now),
            timestamp_to_sql(self.retention.expiry(now)),
        );
        let updated = self.shared.database.call(move |client| async move {
            let statement = client
                .prepare_cached(
                    "UPDATE approvals_idempotency_keys SET claimed_at_ns = $4, expires_at_ns = $5 \
                     WHERE org_id = $1 AND idempotency_key = $2 AND owner = $3 \
                     AND state = 'running'",
                )
                .await?;
            Ok(client
                .execute(&statement, &[&org, &key, &owner, &claimed_at, &expires_at])
                .await?)
        })?;
        if updated == 1 {
            tracing::info!(
                key = %scope.key,
                "an idempotency key this node claimed but never ran is claimed again"
            );
        }
        Ok(updated == 1)
    }

    /// The answer a key's row gives, if it has one that has not expired at `now`.
    fn answer(
        &self,
        found: Option<(KeyRow, bool)>,
        scope: &IdempotencyScope,
        fingerprint: &Fingerprint,
        now: Timestamp,
    ) -> Option<Claim> {
        let (row, alive) = found.filter(|(row, _)| row.expires_at > now)?;
        if !row.matches(fingerprint) {
            return Some(Claim::Conflict);
        }
        if row.done {
            return Some(Claim::Done(idempotency_rows::replay(
                scope,
                &row,
                self.shared.target(),
            )));
        }
        // Running, and not in this store value's table (that is asked first): another store
        // value runs it, or nobody does any more (this one's own unrun claim is taken again
        // before this answer is asked for).
        if row.owner == self.owner || !alive {
            return Some(Claim::Done(idempotency_rows::in_doubt(scope, &row)));
        }
        Some(Claim::Running(waiter::wait_elsewhere(
            &self.shared,
            Awaited {
                scope: scope.clone(),
                fingerprint: fingerprint.clone(),
                owner: row.owner,
                claimed_at: row.claimed_at,
            },
        )))
    }

    /// Writes the first result of a key this store value claimed, completing it and notifying
    /// its waiters in one statement; returns whether the database took it.
    /// The completion's parameters, in the order of [`COMPLETE`].
    fn completion(
        &self,
        scope: &IdempotencyScope,
        outcome: &StoredOutcome,
        completed_at: Timestamp,
    ) -> Completion {
        let (outcome_name, output, error) = idempotency_rows::outcome_columns(outcome);
        Completion {
            org: scope.org_id.to_string(),
            key: scope.key.to_string(),
            owner: self.owner.clone(),
            completed_at: timestamp_to_sql(completed_at),
            expires_at: timestamp_to_sql(self.retention.expiry(completed_at)),
            action_id: outcome.action_id.to_string(),
            outcome_name,
            output,
            error,
            payload: idempotency_rows::key_payload(scope),
        }
    }

    /// Completes the claim of `scope`, which this store value holds, with `outcome`, inside
    /// `transaction`: the key's first result is kept if and only if the transaction commits.
    ///
    /// This is for a tool whose own data lives in the same database: it makes its change and
    /// completes its key in one transaction (the key and action are its
    /// [`ToolContext::action`](switchboard_core::ToolContext::action)), so no crash keeps the
    /// change without the result, which would let a retry run the change again. The registry
    /// still calls [`complete`](IdempotencyStore::complete) afterwards; for a key completed here
    /// with the same action that writes the same result again. Returns whether the claim was
    /// there to complete (`false`: it was taken over after its retention ran out).
    pub async fn complete_in(
        &self,
        transaction: &Transaction<'_>,
        scope: &IdempotencyScope,
        outcome: &StoredOutcome,
    ) -> Result<bool, QueryError> {
        let completion = self.completion(scope, outcome, Timestamp::now());
        let rows = transaction.query(COMPLETE, &completion.params()).await?;
        Ok(rows.len() == 1)
    }

    fn write_result(
        &self,
        scope: &IdempotencyScope,
        outcome: &StoredOutcome,
        completed_at: Timestamp,
    ) -> bool {
        let completion = self.completion(scope, outcome, completed_at);
        let written = self.shared.database.call(move |client| async move {
            let statement = client.prepare_cached(COMPLETE).await?;
            let rows = client.query(&statement, &completion.params()).await?;
            Ok(rows.len())
        });
        match written {
            Ok(1) => true,
            Ok(_) => {
                tracing::warn!(
                    database = %self.shared.target(),
                    key = %scope.key,
                    "an idempotency key's claim was gone when its result came (taken over after \
                     its retention?); the result is kept in memory only"
                );
                false
            }
            Err(error) => {
                self.shared.log_failure(
                    &format!("storing the result of idempotency key {}", scope.key),
                    &error,
                );
                false
            }
        }
    }

    /// Deletes the claim of a key this store value is giving up, notifying its waiters.
    fn delete_claim(&self, scope: &IdempotencyScope) {
        let (org, key, owner) = (
            scope.org_id.to_string(),
            scope.key.to_string(),
            self.owner.clone(),
        );
        let payload = idempotency_rows::key_payload(scope);
        let deleted = self.shared.database.call(move |client| async move {
            let statement = client
                .prepare_cached(&format!(
                    "WITH gone AS (DELETE FROM approvals_idempotency_keys \
                     WHERE org_id = $1 AND idempotency_key = $2 AND owner = $3 \
                     AND state = 'running' RETURNING 1) \
                     SELECT pg_notify('{IDEMPOTENCY_CHANNEL}', $4) FROM gone"
                ))
                .await?;
            client
                .query(&statement, &[&org, &key, &owner, &payload])
                .await?;
            Ok(())
        });
        if let Err(error) = deleted {
            // The claim stays: other nodes (and this one) find it in doubt until its retention
            // passes. Never a second run.
            self.shared
                .log_failure(&format!("releasing idempotency key {}", scope.key), &error);
        }
    }
}

impl IdempotencyStore for PostgresIdempotencyStore {
    fn claim(&self, scope: &IdempotencyScope, fingerprint: &Fingerprint, now: Timestamp) -> Claim {
        self.maybe_sweep(now);
        self.in_flight.claim(scope, fingerprint, now, || {
            self.claim_in_database(scope, fingerprint, now)
                .unwrap_or_else(|error| {
                    self.shared
                        .log_failure(&format!("claiming idempotency key {}", scope.key), &error);
                    Claim::Done(idempotency_rows::unavailable(
                        scope,
                        &fingerprint.tool,
                        self.shared.target(),
                        &error,
                    ))
                })
        })
    }

    fn complete(&self, scope: &IdempotencyScope, outcome: Arc<StoredOutcome>) {
        let completed_at = Timestamp::now();
        let expires_at = self.retention.expiry(completed_at);
        let kept = Arc::clone(&outcome);
        self.in_flight.complete(scope, outcome, |_claimed_at| {
            let persisted = self.write_result(scope, &kept, completed_at);
            // This store keeps what it cannot read back from the database: the typed copy, or
            // the whole result if the database did not take it (other nodes then find the key
            // in doubt, never free to run again).
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
        let (now, owner) = (timestamp_to_sql(now), self.owner.clone());
        let deleted = self.shared.database.call(move |client| async move {
            let statement = client
                .prepare_cached(
                    "DELETE FROM approvals_idempotency_keys WHERE expires_at_ns <= $1 \
                     AND NOT (state = 'running' AND owner = $2)",
                )
                .await?;
            Ok(client.execute(&statement, &[&now, &owner]).await?)
        });
        match deleted {
            Ok(count) => usize::try_from(count).unwrap_or(usize::MAX),
            Err(error) => {
                self.shared
                    .log_failure("sweeping expired idempotency keys", &error);
                0
            }
        }
    }

    fn len(&self) -> usize {
        let counted = self.shared.database.call(|client| async move {
            let row = client
                .query_one("SELECT count(*) FROM approvals_idempotency_keys", &[])
                .await?;
            Ok(row.try_get::<_, i64>(0)?)
        });
        match counted {
            Ok(count) => usize::try_from(count).unwrap_or(0),
            Err(error) => {
                self.shared.log_failure("counting idempotency keys", &error);
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_notifies_the_idempotency_channel() {
        assert!(COMPLETE.contains(&format!("pg_notify('{IDEMPOTENCY_CHANNEL}', $10)")));
    }
}

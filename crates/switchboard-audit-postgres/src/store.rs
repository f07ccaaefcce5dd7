//! [`PostgresAuditStore`]: the [`AuditStore`] trait on a PostgreSQL database that every node of
//! a fleet shares.
//!
//! Each operation is one call on the store's [`Database`]: a pooled connection driven by the
//! store's own runtime thread, the caller blocked for the answer at most the call timeout. The
//! audit log calls `append_batch` and `delete_before` from its writer thread and `query` from
//! blocking tasks, so the blocking is where the trait allows it.
//!
//! - `append_keyed_batch` is one `INSERT … SELECT FROM unnest(…)` statement: the batch travels
//!   as one array per column, commits as one transaction (every record or none), and the
//!   identity gives the ids in batch order. It returns after the commit. The same statement
//!   stores the batch's key with its ids (`audit_batches`), and stores nothing when the key is
//!   there already, answering with the ids stored then: an attempt that timed out on this side
//!   may still commit on the server (a frozen server that resumes), and the audit writer's
//!   retry of that batch must not store it twice. `append_batch` is the same under a new key.
//!   Keys older than [`KEY_RETENTION`] are deleted, at most once per [`KEY_SWEEP_INTERVAL`],
//!   after an append (the writer retries a batch at most for as long as the store fails).
//! - `query` is one `SELECT`, prepared once per connection for each combination of filters.
//! - `delete_before` is one `DELETE` of at most `limit` expired records, lowest ids first,
//!   skipping rows another node's sweep has locked (two nodes sweeping at once delete
//!   different records instead of waiting for each other).
//!
//! Counters: `appended` and `expired` count this store's own work since it was opened; `held`
//! starts from `count(*)` at open and follows this store's appends and deletions. Other nodes
//! writing the same table make `held` drift from the table's size; the records themselves stay
//! right, and every node's queries see every node's records.

use std::{
    sync::atomic::{AtomicI64, AtomicU64, Ordering},
    time::Duration,
};

use jiff::Timestamp;
use switchboard_audit::{AuditError, AuditQuery, AuditRecord, AuditStats, AuditStore, BatchKey};
use switchboard_postgres::{Database, OpenError, PostgresOptions, QueryError};

use crate::{
    codec::{self, Columns},
    query::Select,
    schema::{SCHEMA, SCHEMA_VERSION},
};

/// The expired records (`timestamp_ns < $1`), lowest ids first, at most `$2` of them, except
/// those another transaction holds. The ids are gathered first, as an array, so the rows are
/// deleted by primary-key lookups whatever the table's size.
const DELETE_EXPIRED: &str = "DELETE FROM audit_records WHERE id = ANY(ARRAY(SELECT id FROM \
     audit_records WHERE timestamp_ns < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED))";

/// How long a batch's key is kept: a retry of the batch after that (a writer that kept failing
/// for longer, whose first attempt committed unseen) would store it again.
pub(crate) const KEY_RETENTION: Duration = Duration::from_secs(60 * 60);

/// How often a store deletes the keys older than [`KEY_RETENTION`].
const KEY_SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// The batch keys minted before `$1` (a key as text); keys sort by the time they were minted.
const DELETE_OLD_KEYS: &str = "DELETE FROM audit_batches WHERE batch_key < CAST($1::text AS uuid)";

/// Audit records in a PostgreSQL database: persistent, queryable, shared by every node that
/// opens the same database, and safe to share between the audit log's writer thread and any
/// number of querying threads.
pub struct PostgresAuditStore {
    database: Database,
    appended: AtomicU64,
    held: AtomicU64,
    expired: AtomicU64,
    /// When this store last deleted old batch keys, in seconds since the Unix epoch.
    keys_swept_at: AtomicI64,
}

impl std::fmt::Debug for PostgresAuditStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresAuditStore")
            .field("database", &self.database)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl PostgresAuditStore {
    /// Opens the audit store in the database at `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/
    /// DATABASE`) with the default [`PostgresOptions`], creating its tables if needed and
    /// migrating them to [`SCHEMA_VERSION`].
    ///
    /// Fails with one clear line, never showing the password, when the URL is not one, the
    /// server cannot be reached, refuses the login, or holds tables of a newer build.
    pub fn open(url: impl Into<String>) -> Result<Self, OpenError> {
        Self::open_with(&PostgresOptions::new(url))
    }

    /// [`open`](Self::open) with these options (pool size, timeouts, password file).
    pub fn open_with(options: &PostgresOptions) -> Result<Self, OpenError> {
        let database = Database::open(options, &SCHEMA)?;
        let held = database
            .call(|client| async move {
                let row = client
                    .query_one("SELECT count(*) FROM audit_records", &[])
                    .await?;
                Ok(row.try_get::<_, i64>(0)?)
            })
            .map_err(|error| OpenError::Other {
                store: SCHEMA.store,
                target: database.target().clone(),
                reason: format!("counting its records failed: {error}"),
            })?;
        tracing::debug!(target_database = %database.target(), held, "audit database open");
        Ok(Self {
            database,
            appended: AtomicU64::new(0),
            held: AtomicU64::new(held.unsigned_abs()),
            expired: AtomicU64::new(0),
            keys_swept_at: AtomicI64::new(Timestamp::now().as_second()),
        })
    }

    /// The database's connections (its target names it without the password).
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The schema version of the tables (always [`SCHEMA_VERSION`] once open).
    pub fn schema_version(&self) -> i64 {
        SCHEMA_VERSION
    }

    /// Deletes the batch keys older than [`KEY_RETENTION`] when the last sweep is more than
    /// [`KEY_SWEEP_INTERVAL`] ago. A failure is logged and left to the next sweep: the batch
    /// that came before is committed either way.
    fn sweep_keys(&self) {
        let now = Timestamp::now();
        let last = self.keys_swept_at.load(Ordering::Relaxed);
        let interval = i64::try_from(KEY_SWEEP_INTERVAL.as_secs()).unwrap_or(i64::MAX);
        if now.as_second() - last < interval
            || self
                .keys_swept_at
                .compare_exchange(last, now.as_second(), Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let retention = jiff::SignedDuration::try_from(KEY_RETENTION).unwrap_or_default();
        let Ok(cutoff) = now.checked_sub(retention) else {
            return;
        };
        let first_kept = BatchKey::first_at(cutoff).to_string();
        match self.database.call(move |client| async move {
            Ok(client.execute(DELETE_OLD_KEYS, &[&first_kept]).await?)
        }) {
            Ok(deleted) => tracing::debug!(deleted, %cutoff, "old audit batch keys deleted"),
            Err(error) => {
                tracing::warn!(%error, "deleting old audit batch keys failed; will try again")
            }
        }
    }

    fn unavailable(&self, action: &str, error: &QueryError) -> AuditError {
        AuditError::Unavailable(format!(
            "the audit database {} failed while {action}: {error}",
            self.database.target()
        ))
    }
}

impl AuditStore for PostgresAuditStore {
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        self.append_keyed_batch(BatchKey::new(), records)
    }

    #[tracing::instrument(level = "debug", name = "audit_postgres_append", skip_all, fields(records = records.len(), %key))]
    fn append_keyed_batch(
        &self,
        key: BatchKey,
        records: &mut [AuditRecord],
    ) -> Result<(), AuditError> {
        if records.is_empty() {
            return Ok(());
        }
        // The records' text is reference-counted: the copy the statement borrows its arrays
        // from costs a count per field, not the text.
        let batch = records.to_vec();
        let json = codec::json_columns(records).map_err(|error| {
            AuditError::Unavailable(format!(
                "the audit database {} cannot take a batch: {error}",
                self.database.target()
            ))
        })?;
        let key_text = key.to_string();
        let (ids, inserted) = self
            .database
            .call(move |client| async move {
                let insert = client.prepare_cached(codec::INSERT_BATCH).await?;
                let columns = Columns::of(&batch, json);
                let mut parameters = columns.parameters().to_vec();
                parameters.push(&key_text);
                let row = client.query_one(&insert, &parameters).await?;
                let inserted: bool = row.try_get(1)?;
                let ids = row.try_get::<_, Option<Vec<i64>>>(0)?.unwrap_or_default();
                Ok((ids, inserted))
            })
            .map_err(|error| self.unavailable("appending a batch", &error))?;
        if ids.len() != records.len() {
            return Err(AuditError::Unavailable(format!(
                "the audit database {} returned {} ids for a batch of {} records",
                self.database.target(),
                ids.len(),
                records.len()
            )));
        }
        // Only once committed: on error the records keep their ids untouched. The rows went in
        // in batch order and the identity only grows, so the ids, ascending, are in batch order.
        for (record, id) in records.iter_mut().zip(ids) {
            record.id = id.unsigned_abs();
        }
        if inserted {
            let count = records.len() as u64;
            self.appended.fetch_add(count, Ordering::Relaxed);
            self.held.fetch_add(count, Ordering::Relaxed);
        } else {
            tracing::info!(
                %key,
                "the batch was stored by an earlier attempt: its records keep the ids they got then"
            );
        }
        self.sweep_keys();
        Ok(())
    }

    #[tracing::instrument(level = "debug", name = "audit_postgres_query", skip(self))]
    fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        if query.limit == Some(0) {
            return Ok(Vec::new());
        }
        let select = Select::of(query);
        self.database
            .call(move |client| async move {
                let statement = client.prepare_cached(&select.sql).await?;
                let rows = client.query(&statement, &select.parameters()).await?;
                rows.iter().map(codec::read).collect()
            })
            .map_err(|error| self.unavailable("querying", &error))
    }

    #[tracing::instrument(level = "debug", name = "audit_postgres_expire", skip(self))]
    fn delete_before(&self, cutoff: Timestamp, limit: usize) -> Result<u64, AuditError> {
        if limit == 0 {
            return Ok(0);
        }
        let cutoff_ns = codec::timestamp_to_sql(cutoff);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // Not a cached statement: planned with this cutoff each time, the server walks the time
        // index when few records are expired and the id index when many are.
        let deleted = self
            .database
            .call(move |client| async move {
                Ok(client
                    .execute(DELETE_EXPIRED, &[&cutoff_ns, &limit])
                    .await?)
            })
            .map_err(|error| self.unavailable("deleting expired records", &error))?;
        self.expired.fetch_add(deleted, Ordering::Relaxed);
        // `fetch_update` cannot fail with a closure that always returns `Some`.
        let _ = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                Some(held.saturating_sub(deleted))
            });
        Ok(deleted)
    }

    fn stats(&self) -> AuditStats {
        AuditStats {
            appended: self.appended.load(Ordering::Relaxed),
            held: self.held.load(Ordering::Relaxed),
            evicted: 0,
            expired: self.expired.load(Ordering::Relaxed),
            capacity: None,
        }
    }
}

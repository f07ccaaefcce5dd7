//! [`SqliteAuditStore`]: the [`AuditStore`] trait on one SQLite file in write-ahead-log mode.
//!
//! Two kinds of connection, because WAL lets readers and one writer work at the same time:
//!
//! - one writer connection (`writer`), behind a mutex, used by `append_batch` and
//!   `delete_before`. The audit log calls both from its single writer thread, so the mutex is
//!   never contended in practice; it only makes the store safe to share. A batch is one
//!   immediate transaction: every record or none, ids given in order, and `append_batch`
//!   returns after the commit. A retention step is one short transaction too, between batches.
//! - reader connections, `query_only`, taken from a small pool by each query (`query`) and
//!   given back. A query reads a snapshot of the last commit and never waits for the writer,
//!   and the writer never waits for a query.
//!
//! Counters: `appended` and `expired` count since this store was opened; `held` starts from
//! `count(*)` at open and follows this store's appends and deletions (another process writing
//! the same file would make it drift; the records themselves stay right).

use std::{
    path::{Path, PathBuf},
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use jiff::Timestamp;
use rusqlite::Connection;
use switchboard_audit::{AuditError, AuditQuery, AuditRecord, AuditStats, AuditStore, BatchKey};
use switchboard_sqlite::{
    ConnectionSettings, OpenError, Synchronous, open_database, timestamp_to_sql,
};

use crate::{
    query,
    schema::{SCHEMA, SCHEMA_VERSION},
    writer,
};

/// How a [`SqliteAuditStore`] uses its file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// When a commit counts as done (default [`Synchronous::Full`]).
    pub synchronous: Synchronous,
    /// How long a statement waits for a lock another process holds before failing (default
    /// 5 s). Within one process readers never wait for the writer.
    pub busy_timeout: Duration,
    /// How many idle reader connections are kept for the next queries (default 4).
    pub idle_readers: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            idle_readers: 4,
        }
    }
}

impl SqliteOptions {
    /// These options with `synchronous`.
    #[must_use]
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// These options keeping at most `idle_readers` reader connections between queries.
    #[must_use]
    pub fn idle_readers(mut self, idle_readers: usize) -> Self {
        self.idle_readers = idle_readers;
        self
    }

    /// These options with `busy_timeout`.
    #[must_use]
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }
}

/// Audit records in a SQLite database file: persistent, queryable, shared safely between the
/// audit log's writer thread and any number of querying threads.
pub struct SqliteAuditStore {
    path: PathBuf,
    options: SqliteOptions,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    appended: AtomicU64,
    held: AtomicU64,
    expired: AtomicU64,
}

impl std::fmt::Debug for SqliteAuditStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteAuditStore")
            .field("path", &self.path)
            .field("options", &self.options)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl SqliteAuditStore {
    /// Opens the audit database at `path` with the default [`SqliteOptions`], creating the file
    /// if it does not exist and migrating its schema to [`SCHEMA_VERSION`].
    ///
    /// Fails, without changing the file, when it is not a database, is damaged, belongs to
    /// another application, was written by a newer build, or cannot be written.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// [`open`](Self::open) with these options.
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        let settings = ConnectionSettings::new(options.synchronous, options.busy_timeout);
        let writer = open_database(&path, &SCHEMA, settings)?;
        let file = path.as_path();
        let classify = |action| move |error| OpenError::classify(SCHEMA.store, file, action, error);
        // A 64 MiB page cache keeps the hot pages of the table and its indexes in memory as the
        // file grows, and a checkpoint every 16,384 pages (64 MiB of WAL with 4 KiB pages)
        // instead of SQLite's 1,000 lets batches of thousands of records commit without a
        // checkpoint (and its `fsync` of the database file) every few batches.
        writer
            .execute_batch("PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 16384;")
            .map_err(classify("sizing its cache and checkpoints"))?;
        let held: i64 = writer
            .query_row("SELECT count(*) FROM audit_records", [], |row| row.get(0))
            .map_err(classify("counting its records"))?;
        let reader = switchboard_sqlite::open_reader(&path, options.busy_timeout)
            .map_err(classify("opening a reader connection"))?;
        tracing::debug!(path = %path.display(), held, "audit database open");
        Ok(Self {
            path,
            options,
            writer: Mutex::new(writer),
            readers: Mutex::new(vec![reader]),
            appended: AtomicU64::new(0),
            held: AtomicU64::new(held.unsigned_abs()),
            expired: AtomicU64::new(0),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options in force.
    pub fn options(&self) -> &SqliteOptions {
        &self.options
    }

    /// The schema version of the file (always [`SCHEMA_VERSION`] once open).
    pub fn schema_version(&self) -> i64 {
        SCHEMA_VERSION
    }

    fn unavailable(&self, action: &str, error: &rusqlite::Error) -> AuditError {
        AuditError::Unavailable(format!(
            "the audit database {} failed while {action}: {error}",
            self.path.display()
        ))
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while the lock was held cannot leave a transaction open: `Transaction` rolls
        // back when dropped. So a poisoned lock still guards a usable connection.
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `read` on an idle reader connection (opening one if none is idle), then keeps the
    /// connection for the next query if the pool has room.
    fn with_reader<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, AuditError> {
        let idle = self
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let connection = match idle {
            Some(connection) => connection,
            None => switchboard_sqlite::open_reader(&self.path, self.options.busy_timeout)
                .map_err(|error| self.unavailable("opening a reader connection", &error))?,
        };
        let result = read(&connection).map_err(|error| self.unavailable("querying", &error));
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        if readers.len() < self.options.idle_readers {
            readers.push(connection);
        }
        result
    }
}

impl AuditStore for SqliteAuditStore {
    #[tracing::instrument(level = "debug", name = "audit_sqlite_append", skip_all, fields(records = records.len()))]
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        if records.is_empty() {
            return Ok(());
        }
        let ids = writer::append(&mut self.writer(), records)
            .map_err(|error| self.unavailable("appending a batch", &error))?;
        // Only once committed: on error the records keep their ids untouched. Ids start at 1
        // and only grow.
        for (record, id) in records.iter_mut().zip(ids) {
            record.id = id.unsigned_abs();
        }
        let count = records.len() as u64;
        self.appended.fetch_add(count, Ordering::Relaxed);
        self.held.fetch_add(count, Ordering::Relaxed);
        Ok(())
    }

    /// The key is not stored: an attempt that failed here never commits later. The batch's
    /// transaction runs on this thread, inside this call, and an error means it rolled back
    /// before the call returned; nothing is left running that could commit the batch behind a
    /// retry's back, so a retry cannot store it twice.
    fn append_keyed_batch(
        &self,
        _key: BatchKey,
        records: &mut [AuditRecord],
    ) -> Result<(), AuditError> {
        self.append_batch(records)
    }

    #[tracing::instrument(level = "debug", name = "audit_sqlite_query", skip(self))]
    fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        if query.limit == Some(0) {
            return Ok(Vec::new());
        }
        self.with_reader(|connection| query::run(connection, query))
    }

    #[tracing::instrument(level = "debug", name = "audit_sqlite_expire", skip(self))]
    fn delete_before(&self, cutoff: Timestamp, limit: usize) -> Result<u64, AuditError> {
        if limit == 0 {
            return Ok(0);
        }
        let deleted = writer::delete_before(
            &mut self.writer(),
            timestamp_to_sql(cutoff),
            i64::try_from(limit).unwrap_or(i64::MAX),
        )
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

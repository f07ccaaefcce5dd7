//! [`SqliteRunStore`]: the workflows database file, opened once at startup, and the one
//! connection every operation goes through.
//!
//! One read-write connection behind a mutex. The engine writes one checkpoint per transition,
//! each a short immediate transaction that must be committed before the engine acts on it, and
//! SQLite admits one writer per file at a time anyway: a second writer connection in the same
//! process would only wait on SQLite's lock instead of on the mutex, and a failed busy wait
//! becomes an error where the mutex just queues. Reads (a run, its steps, a page of events, a
//! listing) are short indexed queries that share the connection and its cached statements.
//! Across processes, SQLite's write lock (with the busy timeout) orders the writers.

use std::{path::Path, sync::MutexGuard, time::Duration};

use rusqlite::Connection;
use switchboard_sqlite::{ConnectionSettings, OpenError, SharedConnection, Synchronous};
use switchboard_workflows::RunStoreError;

use crate::schema::{SCHEMA, SCHEMA_VERSION};

/// How the store uses its file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// When a commit counts as done. The default is [`Synchronous::Normal`]: in WAL mode a
    /// process that dies loses no checkpoint, and a power loss may lose the last few. That
    /// does not weaken exactly-once: a mutating step's first result is kept by the
    /// idempotency store (synchronous `FULL`) under the key derived from the step, so a step
    /// whose completed checkpoint was lost runs again only to get that first result back.
    /// What it saves is one `fsync` per checkpoint, the largest cost of a durable step.
    /// [`Synchronous::Full`] puts every checkpoint on stable storage before it returns.
    pub synchronous: Synchronous,
    /// How long a statement waits for another process's write lock before failing (default
    /// 5 s).
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(5),
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

    /// These options with `busy_timeout`.
    #[must_use]
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }
}

/// Workflow runs, their steps and their events in one SQLite file (WAL mode): they survive a
/// crash and a restart, and every process that opens the file shares them.
#[derive(Debug)]
pub struct SqliteRunStore {
    database: SharedConnection,
}

impl SqliteRunStore {
    /// Opens the workflows database at `path` with the default [`SqliteOptions`], creating the
    /// file if it does not exist and migrating its schema to [`SCHEMA_VERSION`].
    ///
    /// Fails, without changing the file, when it is not a database, is damaged, belongs to
    /// another application (or is another store's, such as an audit database), was written by
    /// a newer build, or cannot be written.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// [`open`](Self::open) with these options.
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, OpenError> {
        let path = path.as_ref();
        let _span =
            tracing::debug_span!("open_workflows_database", path = %path.display()).entered();
        let settings = ConnectionSettings::new(options.synchronous, options.busy_timeout);
        let database = SharedConnection::open(path, &SCHEMA, settings)?;
        // Every statement a checkpoint runs stays prepared between checkpoints.
        database
            .connection()
            .set_prepared_statement_cache_capacity(32);
        let runs: i64 = database.first_read("counting its runs", |connection| {
            connection.query_row("SELECT count(*) FROM runs", [], |row| row.get(0))
        })?;
        tracing::debug!(runs, "workflows database open");
        Ok(Self { database })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.database.path()
    }

    /// The schema version of the file (always [`SCHEMA_VERSION`] once open).
    pub fn schema_version(&self) -> i64 {
        SCHEMA_VERSION
    }

    /// The connection, locked (see [`SharedConnection::connection`]).
    pub(crate) fn connection(&self) -> MutexGuard<'_, Connection> {
        self.database.connection()
    }

    /// Logs a failed operation and returns it as the error its caller gets, naming the file.
    pub(crate) fn failure(&self, action: String, error: &rusqlite::Error) -> RunStoreError {
        let reason = self.database.failure(&action, error);
        RunStoreError::Backend { action, reason }
    }
}

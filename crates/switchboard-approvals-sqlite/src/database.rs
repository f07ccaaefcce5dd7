//! [`ApprovalsDatabase`]: one SQLite file holding both stores, opened once at startup, and the
//! single connection they share.
//!
//! Both stores are called synchronously on the call path and every call of theirs that
//! changes something must be on disk before it returns (a claim before its tool runs, a
//! decision before it is announced), so there is one read-write connection behind a mutex:
//! each operation is one short statement or transaction, committed before the lock is released.
//! Across processes SQLite's own write lock (with the busy timeout) orders the writers.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use rusqlite::Connection;
use switchboard_approvals::StoreError;
use switchboard_sqlite::{ConnectionSettings, OpenError, Synchronous, open_database};

use crate::{
    idempotency::SqliteIdempotencyStore,
    proposals::SqliteProposalStore,
    schema::{SCHEMA, SCHEMA_VERSION},
};

/// How the stores use their file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// When a commit counts as done (default [`Synchronous::Full`]: a claim, a result or a
    /// decision is on stable storage before the call that made it returns).
    pub synchronous: Synchronous,
    /// How long a statement waits for another process's write lock before failing (default
    /// 5 s).
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
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

/// The open file and its connection, shared by the stores made from one [`ApprovalsDatabase`].
#[derive(Debug)]
pub(crate) struct Database {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl Database {
    /// The database file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, locked. A panic while it was held cannot leave a transaction open
    /// (`Transaction` rolls back when dropped), so a poisoned lock still guards a usable
    /// connection.
    pub(crate) fn connection(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs a failed operation. The idempotency store's trait has no error channel, so it
    /// decides what a failure means for its caller; this only makes it visible.
    pub(crate) fn log_failure(&self, action: &str, error: &rusqlite::Error) {
        tracing::error!(
            path = %self.path.display(),
            %error,
            "the approvals database failed while {action}"
        );
    }

    /// Logs a failed proposal-store operation and returns it as the error its caller gets,
    /// naming the file.
    pub(crate) fn failure(&self, action: String, error: &rusqlite::Error) -> StoreError {
        self.log_failure(&action, error);
        StoreError::new(
            action,
            format!("{error} (approvals database {})", self.path.display()),
        )
    }
}

/// An approvals database: one SQLite file (WAL mode) holding proposals and idempotency keys.
/// Open it once at startup and make both stores from it; they share its connection.
#[derive(Debug, Clone)]
pub struct ApprovalsDatabase {
    database: Arc<Database>,
}

impl ApprovalsDatabase {
    /// Opens the approvals database at `path` with the default [`SqliteOptions`], creating the
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
        let path = path.as_ref().to_path_buf();
        let settings = ConnectionSettings::new(options.synchronous, options.busy_timeout);
        let connection = open_database(&path, &SCHEMA, settings)?;
        connection.set_prepared_statement_cache_capacity(32);
        // Opening reads the header and the schema only; counting walks both tables, so a file
        // damaged past its first page is refused here, at startup, rather than failing calls.
        let (proposals, keys): (i64, i64) = connection
            .query_row(
                "SELECT (SELECT count(*) FROM proposals), (SELECT count(*) FROM idempotency_keys)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(|error| {
                OpenError::classify(SCHEMA.store, &path, "counting its rows", error)
            })?;
        tracing::debug!(path = %path.display(), proposals, keys, "approvals database open");
        Ok(Self {
            database: Arc::new(Database {
                path,
                connection: Mutex::new(connection),
            }),
        })
    }

    /// The proposal store on this database.
    pub fn proposal_store(&self) -> SqliteProposalStore {
        SqliteProposalStore::new(Arc::clone(&self.database))
    }

    /// An idempotency store on this database, keeping each first result for `retention` after
    /// it completed. Make one per process: the in-flight part of the keys (who waits for whom)
    /// lives in the store value.
    pub fn idempotency_store(&self, retention: Duration) -> SqliteIdempotencyStore {
        SqliteIdempotencyStore::new(Arc::clone(&self.database), retention)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.database.path()
    }

    /// The schema version of the file (always [`SCHEMA_VERSION`] once open).
    pub fn schema_version(&self) -> i64 {
        SCHEMA_VERSION
    }
}

//! [`ApprovalsDatabase`]: one SQLite file holding both stores, opened once at startup, and the
//! single connection they share.
//!
//! Both stores are called synchronously on the call path and every call of theirs that
//! changes something must be on disk before it returns (a claim before its tool runs, a
//! decision before it is announced), so there is one read-write connection behind a mutex:
//! each operation is one short statement or transaction, committed before the lock is released.
//! Across processes SQLite's own write lock (with the busy timeout) orders the writers.

use std::{ops::Deref, path::Path, sync::Arc, time::Duration};

use switchboard_approvals::StoreError;
use switchboard_sqlite::{ConnectionSettings, OpenError, SharedConnection};

use crate::{
    idempotency::SqliteIdempotencyStore,
    proposals::SqliteProposalStore,
    schema::{SCHEMA, SCHEMA_VERSION},
};

/// How the stores use their file: when a commit counts as done (default
/// [`Synchronous::Full`](switchboard_sqlite::Synchronous::Full): a claim, a result or a
/// decision is on stable storage before the call that made it returns), and how long a
/// statement waits for another process's write lock before failing (default 5 s).
pub type SqliteOptions = ConnectionSettings;

/// The open file and its connection, shared by the stores made from one [`ApprovalsDatabase`].
#[derive(Debug)]
pub(crate) struct Database(SharedConnection);

impl Deref for Database {
    type Target = SharedConnection;

    fn deref(&self) -> &SharedConnection {
        &self.0
    }
}

impl Database {
    /// Logs a failed proposal-store operation and returns it as the error its caller gets,
    /// naming the file. (The idempotency store's trait has no error channel, so it decides
    /// what a failure means for its caller, and only logs it.)
    pub(crate) fn store_error(&self, action: String, error: &rusqlite::Error) -> StoreError {
        let reason = self.failure(&action, error);
        StoreError::new(action, reason)
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
        let database = SharedConnection::open(path, &SCHEMA, options)?;
        database
            .connection()
            .set_prepared_statement_cache_capacity(32);
        let (proposals, keys): (i64, i64) =
            database.first_read("counting its rows", |connection| {
                connection.query_row(
                "SELECT (SELECT count(*) FROM proposals), (SELECT count(*) FROM idempotency_keys)",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            })?;
        tracing::debug!(path = %database.path().display(), proposals, keys, "approvals database open");
        Ok(Self {
            database: Arc::new(Database(database)),
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

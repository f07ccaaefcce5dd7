//! [`SharedConnection`]: a store's file and the one read-write connection every operation of
//! the store goes through, behind a mutex.
//!
//! A store's writes must be committed before the call that made them returns, and SQLite admits
//! one writer per file at a time anyway: a second writer connection in the same process would
//! only wait on SQLite's lock instead of on the mutex, and a failed busy wait becomes an error
//! where the mutex just queues. So a store holds one connection, each operation is one short
//! statement or transaction committed before the lock is released, and across processes
//! SQLite's write lock (with the busy timeout) orders the writers.

use std::{
    path::{Path, PathBuf},
    sync::{Mutex, MutexGuard, PoisonError},
};

use rusqlite::Connection;

use crate::{
    error::OpenError,
    open::{ConnectionSettings, open_database},
    schema::Schema,
};

/// A store's database file and its one read-write connection, behind a mutex.
#[derive(Debug)]
pub struct SharedConnection {
    store: &'static str,
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl SharedConnection {
    /// Opens (creating it if missing) the database of `schema`'s store at `path`, as
    /// [`open_database`] does, and keeps its connection.
    pub fn open(
        path: impl AsRef<Path>,
        schema: &Schema,
        settings: ConnectionSettings,
    ) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        let connection = open_database(&path, schema, settings)?;
        Ok(Self {
            store: schema.store,
            path,
            connection: Mutex::new(connection),
        })
    }

    /// Runs a store's first read of its tables at open, such as counting its rows: opening
    /// reads the header and the schema only, so a file damaged past them is refused by this
    /// read, at startup, rather than failing calls. A failure is the [`OpenError`] that
    /// [`OpenError::classify`] makes of it, saying the store was `action`.
    pub fn first_read<T>(
        &self,
        action: &'static str,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, OpenError> {
        read(&self.connection())
            .map_err(|error| OpenError::classify(self.store, &self.path, action, error))
    }

    /// The store, as messages name it.
    pub fn store(&self) -> &'static str {
        self.store
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, locked. A panic while it was held cannot leave a transaction open
    /// (`Transaction` rolls back when dropped), so a poisoned lock still guards a usable
    /// connection.
    pub fn connection(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs an operation that failed while `action`, naming the store and the file.
    pub fn log_failure(&self, action: &str, error: &rusqlite::Error) {
        tracing::error!(
            path = %self.path.display(),
            %error,
            "the {} database failed while {action}",
            self.store
        );
    }

    /// Logs an operation that failed while `action` ([`log_failure`](Self::log_failure)) and
    /// returns what the error its caller gets says: SQLite's error, the store and the file.
    pub fn failure(&self, action: &str, error: &rusqlite::Error) -> String {
        self.log_failure(action, error);
        format!("{error} ({} database {})", self.store, self.path.display())
    }
}

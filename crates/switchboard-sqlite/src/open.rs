//! Opening a store's database file: check it before changing anything, then switch it to
//! write-ahead logging, set when commits count as done, and migrate its schema.
//!
//! The order matters. A missing directory is reported as such (SQLite would only say it
//! "cannot open"); the header is read before anything is written, which is what reveals a file
//! that is not a database at all, a read-only one, another application's, or a newer build's;
//! only a file that is the store's own (or empty) is switched to WAL and migrated.

use std::{path::Path, time::Duration};

use rusqlite::{Connection, OpenFlags, config::DbConfig};

use crate::{
    error::OpenError,
    schema::{self, Schema},
};

/// When a commit counts as done (`PRAGMA synchronous` in WAL mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is flushed to stable storage (`fsync` of the WAL) before the write
    /// returns: what it wrote survives a process kill, an OS crash and a power cut. The
    /// default: a store's acknowledgement should mean "on disk".
    #[default]
    Full,
    /// Commits reach the OS (a `write` to the WAL) but are flushed only at checkpoints: what a
    /// write acknowledged survives the process being killed (`SIGKILL`), but the last commits
    /// may be lost if the machine itself crashes or loses power. Faster when each transaction
    /// is small.
    Normal,
}

impl Synchronous {
    /// The `PRAGMA synchronous` value.
    pub fn pragma_value(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// How the connection [`open_database`] returns behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionSettings {
    /// When a commit counts as done (default [`Synchronous::Full`]).
    pub synchronous: Synchronous,
    /// How long a statement waits for a lock another connection holds before failing
    /// (default 5 s).
    pub busy_timeout: Duration,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
        }
    }
}

impl ConnectionSettings {
    /// Settings with this `synchronous` and this busy timeout.
    pub fn new(synchronous: Synchronous, busy_timeout: Duration) -> Self {
        Self {
            synchronous,
            busy_timeout,
        }
    }

    /// These settings with `synchronous`.
    #[must_use]
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// These settings with `busy_timeout`.
    #[must_use]
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }
}

/// Opens (creating it if missing) the database of `schema`'s store at `path` and returns a
/// read-write connection to it, in WAL mode, with the schema migrated to
/// [`Schema::version`].
///
/// Fails, without changing the file, when its directory is missing, when it is not a database,
/// is damaged, belongs to another application or store, was written by a newer build, or
/// cannot be written.
pub fn open_database(
    path: &Path,
    schema: &Schema,
    settings: ConnectionSettings,
) -> Result<Connection, OpenError> {
    let store = schema.store;
    check_directory(path, store)?;
    if path.is_dir() {
        return Err(OpenError::CannotOpen {
            store,
            path: path.to_path_buf(),
            reason: "it is a directory".to_owned(),
        });
    }
    // No URI flag: the path is taken literally, never as `file:` options.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let classify = |action| move |error| OpenError::classify(store, path, action, error);
    let mut connection =
        Connection::open_with_flags(path, flags).map_err(classify("opening it"))?;
    connection
        .busy_timeout(settings.busy_timeout)
        .map_err(classify("setting its busy timeout"))?;
    keep_plans(&connection).map_err(classify("fixing its query plans"))?;
    // Reading the header is what reveals a file that is not a database at all.
    let found = schema::inspect(&connection, schema).map_err(classify("reading its header"))?;
    if connection.is_readonly("main").unwrap_or(false) {
        return Err(OpenError::ReadOnly {
            store,
            path: path.to_path_buf(),
            reason: "the file is not writable".to_owned(),
        });
    }
    schema::ensure_usable(path, schema, found)?;
    let mode: String = connection
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .map_err(classify("switching it to write-ahead logging"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(OpenError::NoWriteAheadLog {
            store,
            path: path.to_path_buf(),
            mode,
        });
    }
    connection
        .pragma_update(None, "synchronous", settings.synchronous.pragma_value())
        .map_err(classify("setting `synchronous`"))?;
    schema::migrate(&mut connection, path, schema)?;
    Ok(connection)
}

/// Opens another connection on a database [`open_database`] already set up, for reading only
/// (`query_only`): in WAL mode it reads the last commit and never blocks the writer.
pub fn open_reader(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags)?;
    connection.busy_timeout(busy_timeout)?;
    keep_plans(&connection)?;
    connection.pragma_update(None, "query_only", true)?;
    Ok(connection)
}

/// Turns on SQLite's query planner stability guarantee: a prepared statement keeps the plan it
/// was prepared with. Without it, binding a new value re-prepares any statement whose plan the
/// value might change; with the bundled build's STAT4 that includes the `max(seq) … WHERE run =
/// ?` a store numbers its rows with, so every workflow checkpoint parsed and planned that
/// statement again: a fifth of the checkpoint's time (`cargo bench -p
/// switchboard-workflows-engine --bench workflow`). Every statement of the stores looks rows up
/// by key, and its best plan does not depend on the key's value.
fn keep_plans(connection: &Connection) -> rusqlite::Result<()> {
    connection.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// Fails early, with a message naming the directory, when the file's directory is missing.
fn check_directory(path: &Path, store: &'static str) -> Result<(), OpenError> {
    let Some(directory) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    else {
        return Ok(());
    };
    if directory.is_dir() {
        return Ok(());
    }
    Err(OpenError::MissingDirectory {
        store,
        path: path.to_path_buf(),
        directory: directory.to_path_buf(),
    })
}

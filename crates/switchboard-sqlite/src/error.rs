//! Why a store's database could not be opened, in words that say what to do about it.
//!
//! Opening runs at startup, before any call is served, and a store the operator chose is not
//! optional: every failure here is an error for the operator to fix, never a panic and never a
//! quiet fallback to an in-memory store. Each message names the file, and the store it was
//! opened for (`audit`, `approvals`), so that a binary opening several databases says which.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// Why a store's database could not be opened (see [`open_database`](crate::open_database)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The directory the file should be in does not exist.
    #[error(
        "cannot open the {store} database {}: its directory {} does not exist; create it, or \
         point the {store} store at another path",
        .path.display(),
        .directory.display()
    )]
    MissingDirectory {
        /// The store the database is for (`audit`, `approvals`).
        store: &'static str,
        /// The database file asked for.
        path: PathBuf,
        /// Its parent directory, which is missing.
        directory: PathBuf,
    },
    /// SQLite could not open or create the file (a directory, a permission, a device).
    #[error(
        "cannot open the {store} database {}: {reason}; the path must name a file (existing or \
         not) in a directory this process can write to",
        .path.display()
    )]
    CannotOpen {
        /// The store the database is for.
        store: &'static str,
        /// The database file.
        path: PathBuf,
        /// What SQLite or the file system said.
        reason: String,
    },
    /// The file or its directory is not writable by this process.
    #[error(
        "the {store} database {} is read-only for this process ({reason}); the {store} store \
         must write: fix the permissions of the file and of its directory (write-ahead logging \
         creates `-wal` and `-shm` files next to it)",
        .path.display()
    )]
    ReadOnly {
        /// The store the database is for.
        store: &'static str,
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// The file is not a SQLite database, or a damaged one.
    #[error(
        "{} is not a usable SQLite database ({reason}): it is corrupt or not a database at \
         all; move it aside (keep it for inspection) and start with a new file, or restore it \
         from a backup",
        .path.display()
    )]
    Corrupt {
        /// The store the database is for.
        store: &'static str,
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// The file is a SQLite database of some other application (or of another Switchboard
    /// store).
    #[error(
        "{} is a SQLite database of something else (application id {application_id:#010x}, \
         tables: {tables}), not a Switchboard {store} database; point the {store} store at a \
         new file",
        .path.display()
    )]
    ForeignDatabase {
        /// The store the database is for.
        store: &'static str,
        /// The database file.
        path: PathBuf,
        /// Its `PRAGMA application_id`.
        application_id: i32,
        /// The tables it holds, comma-separated (empty if none).
        tables: String,
    },
    /// The database was written by a newer build, with a schema this build does not know.
    #[error(
        "the {store} database {} has schema version {found}, newer than this build knows \
         ({supported}); run the newer Switchboard that wrote it, or point the {store} store at \
         another file",
        .path.display()
    )]
    TooNew {
        /// The store the database is for.
        store: &'static str,
        /// The database file.
        path: PathBuf,
        /// The schema version in the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A schema migration failed; its transaction was rolled back.
    #[error(
        "migrating the {store} database {} from schema version {from} to {to} failed: {source}; \
         the database is unchanged, still at version {from}",
        .path.display()
    )]
    Migration {
        /// The store the database is for.
        store: &'static str,
        /// The database file.
        path: PathBuf,
        /// The version before the migration.
        from: i64,
        /// The version the failed migration leads to.
        to: i64,
        /// What SQLite said.
        #[source]
        source: Box<rusqlite::Error>,
    },
    /// SQLite refused write-ahead logging (some network or virtual file systems cannot share
    /// memory between connections).
    #[error(
        "the {store} database {} cannot use write-ahead logging (its journal mode stayed \
         `{mode}`); put it on a local file system",
        .path.display()
    )]
    NoWriteAheadLog {
        /// The store the database is for.
        store: &'static str,
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// Another SQLite failure while setting the database up.
    #[error("setting up the {store} database {} failed while {action}: {source}", .path.display())]
    Sqlite {
        /// The store the database is for.
        store: &'static str,
        /// The database file.
        path: PathBuf,
        /// What the store was doing.
        action: &'static str,
        /// What SQLite said.
        #[source]
        source: Box<rusqlite::Error>,
    },
}

impl OpenError {
    /// Sorts a SQLite error met while `action` (opening the `store`'s database at `path`) into
    /// the variant an operator can act on.
    pub fn classify(
        store: &'static str,
        path: &Path,
        action: &'static str,
        error: rusqlite::Error,
    ) -> Self {
        let path = path.to_path_buf();
        let reason = error.to_string();
        match error.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => OpenError::Corrupt {
                store,
                path,
                reason,
            },
            Some(ErrorCode::ReadOnly) => OpenError::ReadOnly {
                store,
                path,
                reason,
            },
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => OpenError::CannotOpen {
                store,
                path,
                reason,
            },
            _ => OpenError::Sqlite {
                store,
                path,
                action,
                source: Box::new(error),
            },
        }
    }

    /// The database file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            OpenError::MissingDirectory { path, .. }
            | OpenError::CannotOpen { path, .. }
            | OpenError::ReadOnly { path, .. }
            | OpenError::Corrupt { path, .. }
            | OpenError::ForeignDatabase { path, .. }
            | OpenError::TooNew { path, .. }
            | OpenError::Migration { path, .. }
            | OpenError::NoWriteAheadLog { path, .. }
            | OpenError::Sqlite { path, .. } => path,
        }
    }

    /// The store the database was opened for (`audit`, `approvals`).
    pub fn store(&self) -> &'static str {
        match self {
            OpenError::MissingDirectory { store, .. }
            | OpenError::CannotOpen { store, .. }
            | OpenError::ReadOnly { store, .. }
            | OpenError::Corrupt { store, .. }
            | OpenError::ForeignDatabase { store, .. }
            | OpenError::TooNew { store, .. }
            | OpenError::Migration { store, .. }
            | OpenError::NoWriteAheadLog { store, .. }
            | OpenError::Sqlite { store, .. } => store,
        }
    }
}

//! Why an audit database could not be opened, in words that say what to do about it.
//!
//! Opening runs at startup, before any call is served, and the audit trail is not optional:
//! every failure here is an error for the operator to fix, never a panic and never a quiet
//! fallback to the in-memory store. Each message names the file.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// Why [`SqliteAuditStore::open`](crate::SqliteAuditStore::open) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The directory the file should be in does not exist.
    #[error(
        "cannot open the audit database {}: its directory {} does not exist; create it, or \
         point the audit store at another path",
        .path.display(),
        .directory.display()
    )]
    MissingDirectory {
        /// The database file asked for.
        path: PathBuf,
        /// Its parent directory, which is missing.
        directory: PathBuf,
    },
    /// SQLite could not open or create the file (a directory, a permission, a device).
    #[error(
        "cannot open the audit database {}: {reason}; the path must name a file (existing or \
         not) in a directory this process can write to",
        .path.display()
    )]
    CannotOpen {
        /// The database file.
        path: PathBuf,
        /// What SQLite or the file system said.
        reason: String,
    },
    /// The file or its directory is not writable by this process.
    #[error(
        "the audit database {} is read-only for this process ({reason}); the audit store must \
         write: fix the permissions of the file and of its directory (write-ahead logging \
         creates `-wal` and `-shm` files next to it)",
        .path.display()
    )]
    ReadOnly {
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
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// The file is a SQLite database of some other application.
    #[error(
        "{} is a SQLite database of something else (application id {application_id:#010x}, \
         tables: {tables}), not a Switchboard audit store; point the audit store at a new file",
        .path.display()
    )]
    ForeignDatabase {
        /// The database file.
        path: PathBuf,
        /// Its `PRAGMA application_id` (ours is [`APPLICATION_ID`](crate::APPLICATION_ID)).
        application_id: i32,
        /// The tables it holds, comma-separated (empty if none).
        tables: String,
    },
    /// The database was written by a newer build, with a schema this build does not know.
    #[error(
        "the audit database {} has schema version {found}, newer than this build knows \
         ({supported}); run the newer Switchboard that wrote it, or point the audit store at \
         another file",
        .path.display()
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// The schema version in the file.
        found: i64,
        /// The newest version this build knows ([`SCHEMA_VERSION`](crate::SCHEMA_VERSION)).
        supported: i64,
    },
    /// A schema migration failed; its transaction was rolled back.
    #[error(
        "migrating the audit database {} from schema version {from} to {to} failed: {source}; \
         the database is unchanged, still at version {from}",
        .path.display()
    )]
    Migration {
        /// The database file.
        path: PathBuf,
        /// The version before the migration.
        from: i64,
        /// The version the failed migration leads to.
        to: i64,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// SQLite refused write-ahead logging (some network or virtual file systems cannot share
    /// memory between connections).
    #[error(
        "the audit database {} cannot use write-ahead logging (its journal mode stayed \
         `{mode}`); put it on a local file system",
        .path.display()
    )]
    NoWriteAheadLog {
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// Another SQLite failure while setting the database up.
    #[error("setting up the audit database {} failed while {action}: {source}", .path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What the store was doing.
        action: &'static str,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
}

impl OpenError {
    /// Sorts a SQLite error met while `action` into the variant an operator can act on.
    pub(crate) fn classify(path: &Path, action: &'static str, error: rusqlite::Error) -> Self {
        let path = path.to_path_buf();
        let reason = error.to_string();
        match error.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                OpenError::Corrupt { path, reason }
            }
            Some(ErrorCode::ReadOnly) => OpenError::ReadOnly { path, reason },
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
                OpenError::CannotOpen { path, reason }
            }
            _ => OpenError::Sqlite {
                path,
                action,
                source: error,
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
}

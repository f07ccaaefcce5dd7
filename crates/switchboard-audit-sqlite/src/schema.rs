//! The database's schema and how a file gets there: recognising our own databases, refusing
//! others', and the versioned migrations that run at startup.
//!
//! A file is ours when its `PRAGMA application_id` is [`APPLICATION_ID`]; its schema version
//! is `PRAGMA user_version`, the number of [`MIGRATIONS`] applied. Both live in the database
//! header, so they change atomically with the migration transaction that sets them. An empty
//! file (no tables, both zero) is a new database and gets every migration; a file with tables
//! but not our id belongs to something else and is refused untouched (its journal mode is not
//! even switched); a version above [`SCHEMA_VERSION`] was written by a newer build and is
//! refused untouched too. Migrations only ever append to [`MIGRATIONS`]: an entry, once
//! released, never changes.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::OpenError;

/// `PRAGMA application_id` of a Switchboard audit database: "SBAU" in ASCII.
pub const APPLICATION_ID: i32 = 0x5342_4155;

/// One step of the schema, from version `index` to `index + 1`.
#[derive(Debug)]
pub(crate) struct Migration {
    /// What it does, for logs.
    pub(crate) description: &'static str,
    /// The statements, run in the migration's transaction.
    pub(crate) sql: &'static str,
}

/// Every migration, oldest first. Version `n` means the first `n` have run.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "the audit_records table and its query indexes",
        // `id` is the rowid. AUTOINCREMENT keeps ids from being reused even after retention has
        // deleted every record, so a cursor never lands on a different record. Secondary indexes
        // end with the rowid implicitly, so `(org_id)` orders by `(org_id, id)`: a query filtered
        // on one of them walks its index backwards, newest first, with no sort.
        sql: "
        CREATE TABLE audit_records (
            id             INTEGER PRIMARY KEY AUTOINCREMENT,
            timestamp_ns   INTEGER NOT NULL,
            tool           TEXT    NOT NULL,
            domain         TEXT,
            category       TEXT,
            org_id         TEXT,
            user_id        TEXT,
            session_id     TEXT,
            correlation_id TEXT,
            initiator      TEXT    NOT NULL,
            input_hash     BLOB    NOT NULL,
            output_hash    BLOB,
            duration_us    INTEGER NOT NULL,
            outcome        TEXT    NOT NULL
        ) STRICT;
        CREATE INDEX audit_records_by_correlation ON audit_records (correlation_id);
        CREATE INDEX audit_records_by_org ON audit_records (org_id);
        CREATE INDEX audit_records_by_tool ON audit_records (tool);
        CREATE INDEX audit_records_by_time ON audit_records (timestamp_ns);
    ",
    },
    Migration {
        description: "the action a record belongs to (idempotent mutations and proposals)",
        sql: "
            ALTER TABLE audit_records ADD COLUMN action_id TEXT;
            ALTER TABLE audit_records ADD COLUMN action_event TEXT;
        ",
    },
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// What a file holds before migrations run.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// No tables and no application id: a new (or empty) file.
    Empty,
    /// One of ours, at this schema version.
    Ours { version: i64 },
    /// Another application's database.
    Foreign { application_id: i32, tables: String },
}

/// Reads the header fields and table names. Fails on a file that is not a database.
pub(crate) fn inspect(connection: &Connection) -> rusqlite::Result<Found> {
    let application_id: i32 =
        connection.pragma_query_value(None, "application_id", |row| row.get(0))?;
    let version: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let mut statement =
        connection.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")?;
    let tables: Vec<String> = statement
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(match application_id {
        APPLICATION_ID => Found::Ours { version },
        0 if tables.is_empty() && version == 0 => Found::Empty,
        _ => Found::Foreign {
            application_id,
            tables: tables.join(", "),
        },
    })
}

/// Refuses a file that is not ours or is too new; otherwise returns its version (0 if empty).
pub(crate) fn ensure_usable(path: &Path, found: Found) -> Result<i64, OpenError> {
    match found {
        Found::Empty => Ok(0),
        Found::Ours { version } if version > SCHEMA_VERSION => Err(OpenError::TooNew {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        }),
        Found::Ours { version } => Ok(version),
        Found::Foreign {
            application_id,
            tables,
        } => Err(OpenError::ForeignDatabase {
            path: path.to_path_buf(),
            application_id,
            tables,
        }),
    }
}

/// Brings the schema to [`SCHEMA_VERSION`], each migration in its own immediate transaction
/// that also sets the version, so a crash or a failure leaves the file at the last complete
/// version. The version is read again under the write lock, so two processes opening the same
/// new file do not both migrate it. Returns the version the file is at.
pub(crate) fn migrate(connection: &mut Connection, path: &Path) -> Result<i64, OpenError> {
    loop {
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|error| OpenError::classify(path, "locking it to migrate", error))?;
        let found = inspect(&transaction)
            .map_err(|error| OpenError::classify(path, "reading its schema version", error))?;
        let from = ensure_usable(path, found)?;
        let Some(migration) = usize::try_from(from)
            .ok()
            .and_then(|applied| MIGRATIONS.get(applied))
        else {
            // Up to date; nothing was written, so nothing to commit.
            return Ok(from);
        };
        let to = from + 1;
        let failed = |source| OpenError::Migration {
            path: path.to_path_buf(),
            from,
            to,
            source,
        };
        transaction.execute_batch(migration.sql).map_err(failed)?;
        transaction
            .pragma_update(None, "user_version", to)
            .map_err(failed)?;
        transaction
            .pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(failed)?;
        transaction.commit().map_err(failed)?;
        tracing::info!(
            path = %path.display(),
            from,
            to,
            migration = migration.description,
            "audit database migrated"
        );
    }
}

//! A store's schema and how a file gets there: recognising the store's own databases, refusing
//! others', and the versioned migrations that run at startup.
//!
//! A file belongs to a store when its `PRAGMA application_id` is the store's
//! [`Schema::application_id`]; its schema version is `PRAGMA user_version`, the number of
//! [`Schema::migrations`] applied. Both live in the database header, so they change atomically
//! with the migration transaction that sets them. An empty file (no tables, both zero) is a new
//! database and gets every migration; a file with tables but not the store's id belongs to
//! something else (another application, or another Switchboard store) and is refused untouched
//! (its journal mode is not even switched); a version above the store's is written by a newer
//! build and is refused untouched too. Migrations only ever append to a store's list: an
//! entry, once released, never changes.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::OpenError;

/// One step of a schema, from version `index` to `index + 1`.
#[derive(Debug)]
pub struct Migration {
    /// What it does, for logs.
    pub description: &'static str,
    /// The statements, run in the migration's transaction.
    pub sql: &'static str,
}

/// What a store's database file is: whose it is, and how its tables came to be.
#[derive(Debug)]
pub struct Schema {
    /// The store, as messages name it (`audit`, `approvals`).
    pub store: &'static str,
    /// `PRAGMA application_id` of the store's files (four ASCII letters, e.g. "SBAU").
    pub application_id: i32,
    /// Every migration, oldest first. Version `n` means the first `n` have run.
    pub migrations: &'static [Migration],
}

impl Schema {
    /// The schema version this build writes and reads: how many migrations there are.
    pub const fn version(&self) -> i64 {
        self.migrations.len() as i64
    }
}

/// What a file holds before migrations run.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// No tables and no application id: a new (or empty) file.
    Empty,
    /// One of the store's, at this schema version.
    Ours { version: i64 },
    /// Another application's (or store's) database.
    Foreign { application_id: i32, tables: String },
}

/// Reads the header fields and table names. Fails on a file that is not a database.
pub(crate) fn inspect(connection: &Connection, schema: &Schema) -> rusqlite::Result<Found> {
    let application_id: i32 =
        connection.pragma_query_value(None, "application_id", |row| row.get(0))?;
    let version: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let mut statement =
        connection.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")?;
    let tables: Vec<String> = statement
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(if application_id == schema.application_id {
        Found::Ours { version }
    } else if application_id == 0 && tables.is_empty() && version == 0 {
        Found::Empty
    } else {
        Found::Foreign {
            application_id,
            tables: tables.join(", "),
        }
    })
}

/// Refuses a file that is not the store's or is too new; otherwise returns its version (0 if
/// empty).
pub(crate) fn ensure_usable(path: &Path, schema: &Schema, found: Found) -> Result<i64, OpenError> {
    match found {
        Found::Empty => Ok(0),
        Found::Ours { version } if version > schema.version() => Err(OpenError::TooNew {
            store: schema.store,
            path: path.to_path_buf(),
            found: version,
            supported: schema.version(),
        }),
        Found::Ours { version } => Ok(version),
        Found::Foreign {
            application_id,
            tables,
        } => Err(OpenError::ForeignDatabase {
            store: schema.store,
            path: path.to_path_buf(),
            application_id,
            tables,
        }),
    }
}

/// Brings the schema to [`Schema::version`], each migration in its own immediate transaction
/// that also sets the version, so a crash or a failure leaves the file at the last complete
/// version. The version is read again under the write lock, so two processes opening the same
/// new file do not both migrate it. Returns the version the file is at.
pub(crate) fn migrate(
    connection: &mut Connection,
    path: &Path,
    schema: &Schema,
) -> Result<i64, OpenError> {
    let store = schema.store;
    loop {
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|error| OpenError::classify(store, path, "locking it to migrate", error))?;
        let found = inspect(&transaction, schema).map_err(|error| {
            OpenError::classify(store, path, "reading its schema version", error)
        })?;
        let from = ensure_usable(path, schema, found)?;
        let Some(migration) = usize::try_from(from)
            .ok()
            .and_then(|applied| schema.migrations.get(applied))
        else {
            // Up to date; nothing was written, so nothing to commit.
            return Ok(from);
        };
        let to = from + 1;
        let failed = |source| OpenError::Migration {
            store,
            path: path.to_path_buf(),
            from,
            to,
            source: Box::new(source),
        };
        transaction.execute_batch(migration.sql).map_err(failed)?;
        transaction
            .pragma_update(None, "user_version", to)
            .map_err(failed)?;
        transaction
            .pragma_update(None, "application_id", schema.application_id)
            .map_err(failed)?;
        transaction.commit().map_err(failed)?;
        tracing::info!(
            store,
            path = %path.display(),
            from,
            to,
            migration = migration.description,
            "database migrated"
        );
    }
}

//! A small store schema for the tests, and what they share: opening a file with it, and the
//! helpers of `switchboard_sqlite::conformance` for the test store.

use std::path::Path;

use rusqlite::Connection;
pub(crate) use switchboard_sqlite::conformance::header_fields;
use switchboard_sqlite::{
    ConnectionSettings, Migration, OpenError, Schema, conformance, open_database,
};

/// The test store's name, as every error must name it.
pub(crate) const STORE: &str = "widgets";

/// The test store's `application_id`: "SBWG" in ASCII.
pub(crate) const APPLICATION_ID: i32 = 0x5342_5747;

/// Two migrations: a table, then an index on it.
pub(crate) static MIGRATIONS: [Migration; 2] = [
    Migration {
        description: "create the widgets table",
        sql: "CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
    },
    Migration {
        description: "index widgets by name",
        sql: "CREATE INDEX widgets_by_name ON widgets (name);",
    },
];

/// The test store's schema, at version 2.
pub(crate) static SCHEMA: Schema = Schema {
    store: STORE,
    application_id: APPLICATION_ID,
    migrations: &MIGRATIONS,
};

/// The schema version [`SCHEMA`] migrates to.
pub(crate) const SCHEMA_VERSION: i64 = SCHEMA.version();

pub(crate) fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Opens `path` with [`SCHEMA`] and the default settings.
pub(crate) fn open(path: &Path) -> Result<Connection, OpenError> {
    open_database(path, &SCHEMA, ConnectionSettings::default())
}

/// Opens `path` expecting a refusal, and checks the error names the file and the store.
pub(crate) fn refused(path: &Path) -> OpenError {
    conformance::refused(open(path), path, STORE)
}

/// Checks the error's message names the file, and the error the file and the store.
pub(crate) fn assert_names_file_and_store(error: &OpenError, path: &Path) {
    conformance::assert_names_file_and_store(error, path, STORE);
}

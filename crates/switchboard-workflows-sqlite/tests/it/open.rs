//! Opening a workflows database: a new file is created with the workflows schema in WAL mode,
//! a reopened one migrates nothing, and a file that is not the store's (garbage, another
//! application's, the approvals store's, a newer build's) is refused untouched with an
//! `OpenError` naming the file and the workflows store.

use std::{fs, path::Path};

use rusqlite::Connection;
use switchboard_workflows::RunStore;
use switchboard_workflows_sqlite::{APPLICATION_ID, OpenError, SCHEMA_VERSION, SqliteRunStore};

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Opens `path` expecting a refusal, and checks the message names the file and the store.
fn refused(path: &Path) -> OpenError {
    let error = SqliteRunStore::open(path).expect_err("the store must refuse this file");
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()),
        "the message should name the file: {message}"
    );
    assert_eq!(error.path(), path);
    assert_eq!(error.store(), "workflows");
    error
}

fn header_fields(path: &Path) -> (i32, i64, String) {
    let connection = Connection::open(path).expect("the file opens with plain SQLite");
    let application_id = connection
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .expect("application_id");
    let version = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    let mode = connection
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .expect("journal_mode");
    (application_id, version, mode)
}

#[test]
fn a_missing_file_is_created_migrated_and_in_wal_mode() {
    let dir = scratch();
    let path = dir.path().join("workflows.db");
    let store = SqliteRunStore::open(&path).expect("a new database opens");
    assert!(path.is_file());
    assert_eq!(store.path(), path);
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    assert!(store.unfinished_runs().expect("readable").is_empty());
    drop(store);
    assert_eq!(
        header_fields(&path),
        (APPLICATION_ID, SCHEMA_VERSION, "wal".to_owned())
    );
    // Reopening migrates nothing.
    drop(SqliteRunStore::open(&path).expect("reopens"));
    assert_eq!(header_fields(&path).1, SCHEMA_VERSION);
}

#[test]
fn a_file_that_is_not_a_database_is_refused_as_corrupt() {
    let dir = scratch();
    let path = dir.path().join("workflows.db");
    let garbage: Vec<u8> = (0..16_384_u32).map(|n| (n * 31 % 251) as u8).collect();
    fs::write(&path, &garbage).expect("written");
    let error = refused(&path);
    assert!(matches!(error, OpenError::Corrupt { .. }), "{error:?}");
    assert_eq!(
        fs::read(&path).expect("still there"),
        garbage,
        "the file is untouched"
    );
}

#[test]
fn another_applications_database_is_refused_untouched() {
    let dir = scratch();
    let path = dir.path().join("notes.db");
    {
        let connection = Connection::open(&path).expect("creates");
        connection
            .execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);")
            .expect("another application's database");
    }
    let error = refused(&path);
    match &error {
        OpenError::ForeignDatabase {
            application_id,
            tables,
            ..
        } => {
            assert_eq!(*application_id, 0);
            assert_eq!(tables, "notes");
        }
        other => panic!("expected ForeignDatabase, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("not a Switchboard workflows database")
    );
    assert_eq!(header_fields(&path), (0, 0, "delete".to_owned()));
}

#[test]
fn an_approvals_database_is_another_stores_file_and_is_refused() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    {
        let connection = Connection::open(&path).expect("creates");
        connection
            .execute_batch(
                "CREATE TABLE proposals (id TEXT PRIMARY KEY); \
                 PRAGMA application_id = 1396851024; PRAGMA user_version = 1;",
            )
            .expect("an approvals-like database (application id SBAP)");
    }
    let error = refused(&path);
    assert!(
        matches!(
            &error,
            OpenError::ForeignDatabase {
                application_id: 0x5342_4150,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(header_fields(&path), (0x5342_4150, 1, "delete".to_owned()));
}

#[test]
fn a_database_of_a_newer_build_is_refused_untouched() {
    let dir = scratch();
    let path = dir.path().join("workflows.db");
    drop(SqliteRunStore::open(&path).expect("a new database opens"));
    {
        let connection = Connection::open(&path).expect("opens with plain SQLite");
        connection
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .expect("a newer schema version");
    }
    let error = refused(&path);
    match &error {
        OpenError::TooNew {
            found, supported, ..
        } => {
            assert_eq!(*found, SCHEMA_VERSION + 1);
            assert_eq!(*supported, SCHEMA_VERSION);
        }
        other => panic!("expected TooNew, got {other:?}"),
    }
    assert_eq!(header_fields(&path).1, SCHEMA_VERSION + 1);
}

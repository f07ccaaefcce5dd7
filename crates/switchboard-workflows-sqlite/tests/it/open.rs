//! Opening a workflows database: a new file is created with the workflows schema in WAL mode,
//! a reopened one migrates nothing, and a file that is not the store's (garbage, another
//! application's, the approvals store's, a newer build's) is refused untouched with an
//! `OpenError` naming the file and the workflows store.

use std::{fs, path::Path};

use rusqlite::Connection;
use switchboard_sqlite::conformance::{self, header_fields};
use switchboard_workflows::RunStore;
use switchboard_workflows_sqlite::{APPLICATION_ID, OpenError, SCHEMA_VERSION, SqliteRunStore};

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Opens `path` expecting a refusal, and checks the error names the file and the store.
fn refused(path: &Path) -> OpenError {
    conformance::refused(SqliteRunStore::open(path), path, "workflows")
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
    // Application id SBAP.
    conformance::another_stores_file_is_refused_untouched(
        "workflows",
        "proposals",
        0x5342_4150,
        scratch().path(),
        |path| SqliteRunStore::open(path),
    );
}

#[test]
fn a_database_of_a_newer_build_is_refused_untouched() {
    conformance::a_newer_file_is_refused_untouched(
        "workflows",
        SCHEMA_VERSION,
        scratch().path(),
        |path| SqliteRunStore::open(path),
    );
}

//! Opening a roster database: a missing or empty file is made at the latest schema in WAL
//! mode, a reopened one migrates nothing, and a file newer than this build or of another store
//! is refused untouched, with an `OpenError` naming the file and the roster store. The
//! refusals every store shares (garbage, a missing or unwritable directory) are tested once, in
//! `switchboard-sqlite`.

use std::{fs, path::Path};

use rusqlite::Connection;
use switchboard_domain_roster::{RosterBook, RosterStore};
use switchboard_roster_sqlite::{APPLICATION_ID, OpenError, SCHEMA_VERSION, SqliteRosterStore};

use crate::common::acme;

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// `(application_id, user_version, journal_mode)` as plain SQLite reads them.
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

/// Opens `path` expecting a refusal, and checks the message names the file and the store.
fn refused(path: &Path) -> OpenError {
    let error = SqliteRosterStore::open(path).expect_err("the store must refuse this file");
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()),
        "the message should name the file: {message}"
    );
    assert_eq!(error.path(), path);
    assert_eq!(error.store(), "roster");
    error
}

#[tokio::test]
async fn a_missing_file_is_made_at_the_latest_schema_in_wal_mode() {
    let dir = scratch();
    let path = dir.path().join("roster.db");
    let store = SqliteRosterStore::open(&path).expect("a new file opens");
    assert!(path.is_file());
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    store.seed(RosterBook::seeded()).await.expect("seeded");
    drop(store);
    assert_eq!(
        header_fields(&path),
        (APPLICATION_ID, SCHEMA_VERSION, "wal".to_owned())
    );
    // Reopening migrates nothing and keeps what was written.
    let reopened = SqliteRosterStore::open(&path).expect("reopens");
    assert_eq!(header_fields(&path).1, SCHEMA_VERSION);
    let book = reopened.load(acme()).await.expect("loads");
    assert_eq!(
        book.org_part(&acme()),
        RosterBook::seeded().org_part(&acme())
    );
}

#[test]
fn an_empty_file_is_migrated_to_the_latest_schema() {
    let dir = scratch();
    let path = dir.path().join("roster.db");
    fs::write(&path, b"").expect("an empty file");
    drop(SqliteRosterStore::open(&path).expect("an empty file opens"));
    assert_eq!(
        header_fields(&path),
        (APPLICATION_ID, SCHEMA_VERSION, "wal".to_owned())
    );
    let connection = Connection::open(&path).expect("opens");
    let columns: Vec<String> = connection
        .prepare("SELECT name FROM pragma_table_info('roster_orgs') ORDER BY cid")
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()
        })
        .expect("the table's columns");
    assert_eq!(columns, ["org_id", "roster", "version"]);
}

#[test]
fn a_file_newer_than_this_build_is_refused_untouched() {
    let dir = scratch();
    let path = dir.path().join("roster.db");
    drop(SqliteRosterStore::open(&path).expect("opens"));
    let newer = SCHEMA_VERSION + 1;
    Connection::open(&path)
        .and_then(|connection| connection.pragma_update(None, "user_version", newer))
        .expect("a newer build's version");
    let error = refused(&path);
    assert!(
        matches!(
            error,
            OpenError::TooNew { found, supported, .. }
                if found == newer && supported == SCHEMA_VERSION
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("newer"), "{error}");
    assert_eq!(header_fields(&path).1, newer, "the version was changed");
}

#[test]
fn another_stores_file_is_refused_untouched() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    {
        let connection = Connection::open(&path).expect("creates");
        connection
            .execute_batch(
                "CREATE TABLE proposals (id TEXT PRIMARY KEY); \
                 PRAGMA application_id = 1396851024; PRAGMA user_version = 2;",
            )
            .expect("an approvals-like database (application id SBAP)");
    }
    let error = refused(&path);
    match &error {
        OpenError::ForeignDatabase {
            application_id,
            tables,
            ..
        } => {
            assert_eq!(*application_id, 0x5342_4150);
            assert_eq!(tables, "proposals");
        }
        other => panic!("expected ForeignDatabase, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("not a Switchboard roster database"),
        "{error}"
    );
    assert_eq!(header_fields(&path), (0x5342_4150, 2, "delete".to_owned()));
}

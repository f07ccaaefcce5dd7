//! Opening an audit database: a new file is created with the audit schema in WAL mode, a
//! reopened one keeps its records and migrates nothing, and a database damaged past its header
//! (found when the store counts its records) is refused with an `OpenError` naming the file and
//! the audit store. The refusals every store shares (garbage, another application's file, a
//! newer schema, a missing or unwritable directory) are tested once, in `switchboard-sqlite`.

use std::{fs, path::Path};

use rusqlite::Connection;
use switchboard_audit::{AuditQuery, AuditStore};
use switchboard_audit_sqlite::{APPLICATION_ID, OpenError, SCHEMA_VERSION, SqliteAuditStore};

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// The file's `user_version`, read with plain SQLite.
fn schema_version_in_file(path: &Path) -> i64 {
    Connection::open(path)
        .and_then(|connection| {
            connection.pragma_query_value(None, "user_version", |row| row.get(0))
        })
        .expect("the header reads with plain SQLite")
}

#[test]
fn a_missing_file_is_created_migrated_and_in_wal_mode() {
    let dir = scratch();
    let path = dir.path().join("audit.db");
    let store = SqliteAuditStore::open(&path).expect("a new database opens");
    assert!(path.is_file());
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    assert_eq!(store.stats().held, 0);
    drop(store);
    let connection = Connection::open(&path).expect("the file opens with plain SQLite");
    let application_id: i32 = connection
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .expect("application_id");
    let mode: String = connection
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .expect("journal_mode");
    assert_eq!(application_id, APPLICATION_ID);
    assert_eq!(schema_version_in_file(&path), SCHEMA_VERSION);
    assert_eq!(mode, "wal");
}

#[test]
fn reopening_migrates_nothing_and_keeps_the_records() {
    let dir = scratch();
    let path = dir.path().join("audit.db");
    let store = SqliteAuditStore::open(&path).expect("opens");
    let mut records = vec![crate::common::record("reopened"); 3];
    store.append_batch(&mut records).expect("appends");
    drop(store);
    for _ in 0..3 {
        let store = SqliteAuditStore::open(&path).expect("reopens");
        assert_eq!(
            store.stats().held,
            3,
            "held counts the records already there"
        );
        assert_eq!(store.stats().appended, 0, "appended counts since this open");
        let found = store.query(&AuditQuery::all()).expect("query");
        assert_eq!(found.len(), 3);
        drop(store);
        assert_eq!(schema_version_in_file(&path), SCHEMA_VERSION);
    }
}

#[test]
fn a_database_damaged_past_its_header_is_refused_as_corrupt() {
    let dir = scratch();
    let path = dir.path().join("audit.db");
    let store = SqliteAuditStore::open(&path).expect("opens");
    let mut records = vec![crate::common::record("damaged"); 2_000];
    store.append_batch(&mut records).expect("appends");
    drop(store);
    // Page 1 (the header and the schema) stays; every table and index page becomes garbage.
    let mut bytes = fs::read(&path).expect("the database");
    assert!(bytes.len() > 8_192, "the records fill several pages");
    for (offset, byte) in bytes.iter_mut().enumerate().skip(4_096) {
        *byte = (offset * 31 % 251) as u8;
    }
    fs::write(&path, &bytes).expect("damaged");
    let error = SqliteAuditStore::open(&path).expect_err("the store must refuse this file");
    assert!(matches!(error, OpenError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains(&path.display().to_string()));
    assert_eq!(error.path(), path);
    assert_eq!(error.store(), "audit");
}

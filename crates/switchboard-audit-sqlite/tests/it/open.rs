//! Opening an audit database: new files, reopened files, and every file the store must refuse
//! with a clear error naming it (never a panic, never a silent fallback), leaving it untouched.

use std::{fs, path::Path};

use rusqlite::Connection;
use switchboard_audit::{AuditQuery, AuditStore};
use switchboard_audit_sqlite::{APPLICATION_ID, OpenError, SCHEMA_VERSION, SqliteAuditStore};

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Opens `path` expecting a refusal, and checks the message names the file.
fn refused(path: &Path) -> OpenError {
    let error = SqliteAuditStore::open(path).expect_err("the store must refuse this file");
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()),
        "the message should name the file: {message}"
    );
    assert_eq!(error.path(), path);
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
    let path = dir.path().join("audit.db");
    let store = SqliteAuditStore::open(&path).expect("a new database opens");
    assert!(path.is_file());
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    assert_eq!(store.stats().held, 0);
    drop(store);
    assert_eq!(
        header_fields(&path),
        (APPLICATION_ID, SCHEMA_VERSION, "wal".to_owned())
    );
}

#[test]
fn an_empty_file_is_a_new_database() {
    let dir = scratch();
    let path = dir.path().join("audit.db");
    fs::write(&path, b"").expect("an empty file");
    let store = SqliteAuditStore::open(&path).expect("an empty file opens as a new database");
    assert!(store.query(&AuditQuery::all()).expect("query").is_empty());
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
        assert_eq!(header_fields(&path).1, SCHEMA_VERSION);
    }
}

#[test]
fn garbage_bytes_are_refused_as_corrupt_and_left_alone() {
    let dir = scratch();
    let path = dir.path().join("audit.db");
    let garbage: Vec<u8> = (0..10_000_u32).map(|n| (n * 7 + 3) as u8).collect();
    fs::write(&path, &garbage).expect("garbage written");
    let error = refused(&path);
    assert!(matches!(error, OpenError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("not a usable SQLite database"));
    assert_eq!(fs::read(&path).expect("still there"), garbage);
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
    let error = refused(&path);
    assert!(matches!(error, OpenError::Corrupt { .. }), "{error:?}");
}

#[test]
fn another_applications_database_is_refused_untouched() {
    let dir = scratch();
    let path = dir.path().join("app.db");
    {
        let connection = Connection::open(&path).expect("creates");
        connection
            .execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);")
            .expect("a foreign schema");
    }
    let error = refused(&path);
    match &error {
        OpenError::ForeignDatabase { tables, .. } => assert_eq!(tables, "users"),
        other => panic!("expected ForeignDatabase, got {other:?}"),
    }
    assert_eq!(
        header_fields(&path),
        (0, 0, "delete".to_owned()),
        "the foreign database must keep its journal mode and header"
    );
}

#[test]
fn a_database_with_another_application_id_is_refused() {
    let dir = scratch();
    let path = dir.path().join("other.db");
    {
        let connection = Connection::open(&path).expect("creates");
        connection
            .pragma_update(None, "application_id", 0x1234_5678)
            .expect("an application id");
    }
    let error = refused(&path);
    assert!(
        matches!(
            error,
            OpenError::ForeignDatabase {
                application_id: 0x1234_5678,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    let dir = scratch();
    let path = dir.path().join("audit.db");
    drop(SqliteAuditStore::open(&path).expect("opens"));
    {
        let connection = Connection::open(&path).expect("opens with plain SQLite");
        connection
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .expect("a future version");
    }
    let error = refused(&path);
    assert!(
        matches!(
            error,
            OpenError::TooNew { found, supported, .. }
                if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION
        ),
        "{error:?}"
    );
    assert_eq!(header_fields(&path).1, SCHEMA_VERSION + 1);
}

#[test]
fn a_missing_directory_is_named() {
    let dir = scratch();
    let path = dir.path().join("no-such-dir").join("audit.db");
    let error = refused(&path);
    match &error {
        OpenError::MissingDirectory { directory, .. } => {
            assert_eq!(directory, &dir.path().join("no-such-dir"));
        }
        other => panic!("expected MissingDirectory, got {other:?}"),
    }
    assert!(!path.exists(), "nothing is created");
}

#[test]
fn a_directory_is_not_a_database_file() {
    let dir = scratch();
    let error = refused(dir.path());
    assert!(matches!(error, OpenError::CannotOpen { .. }), "{error:?}");
}

/// A directory no process may create files in, whoever runs the test (root included).
#[cfg(target_os = "linux")]
#[test]
fn a_directory_nobody_can_write_to_is_refused() {
    let path = Path::new("/proc/self/audit.db");
    let error = refused(path);
    assert!(
        matches!(
            error,
            OpenError::CannotOpen { .. } | OpenError::ReadOnly { .. }
        ),
        "{error:?}"
    );
}

/// Permission bits: only meaningful when the test does not run as root (root ignores them).
#[cfg(unix)]
#[test]
fn a_read_only_directory_or_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;

    let dir = scratch();
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).expect("a directory");
    let existing = locked.join("existing.db");
    drop(SqliteAuditStore::open(&existing).expect("opens while writable"));
    fs::set_permissions(&existing, fs::Permissions::from_mode(0o444)).expect("chmod file");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).expect("chmod directory");
    let probe = locked.join("probe");
    let permissions_apply = fs::write(&probe, b"").is_err();
    if permissions_apply {
        let error = refused(&locked.join("new.db"));
        assert!(matches!(error, OpenError::CannotOpen { .. }), "{error:?}");
        let error = refused(&existing);
        assert!(
            matches!(
                error,
                OpenError::ReadOnly { .. } | OpenError::CannotOpen { .. }
            ),
            "{error:?}"
        );
    }
    // Let the temporary directory be removed.
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).expect("chmod back");
}

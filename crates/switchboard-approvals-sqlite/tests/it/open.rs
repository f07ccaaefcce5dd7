//! Opening: a new file is created and migrated in WAL mode; a reopened one keeps its data and
//! migrates nothing; a file the store cannot use (garbage, damage, another application's or
//! the audit store's database, a newer schema, a missing or unwritable directory) is refused
//! with an `OpenError` naming the file and the approvals store, never a panic or a silent
//! fallback, and is left untouched.

use std::{fs, path::Path};

use rusqlite::Connection;
use switchboard_approvals::ProposalStore;
use switchboard_approvals_sqlite::{APPLICATION_ID, ApprovalsDatabase, OpenError, SCHEMA_VERSION};

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Opens `path` expecting a refusal, and checks the message names the file and the store.
fn refused(path: &Path) -> OpenError {
    let error = ApprovalsDatabase::open(path).expect_err("the store must refuse this file");
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()),
        "the message should name the file: {message}"
    );
    assert_eq!(error.path(), path);
    assert_eq!(error.store(), "approvals");
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
    let path = dir.path().join("approvals.db");
    let database = ApprovalsDatabase::open(&path).expect("a new database opens");
    assert!(path.is_file());
    assert_eq!(database.schema_version(), SCHEMA_VERSION);
    assert!(
        database
            .proposal_store()
            .list(&"acme".into())
            .expect("readable")
            .is_empty()
    );
    drop(database);
    assert_eq!(
        header_fields(&path),
        (APPLICATION_ID, SCHEMA_VERSION, "wal".to_owned())
    );
    // Reopening migrates nothing.
    drop(ApprovalsDatabase::open(&path).expect("reopens"));
    assert_eq!(header_fields(&path).1, SCHEMA_VERSION);
}

#[test]
fn garbage_bytes_are_refused_as_corrupt_and_left_alone() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
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
    let path = dir.path().join("approvals.db");
    drop(ApprovalsDatabase::open(&path).expect("opens"));
    {
        // Fill some pages, then move the WAL into the file so the damage is not masked.
        let connection = Connection::open(&path).expect("opens with plain SQLite");
        connection
            .execute_batch(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) \
                 INSERT INTO idempotency_keys (org_id, idempotency_key, tool, params_digest, \
                 state, owner, claimed_at_ns, expires_at_ns) \
                 SELECT 'acme', 'key-' || i, 'tool', zeroblob(32), 'running', 'x', 0, 0 FROM n; \
                 PRAGMA wal_checkpoint(TRUNCATE);",
            )
            .expect("rows written");
    }
    let mut bytes = fs::read(&path).expect("the database");
    assert!(bytes.len() > 8_192, "the rows fill several pages");
    for (offset, byte) in bytes.iter_mut().enumerate().skip(4_096) {
        *byte = (offset * 31 % 251) as u8;
    }
    fs::write(&path, &bytes).expect("damaged");
    let error = refused(&path);
    assert!(matches!(error, OpenError::Corrupt { .. }), "{error:?}");
}

#[test]
fn an_audit_database_is_another_stores_file_and_is_refused_untouched() {
    let dir = scratch();
    let path = dir.path().join("audit.db");
    {
        let connection = Connection::open(&path).expect("creates");
        connection
            .execute_batch(
                "CREATE TABLE audit_records (id INTEGER PRIMARY KEY); \
                 PRAGMA application_id = 1396851029; PRAGMA user_version = 2;",
            )
            .expect("an audit-like database (application id SBAU)");
    }
    let error = refused(&path);
    match &error {
        OpenError::ForeignDatabase {
            application_id,
            tables,
            ..
        } => {
            assert_eq!(*application_id, 0x5342_4155);
            assert_eq!(tables, "audit_records");
        }
        other => panic!("expected ForeignDatabase, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("not a Switchboard approvals database")
    );
    assert_eq!(header_fields(&path), (0x5342_4155, 2, "delete".to_owned()));
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    drop(ApprovalsDatabase::open(&path).expect("opens"));
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
fn a_missing_directory_is_named_and_nothing_is_created() {
    let dir = scratch();
    let path = dir.path().join("no-such-dir").join("approvals.db");
    let error = refused(&path);
    match &error {
        OpenError::MissingDirectory { directory, .. } => {
            assert_eq!(directory, &dir.path().join("no-such-dir"));
        }
        other => panic!("expected MissingDirectory, got {other:?}"),
    }
    assert!(!path.exists());
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
    let path = Path::new("/proc/self/approvals.db");
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
    drop(ApprovalsDatabase::open(&existing).expect("opens while writable"));
    fs::set_permissions(&existing, fs::Permissions::from_mode(0o444)).expect("chmod file");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).expect("chmod directory");
    let permissions_apply = fs::write(locked.join("probe"), b"").is_err();
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
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).expect("chmod back");
}

//! Opening an approvals database: a new file is created with the approvals schema in WAL mode,
//! a reopened one migrates nothing, and the refusals that depend on the approvals store (a
//! database damaged past its header, found when the store counts its rows; the audit store's
//! database) come back as an `OpenError` naming the file and the approvals store. The refusals
//! every store shares (garbage, another application's file, a newer schema, a missing or
//! unwritable directory) are tested once, in `switchboard-sqlite`.

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

//! Files `open_database` refuses, each with an `OpenError` naming the file and the store (never
//! a panic, never a silent fallback) and, where the file exists, leaving it untouched: garbage
//! bytes, a database cut short, another application's database (or another store's: a different
//! application id), a newer schema, a missing directory, a directory, and a place this process
//! cannot write to. Pages damaged past the header pass `open_database`; the store's first read
//! meets them, and `OpenError::classify` names them corrupt.

use std::{fs, path::Path};

use rusqlite::Connection;
use switchboard_sqlite::{ConnectionSettings, OpenError, SharedConnection, conformance};

use crate::test_schema::{
    SCHEMA, SCHEMA_VERSION, STORE, assert_names_file_and_store, header_fields, open, refused,
    scratch,
};

#[test]
fn garbage_bytes_are_refused_as_corrupt_and_left_alone() {
    let dir = scratch();
    let path = dir.path().join("widgets.db");
    let garbage: Vec<u8> = (0..10_000_u32).map(|n| (n * 7 + 3) as u8).collect();
    fs::write(&path, &garbage).expect("garbage written");
    let error = refused(&path);
    assert!(matches!(error, OpenError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("not a usable SQLite database"));
    assert_eq!(fs::read(&path).expect("still there"), garbage);
}

/// A database of several pages, in the file itself (no WAL beside it).
fn database_of_several_pages(path: &Path) -> Vec<u8> {
    let connection = open(path).expect("opens");
    connection
        .execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) \
             INSERT INTO widgets (name) SELECT 'widget-' || i FROM n; \
             PRAGMA wal_checkpoint(TRUNCATE);",
        )
        .expect("rows written");
    drop(connection);
    let bytes = fs::read(path).expect("the database");
    assert!(bytes.len() > 8_192, "the rows fill several pages");
    bytes
}

#[test]
fn a_database_cut_short_after_its_header_is_refused_as_corrupt() {
    let dir = scratch();
    let path = dir.path().join("widgets.db");
    let bytes = database_of_several_pages(&path);
    fs::write(&path, &bytes[..4_096]).expect("only page 1 left");
    let error = refused(&path);
    assert!(matches!(error, OpenError::Corrupt { .. }), "{error:?}");
    assert_eq!(fs::read(&path).expect("still there"), bytes[..4_096]);
}

/// `open_database` reads only the header and the schema (page 1), so pages damaged past them
/// pass it; a store's first read of its tables at open (counting its rows,
/// `SharedConnection::first_read`) meets the damage, and [`OpenError::classify`] reports it as
/// `Corrupt`, naming the file, the store and what it was doing.
#[test]
fn damage_past_the_header_is_classified_as_corrupt_on_the_first_read() {
    let dir = scratch();
    let path = dir.path().join("widgets.db");
    let mut bytes = database_of_several_pages(&path);
    bytes[4_096..].fill(0xFF);
    fs::write(&path, &bytes).expect("every page past the first damaged");
    let database = SharedConnection::open(&path, &SCHEMA, ConnectionSettings::default())
        .expect("the header and the schema are intact");
    let error = database
        .first_read("counting its rows", |connection| {
            connection.query_row("SELECT count(*) FROM widgets", [], |row| {
                row.get::<_, i64>(0)
            })
        })
        .expect_err("the table pages are damaged");
    assert_names_file_and_store(&error, &path);
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
    assert!(
        matches!(
            &error,
            OpenError::ForeignDatabase { application_id: 0, tables, .. } if tables == "users"
        ),
        "{error:?}"
    );
    assert_eq!(
        header_fields(&path),
        (0, 0, "delete".to_owned()),
        "the foreign database must keep its journal mode and header"
    );
}

#[test]
fn a_database_with_another_application_id_and_no_tables_is_refused() {
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
    assert!(
        error
            .to_string()
            .contains(&format!("not a Switchboard {STORE} database"))
    );
    assert_eq!(header_fields(&path), (0x1234_5678, 0, "delete".to_owned()));
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    conformance::a_newer_file_is_refused_untouched(STORE, SCHEMA_VERSION, scratch().path(), open);
}

/// The check every store runs on its own `open`, here on the test store: another store's
/// database is refused untouched.
#[test]
fn another_stores_database_is_refused_untouched() {
    conformance::another_stores_file_is_refused_untouched(
        STORE,
        "proposals",
        0x5342_4150,
        scratch().path(),
        open,
    );
}

#[test]
fn a_missing_directory_is_named_and_nothing_is_created() {
    let dir = scratch();
    let path = dir.path().join("no-such-dir").join("widgets.db");
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
    let path = Path::new("/proc/self/widgets.db");
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
    drop(open(&existing).expect("opens while writable"));
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
    // Let the temporary directory be removed.
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).expect("chmod back");
}

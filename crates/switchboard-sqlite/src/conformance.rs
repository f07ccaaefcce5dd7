//! What every SQLite store's opening keeps, as checks each store's tests run on its own
//! `open` (feature `conformance`), and the helpers they read the file with.
//!
//! The refusals themselves are tested once, in this crate's tests, on a small test schema; a
//! store's tests run these checks to see that its `open` goes through
//! [`open_database`](crate::open_database) with its own schema: a file newer than the store's schema and a file
//! of another store are refused untouched, with an [`OpenError`] naming the file and the store.
//! Each check panics with what broke.

use std::path::Path;

use rusqlite::Connection;

use crate::error::OpenError;

/// The file's `application_id`, `user_version` and journal mode, read with plain SQLite.
pub fn header_fields(path: &Path) -> (i32, i64, String) {
    Connection::open(path)
        .and_then(|connection| {
            connection.query_row(
                "SELECT * FROM pragma_application_id, pragma_user_version, pragma_journal_mode",
                [],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
        })
        .expect("the header reads with plain SQLite")
}

/// Checks that `error` names the file, in its message and its fields, and `store`.
pub fn assert_names_file_and_store(error: &OpenError, path: &Path, store: &str) {
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string()),
        "the message should name the file: {message}"
    );
    assert_eq!(error.path(), path);
    assert_eq!(error.store(), store);
}

/// The refusal `opened` must be, checked to name the file at `path` and `store`.
pub fn refused<T>(opened: Result<T, OpenError>, path: &Path, store: &str) -> OpenError {
    let Err(error) = opened else {
        panic!(
            "the {store} store must refuse {}, and it opened",
            path.display()
        );
    };
    assert_names_file_and_store(&error, path, store);
    error
}

/// A file a newer build of the store wrote (its schema version past `version`, the store's)
/// is refused untouched, as [`OpenError::TooNew`].
pub fn a_newer_file_is_refused_untouched<T>(
    store: &str,
    version: i64,
    dir: &Path,
    open: impl Fn(&Path) -> Result<T, OpenError>,
) {
    let path = dir.join(format!("{store}.db"));
    drop(open(&path).expect("a new file opens"));
    let newer = version + 1;
    Connection::open(&path)
        .and_then(|connection| connection.pragma_update(None, "user_version", newer))
        .expect("a newer build's version");
    let error = refused(open(&path), &path, store);
    assert!(
        matches!(
            error,
            OpenError::TooNew { found, supported, .. } if found == newer && supported == version
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("newer"), "{error}");
    assert_eq!(header_fields(&path).1, newer, "the version was changed");
}

/// A database of another store (its table `table`, its `application_id`), or of another
/// application (`application_id` 0), is refused untouched, as [`OpenError::ForeignDatabase`]
/// naming its application id and tables: its header and journal mode stay as they were.
pub fn another_stores_file_is_refused_untouched<T>(
    store: &str,
    table: &str,
    application_id: i32,
    dir: &Path,
    open: impl FnOnce(&Path) -> Result<T, OpenError>,
) {
    let path = dir.join("other.db");
    Connection::open(&path)
        .and_then(|connection| {
            connection.execute_batch(&format!("CREATE TABLE {table} (id TEXT PRIMARY KEY);"))?;
            connection.pragma_update(None, "application_id", application_id)?;
            connection.pragma_update(None, "user_version", 1)
        })
        .expect("another store's database");
    let error = refused(open(&path), &path, store);
    match &error {
        OpenError::ForeignDatabase {
            application_id: found,
            tables,
            ..
        } => {
            assert_eq!(*found, application_id);
            assert_eq!(tables, table);
        }
        other => panic!("expected ForeignDatabase, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains(&format!("not a Switchboard {store} database")),
        "{error}"
    );
    assert_eq!(
        header_fields(&path),
        (application_id, 1, "delete".to_owned()),
        "the other database was changed"
    );
}

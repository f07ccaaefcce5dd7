//! Opening a roster database: a missing or empty file is made at the latest schema in WAL
//! mode, a reopened one migrates nothing, and a file newer than this build or of another store
//! is refused untouched, with an `OpenError` naming the file and the roster store (the checks
//! of `switchboard_sqlite::conformance`). The refusals every store shares (garbage, a missing or
//! unwritable directory) are tested once, in `switchboard-sqlite`.

use std::fs;

use rusqlite::Connection;
use switchboard_domain_roster::{RosterBook, RosterStore};
use switchboard_roster_sqlite::{APPLICATION_ID, SCHEMA_VERSION, SqliteRosterStore};
use switchboard_sqlite::conformance::{self, header_fields};

use crate::common::acme;

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
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
    conformance::a_newer_file_is_refused_untouched(
        "roster",
        SCHEMA_VERSION,
        scratch().path(),
        |path| SqliteRosterStore::open(path),
    );
}

#[test]
fn another_stores_file_is_refused_untouched() {
    // An approvals database (application id SBAP).
    conformance::another_stores_file_is_refused_untouched(
        "roster",
        "proposals",
        0x5342_4150,
        scratch().path(),
        |path| SqliteRosterStore::open(path),
    );
}

//! Files `open_database` accepts: a missing or empty file becomes a new database, migrated and
//! in WAL mode; a reopened one keeps its rows and migrates nothing; one at an older schema
//! version gets only the migrations it lacks, and a failing migration leaves it where it was;
//! a `SharedConnection` on it describes a failed operation naming the store and the file.

use std::{fs, path::Path};

use switchboard_sqlite::{ConnectionSettings, Migration, OpenError, Schema, SharedConnection};

use crate::test_schema::{
    APPLICATION_ID, MIGRATIONS, SCHEMA, SCHEMA_VERSION, STORE, assert_names_file_and_store,
    header_fields, open, scratch,
};

fn widget_names(connection: &rusqlite::Connection) -> Vec<String> {
    let mut statement = connection
        .prepare("SELECT name FROM widgets ORDER BY id")
        .expect("the widgets table exists");
    statement
        .query_map([], |row| row.get(0))
        .expect("readable")
        .collect::<rusqlite::Result<_>>()
        .expect("readable")
}

/// Opens `path` expecting a new database: migrated, empty, in WAL mode.
fn assert_opens_as_a_new_database(path: &Path) {
    let connection = open(path).expect("a new database opens");
    assert!(path.is_file());
    assert!(widget_names(&connection).is_empty());
    drop(connection);
    assert_eq!(
        header_fields(path),
        (APPLICATION_ID, SCHEMA_VERSION, "wal".to_owned())
    );
}

#[test]
fn a_missing_file_is_created_migrated_and_in_wal_mode() {
    let dir = scratch();
    assert_opens_as_a_new_database(&dir.path().join("widgets.db"));
}

#[test]
fn an_empty_file_is_a_new_database() {
    let dir = scratch();
    let path = dir.path().join("widgets.db");
    fs::write(&path, b"").expect("an empty file");
    assert_opens_as_a_new_database(&path);
}

#[test]
fn reopening_migrates_nothing_and_keeps_the_rows() {
    let dir = scratch();
    let path = dir.path().join("widgets.db");
    let connection = open(&path).expect("opens");
    connection
        .execute_batch("INSERT INTO widgets (name) VALUES ('bolt'), ('nut'), ('washer');")
        .expect("rows written");
    drop(connection);
    for _ in 0..3 {
        // Running a migration again would fail: its table or index already exists.
        let connection = open(&path).expect("reopens");
        assert_eq!(widget_names(&connection), ["bolt", "nut", "washer"]);
        drop(connection);
        assert_eq!(header_fields(&path).1, SCHEMA_VERSION);
    }
}

#[test]
fn an_older_schema_gets_only_the_migrations_it_lacks() {
    let dir = scratch();
    let path = dir.path().join("widgets.db");
    let first_only = Schema {
        store: STORE,
        application_id: APPLICATION_ID,
        migrations: &MIGRATIONS[..1],
    };
    let connection =
        switchboard_sqlite::open_database(&path, &first_only, Default::default()).expect("opens");
    connection
        .execute("INSERT INTO widgets (name) VALUES ('bolt')", [])
        .expect("a row written");
    drop(connection);
    assert_eq!(header_fields(&path).1, 1);

    let connection = open(&path).expect("the older file opens and is migrated");
    assert_eq!(widget_names(&connection), ["bolt"]);
    let indexed: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'widgets_by_name'",
            [],
            |row| row.get(0),
        )
        .expect("the schema is readable");
    assert_eq!(indexed, 1, "the second migration ran");
    drop(connection);
    assert_eq!(
        header_fields(&path),
        (APPLICATION_ID, SCHEMA_VERSION, "wal".to_owned())
    );
}

#[test]
fn a_failing_migration_leaves_the_file_at_its_last_complete_version() {
    static BROKEN: [Migration; 2] = [
        Migration {
            description: "create the widgets table",
            sql: "CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
        },
        Migration {
            description: "index a table that does not exist",
            sql: "CREATE TABLE gadgets (id INTEGER PRIMARY KEY); \
                  CREATE INDEX sprockets_by_name ON sprockets (name);",
        },
    ];
    let broken = Schema {
        store: STORE,
        application_id: APPLICATION_ID,
        migrations: &BROKEN,
    };
    let dir = scratch();
    let path = dir.path().join("widgets.db");
    let error = switchboard_sqlite::open_database(&path, &broken, Default::default())
        .expect_err("the second migration fails");
    assert_names_file_and_store(&error, &path);
    assert!(
        matches!(error, OpenError::Migration { from: 1, to: 2, .. }),
        "{error:?}"
    );
    assert_eq!(header_fields(&path).1, 1);
    // The failed migration's first statement was rolled back with it.
    let connection = open(&path).expect("the file opens at version 1 and migrates on");
    let gadgets: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'gadgets'",
            [],
            |row| row.get(0),
        )
        .expect("the schema is readable");
    assert_eq!(gadgets, 0);
}

/// A prepared statement keeps its plan whatever values are bound to it: SQLite would otherwise
/// re-prepare some statements on every new value (a `max` over an index, as a store numbers
/// its rows), which costs as much as running them.
#[test]
fn statements_keep_their_plan_whatever_is_bound() {
    let dir = scratch();
    let path = dir.path().join("widgets.db");
    let writer = open(&path).expect("a new database opens");
    let reader = switchboard_sqlite::open_reader(&path, std::time::Duration::from_secs(1))
        .expect("a reader opens");
    let next_id = "SELECT coalesce(max(id), 0) + 1 FROM widgets WHERE name = ?1";
    for connection in [&writer, &reader] {
        for round in 0..5 {
            let name = format!("widget {round}");
            let id: i64 = connection
                .prepare_cached(next_id)
                .expect("prepares")
                .query_row([&name], |row| row.get(0))
                .expect("runs");
            writer
                .execute(
                    "INSERT INTO widgets (id, name) VALUES (?1 + 100 * ?3, ?2)",
                    rusqlite::params![id, name, round],
                )
                .expect("inserts");
        }
        let statement = connection.prepare_cached(next_id).expect("cached");
        assert_eq!(
            statement.get_status(rusqlite::StatementStatus::RePrepare),
            0,
            "re-prepared on a new value"
        );
    }
}

/// A store's operations share one connection; a failed one is logged and described with
/// SQLite's error, the store and the file.
#[test]
fn a_shared_connection_names_the_store_and_the_file_of_a_failure() {
    let dir = scratch();
    let path = dir.path().join("widgets.db");
    let database = SharedConnection::open(&path, &SCHEMA, ConnectionSettings::default())
        .expect("a new file opens");
    assert_eq!((database.store(), database.path()), (STORE, path.as_path()));
    let widgets: i64 = database
        .first_read("counting its rows", |connection| {
            connection.query_row("SELECT count(*) FROM widgets", [], |row| row.get(0))
        })
        .expect("the table is readable");
    assert_eq!(widgets, 0);
    let error = database
        .connection()
        .execute("INSERT INTO gadgets (name) VALUES ('x')", [])
        .expect_err("there is no such table");
    let reason = database.failure("storing a gadget", &error);
    assert_eq!(
        reason,
        format!("{error} (widgets database {})", path.display())
    );
}

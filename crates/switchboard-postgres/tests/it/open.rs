//! Opening a store's database: migrations from empty and from each earlier version, a newer
//! schema refused, and the startup faults an operator meets (a wrong password, a server that
//! is not there, a database that does not exist), each one line without the password.

use std::time::Duration;

use switchboard_postgres::{Database, Migration, OpenError, PostgresOptions, Schema};
use switchboard_test_postgres::{TestDatabase, test_database};

static NOTES: Schema = Schema {
    store: "notes",
    migrations: &[
        Migration {
            description: "the notes table",
            sql: "CREATE TABLE notes_items (id BIGSERIAL PRIMARY KEY, text TEXT NOT NULL)",
        },
        Migration {
            description: "a notes author",
            sql: "ALTER TABLE notes_items ADD COLUMN author TEXT NOT NULL DEFAULT 'nobody'",
        },
    ],
};

/// The same store, one migration shorter: an older binary.
static OLDER_NOTES: Schema = Schema {
    store: "notes",
    migrations: &[Migration {
        description: "the notes table",
        sql: "CREATE TABLE notes_items (id BIGSERIAL PRIMARY KEY, text TEXT NOT NULL)",
    }],
};

pub(crate) fn fresh() -> TestDatabase {
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(test_database())
        .expect("a test database (run through `cargo xtask test`)")
}

fn version(database: &Database) -> i64 {
    database
        .call(|client| async move { switchboard_postgres::schema_version(&client, "notes").await })
        .expect("version")
}

#[test]
fn an_empty_database_is_migrated_to_the_latest_version() {
    let test = fresh();
    let database = Database::open(&PostgresOptions::new(test.url()), &NOTES).expect("open");
    assert_eq!(version(&database), 2);
    let author: String = database
        .call(|client| async move {
            let row = client
                .query_one(
                    "INSERT INTO notes_items (text) VALUES ('hi') RETURNING author",
                    &[],
                )
                .await?;
            Ok(row.get(0))
        })
        .expect("insert");
    assert_eq!(author, "nobody");
    // Opening again changes nothing.
    let again = Database::open(&PostgresOptions::new(test.url()), &NOTES).expect("reopen");
    assert_eq!(version(&again), 2);
}

#[test]
fn every_earlier_version_is_migrated_forward_keeping_rows() {
    for start in 0..=NOTES.version() {
        let test = fresh();
        let options = PostgresOptions::new(test.url());
        let old = Database::open_at(&options, &NOTES, start).expect("open at an older version");
        assert_eq!(version(&old), start);
        if start >= 1 {
            old.call(|client| async move {
                client
                    .execute("INSERT INTO notes_items (text) VALUES ('kept')", &[])
                    .await?;
                Ok(())
            })
            .expect("a row at the old version");
        }
        let new = Database::open(&options, &NOTES).expect("migrate forward");
        assert_eq!(version(&new), 2, "from version {start}");
        let rows: i64 = new
            .call(|client| async move {
                Ok(client
                    .query_one("SELECT count(*) FROM notes_items", &[])
                    .await?
                    .get(0))
            })
            .expect("count");
        assert_eq!(rows, i64::from(start >= 1), "from version {start}");
    }
}

#[test]
fn a_database_newer_than_the_binary_is_refused_untouched() {
    let test = fresh();
    let options = PostgresOptions::new(test.url());
    Database::open(&options, &NOTES).expect("the newer binary migrates");
    let error = Database::open(&options, &OLDER_NOTES).expect_err("the older binary refuses");
    assert!(
        matches!(
            error,
            OpenError::TooNew {
                found: 2,
                supported: 1,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("newer than this binary's 1"), "{message}");
}

#[test]
fn nodes_opening_a_new_database_together_migrate_it_once() {
    let test = fresh();
    let url = test.url().to_owned();
    let opened: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|_| scope.spawn(|| Database::open(&PostgresOptions::new(url.clone()), &NOTES)))
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("no panic"))
            .collect()
    });
    for database in &opened {
        assert_eq!(version(database.as_ref().expect("every node opens")), 2);
    }
}

#[test]
fn a_wrong_password_is_one_line_without_the_password() {
    let test = fresh();
    // The test database's URL with its password replaced by a wrong one.
    let (scheme, rest) = test.url().split_once("://").expect("scheme");
    let (credentials, tail) = rest.rsplit_once('@').expect("credentials");
    let user = credentials.split(':').next().expect("user");
    let wrong = format!("{scheme}://{user}:Wr0ngPassw0rd@{tail}");
    let error = Database::open(&PostgresOptions::new(&wrong), &NOTES).expect_err("refused");
    assert!(
        matches!(error, OpenError::Authentication { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(!message.contains("Wr0ngPassw0rd"), "{message}");
    assert!(!message.contains('\n'), "{message}");
}

#[test]
fn a_server_that_is_not_there_is_reported_quickly() {
    // A port nothing listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let url = format!("postgres://switchboard:s3cret@127.0.0.1:{port}/postgres");
    let started = std::time::Instant::now();
    let error = Database::open(
        &PostgresOptions::new(&url).with_connect_timeout(Duration::from_secs(2)),
        &NOTES,
    )
    .expect_err("nothing there");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(matches!(error, OpenError::Unreachable { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(!message.contains("s3cret"), "{message}");
}

#[test]
fn a_database_that_does_not_exist_is_named() {
    let test = fresh();
    let (server, _) = test.url().rsplit_once('/').expect("a database in the url");
    let url = format!("{server}/no_such_database_here");
    let error = Database::open(&PostgresOptions::new(url), &NOTES).expect_err("missing");
    assert!(
        matches!(error, OpenError::MissingDatabase { .. }),
        "{error:?}"
    );
}

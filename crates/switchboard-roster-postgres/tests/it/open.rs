//! Opening: the table is made from an empty database and from every earlier version, and a
//! database newer than this build is refused with a clear message.

use switchboard_roster_postgres::{PostgresOptions, PostgresRosterStore, SCHEMA_VERSION};

use crate::common::fresh_database;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrates_from_every_earlier_version() {
    for from in 0..=SCHEMA_VERSION {
        let test = fresh_database().await;
        let options = PostgresOptions::new(test.url());
        PostgresRosterStore::open_at(&options, from)
            .unwrap_or_else(|error| panic!("opens at version {from}: {error}"));
        PostgresRosterStore::open_with(&options)
            .unwrap_or_else(|error| panic!("migrates from version {from}: {error}"));
        let client = test.connect().await.expect("a client");
        let version: i64 = client
            .query_one(
                "SELECT version FROM switchboard_schema WHERE store = 'roster'",
                &[],
            )
            .await
            .expect("the roster's row")
            .get(0);
        assert_eq!(version, SCHEMA_VERSION, "from version {from}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_newer_than_this_build_is_refused() {
    let test = fresh_database().await;
    PostgresRosterStore::open(test.url()).expect("opens");
    let client = test.connect().await.expect("a client");
    client
        .execute(
            "UPDATE switchboard_schema SET version = version + 1 WHERE store = 'roster'",
            &[],
        )
        .await
        .expect("a newer version");
    let error = PostgresRosterStore::open(test.url()).expect_err("a newer database");
    let message = error.to_string();
    assert!(
        message.contains("roster") && message.contains("newer"),
        "{message}"
    );
}

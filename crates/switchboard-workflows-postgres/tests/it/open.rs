//! Opening the store: an empty database is migrated to the latest version, every earlier
//! version is migrated forward keeping its rows, and a database of a newer build is refused
//! with a message that says so.

use switchboard_postgres::{Database, OpenError, schema_version};
use switchboard_workflows::RunStore;
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore, SCHEMA_VERSION};

use crate::common::{fresh_database, run};

fn version(database: &Database) -> i64 {
    database
        .call(|client| async move { schema_version(&client, "workflows").await })
        .expect("the version reads")
}

#[test]
fn an_empty_database_is_migrated_to_the_latest_version() {
    let test = fresh_database();
    let store = PostgresRunStore::open(&PostgresOptions::new(test.url())).expect("opens");
    assert_eq!(version(store.database()), SCHEMA_VERSION);
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    assert!(store.unfinished_runs().expect("readable").is_empty());
    let again = PostgresRunStore::open(&PostgresOptions::new(test.url())).expect("reopens");
    assert_eq!(version(again.database()), SCHEMA_VERSION);
}

#[test]
fn every_earlier_version_is_migrated_forward_keeping_its_runs() {
    for start in 0..SCHEMA_VERSION {
        let test = fresh_database();
        let options = PostgresOptions::new(test.url());
        let old = PostgresRunStore::open_at(&options, start).expect("opens at an older version");
        assert_eq!(version(old.database()), start);
        // From version 1 on there are runs to keep.
        let kept = run("acme");
        if start >= 1 {
            old.create_run(&kept).expect("a run at the old version");
        }
        drop(old);
        let new = PostgresRunStore::open(&options).expect("migrates forward");
        assert_eq!(
            version(new.database()),
            SCHEMA_VERSION,
            "from version {start}"
        );
        if start >= 1 {
            assert_eq!(
                new.run(kept.id).expect("readable"),
                Some(kept),
                "from version {start}"
            );
        }
        let created = run("acme");
        new.create_run(&created)
            .expect("the latest schema takes runs");
    }
}

#[test]
fn a_database_newer_than_the_binary_is_refused() {
    let test = fresh_database();
    let options = PostgresOptions::new(test.url());
    let store = PostgresRunStore::open(&options).expect("opens");
    let newer = SCHEMA_VERSION + 1;
    store
        .database()
        .call(move |client| async move {
            client
                .execute(
                    "UPDATE switchboard_schema SET version = $1 WHERE store = 'workflows'",
                    &[&newer],
                )
                .await?;
            Ok(())
        })
        .expect("a newer build's version");
    let error = PostgresRunStore::open(&options).expect_err("refused");
    match &error {
        OpenError::TooNew {
            found, supported, ..
        } => {
            assert_eq!(*found, newer);
            assert_eq!(*supported, SCHEMA_VERSION);
        }
        other => panic!("expected TooNew, got {other:?}"),
    }
    assert!(error.to_string().contains("workflows"), "{error}");
}

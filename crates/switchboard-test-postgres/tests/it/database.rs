//! Fresh databases on the shared server `cargo xtask test` starts (`SWITCHBOARD_TEST_POSTGRES_URL`).

use std::time::Instant;

use switchboard_test_postgres::{DATABASE_PREFIX, test_database};
use tokio_postgres::Client;

async fn databases(client: &Client) -> Vec<String> {
    client
        .query(
            "SELECT datname::text FROM pg_database WHERE datname LIKE 'sb\\_test\\_%'",
            &[],
        )
        .await
        .expect("the databases are listed")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test]
#[allow(
    clippy::print_stderr,
    reason = "the time it takes, for `--no-capture` runs and the docs"
)]
async fn each_test_database_is_fresh_and_apart() {
    let started = Instant::now();
    let first = test_database()
        .await
        .expect("a database on the shared server (run through `cargo xtask test`)");
    eprintln!("test_database took {:?}", started.elapsed());
    let second = test_database().await.expect("a second database");
    assert_ne!(first.name(), second.name());
    assert!(first.name().starts_with(DATABASE_PREFIX));

    let one = first.connect().await.expect("the first database answers");
    one.batch_execute("CREATE TABLE only_here (id INT)")
        .await
        .expect("a table is created");
    let two = second.connect().await.expect("the second database answers");
    let tables: i64 = two
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
            &[],
        )
        .await
        .expect("the tables are counted")
        .get(0);
    assert_eq!(
        tables, 0,
        "the second database does not see the first's table"
    );
}

#[tokio::test]
async fn a_test_database_is_dropped_with_its_value() {
    let database = test_database()
        .await
        .expect("a database on the shared server");
    let name = database.name().to_owned();
    let watcher = test_database().await.expect("a database to watch from");
    let client = watcher.connect().await.expect("the server answers");
    let open = database.connect().await.expect("the database answers");
    assert!(databases(&client).await.contains(&name));

    drop(database);
    assert!(
        !databases(&client).await.contains(&name),
        "{name} outlives its value"
    );
    assert!(
        open.simple_query("SELECT 1").await.is_err(),
        "its open connection is closed"
    );
}

//! A private cluster: a real server that asks for the password and keeps committed data across
//! an immediate stop.

use std::time::Instant;

use switchboard_test_postgres::{TestCluster, TestDatabase};
use tokio_postgres::{Client, NoTls};

async fn connect(url: &str) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(connection);
    Ok(client)
}

#[tokio::test]
#[allow(
    clippy::print_stderr,
    reason = "the time it takes, for `--no-capture` runs and the docs"
)]
async fn a_cluster_takes_its_password_and_refuses_another() {
    let started = Instant::now();
    let cluster = TestCluster::start().expect("a cluster starts");
    eprintln!("TestCluster::start took {:?}", started.elapsed());
    let client = connect(&cluster.url())
        .await
        .expect("the right password connects");
    let user: String = client
        .query_one("SELECT current_user::text", &[])
        .await
        .expect("a query runs")
        .get(0);
    assert_eq!(user, "switchboard");

    let wrong = cluster
        .url()
        .replace(cluster.password(), "not-the-password");
    let refused = connect(&wrong)
        .await
        .expect_err("a wrong password is refused");
    let sqlstate = refused
        .as_db_error()
        .map(|error| error.code().code().to_owned());
    assert_eq!(
        sqlstate.as_deref(),
        Some("28P01"),
        "expected invalid_password, got {refused}"
    );
}

#[tokio::test]
async fn the_server_listens_on_loopback_only_and_has_room_for_many_connections() {
    let cluster = TestCluster::start().expect("a cluster starts");
    let client = connect(&cluster.url()).await.expect("the cluster answers");
    for (setting, wanted) in [
        ("listen_addresses", "127.0.0.1"),
        ("max_connections", "300"),
    ] {
        let value: String = client
            .query_one("SELECT current_setting($1)", &[&setting])
            .await
            .expect("a setting is read")
            .get(0);
        assert_eq!(value, wanted, "{setting}");
    }
    let port: String = client
        .query_one("SELECT current_setting('port')", &[])
        .await
        .expect("the port is read")
        .get(0);
    assert_eq!(port, cluster.port().to_string());
}

#[tokio::test]
async fn committed_data_survives_an_immediate_stop() {
    let mut cluster = TestCluster::start().expect("a cluster starts");
    let client = connect(&cluster.url()).await.expect("the cluster answers");
    client
        .batch_execute("CREATE TABLE kept (id INT PRIMARY KEY); INSERT INTO kept VALUES (1), (2)")
        .await
        .expect("the rows are committed");

    cluster.stop_immediate().expect("the server stops at once");
    assert!(!cluster.is_running());
    assert!(
        connect(&cluster.url()).await.is_err(),
        "a stopped server refuses connections"
    );
    assert!(
        client.simple_query("SELECT 1").await.is_err(),
        "an open connection breaks"
    );

    let port = cluster.port();
    cluster.start_again().expect("the server starts again");
    assert_eq!(cluster.port(), port, "the same port");
    let client = connect(&cluster.url())
        .await
        .expect("the server answers again");
    let count: i64 = client
        .query_one("SELECT count(*) FROM kept", &[])
        .await
        .expect("the table is still there")
        .get(0);
    assert_eq!(count, 2);
}

#[test]
fn dropping_the_cluster_stops_it_and_deletes_its_directory() {
    let cluster = TestCluster::start().expect("a cluster starts");
    let data_dir = cluster.data_dir();
    let port = cluster.port();
    assert!(data_dir.join("PG_VERSION").is_file());
    drop(cluster);
    assert!(!data_dir.exists(), "{} is left behind", data_dir.display());
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens on {port} any more"
    );
}

#[tokio::test]
async fn a_private_cluster_gives_test_databases_too() {
    let cluster = TestCluster::start().expect("a cluster starts");
    let database = TestDatabase::create(&cluster.url())
        .await
        .expect("a database is created");
    assert!(database.url().starts_with(&cluster.url_for("sb_test_")));
    let client = database.connect().await.expect("the database answers");
    let name: String = client
        .query_one("SELECT current_database()::text", &[])
        .await
        .expect("a query runs")
        .get(0);
    assert_eq!(name, database.name());
}

//! The PostgreSQL store keeps the contract every roster store keeps: the unchanged suite of
//! `switchboard_domain_roster::conformance`, each check on an emptied table.

use switchboard_domain_roster::conformance;
use switchboard_roster_postgres::PostgresRosterStore;

use crate::common::fresh_database;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_keeps_the_roster_store_contract() {
    let test = fresh_database().await;
    let client = test.connect().await.expect("a client");
    conformance::run_all(|| async {
        let store = PostgresRosterStore::open(test.url()).expect("the roster table opens");
        client
            .execute("TRUNCATE roster_orgs", &[])
            .await
            .expect("the table empties");
        store
    })
    .await;
}

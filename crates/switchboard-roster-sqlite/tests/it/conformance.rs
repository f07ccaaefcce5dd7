//! The SQLite store keeps the contract every roster store keeps: the unchanged suite of
//! `switchboard_domain_roster::conformance`, each check on a new file.

use switchboard_domain_roster::conformance;

use crate::common::TempStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_store_keeps_the_roster_store_contract() {
    conformance::run_all(|| async { TempStore::new() }).await;
}

/// The suite again on a current-thread runtime: the store's operations run on the blocking
/// pool, so a change waiting for the file never stalls the only worker.
#[tokio::test(flavor = "current_thread")]
async fn the_contract_holds_on_a_current_thread_runtime() {
    conformance::run_all(|| async { TempStore::new() }).await;
}

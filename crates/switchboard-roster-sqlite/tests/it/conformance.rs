//! The SQLite store keeps the contract every roster store keeps: the unchanged suite of
//! `switchboard_domain_roster::conformance`, each check on a new file.

use std::sync::atomic::{AtomicUsize, Ordering};

use switchboard_domain_roster::conformance;
use switchboard_roster_sqlite::SqliteRosterStore;

/// Runs the suite, each check on a new file in one temporary directory.
async fn run_all() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let files = AtomicUsize::new(0);
    conformance::run_all(|| async {
        let file = files.fetch_add(1, Ordering::Relaxed);
        SqliteRosterStore::open(dir.path().join(format!("roster-{file}.db")))
            .expect("a new file opens")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_store_keeps_the_roster_store_contract() {
    run_all().await;
}

/// The suite again on a current-thread runtime: the store's operations run on the blocking
/// pool, so a change waiting for the file never stalls the only worker.
#[tokio::test(flavor = "current_thread")]
async fn the_contract_holds_on_a_current_thread_runtime() {
    run_all().await;
}

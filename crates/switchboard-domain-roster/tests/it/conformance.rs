//! The in-memory roster store keeps the store contract every roster store keeps.

use switchboard_domain_roster::{MemoryRosterStore, conformance};

#[tokio::test]
async fn the_memory_store_keeps_the_roster_store_contract() {
    conformance::run_all(|| async { MemoryRosterStore::new() }).await;
}

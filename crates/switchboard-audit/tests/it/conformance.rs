//! The store conformance suite against the in-memory table, the default store: the same checks
//! every persistent store passes (`switchboard_audit::conformance`).

use std::sync::Arc;

use switchboard_audit::MemoryAuditStore;

switchboard_audit::audit_store_conformance!(|| Arc::new(MemoryAuditStore::new()));

/// The suite's capacity assumption holds for the default table.
#[test]
fn the_default_table_is_large_enough_for_the_suite() {
    assert!(MemoryAuditStore::new().capacity() >= switchboard_audit::conformance::MIN_CAPACITY);
}

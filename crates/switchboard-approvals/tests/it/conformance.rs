//! The store conformance suites against the in-memory stores, the defaults: the same checks
//! every persistent store passes (`switchboard_approvals::conformance`).

use std::sync::Arc;

use switchboard_approvals::{MemoryIdempotencyStore, MemoryProposalStore};

switchboard_approvals::proposal_store_conformance!(|| Arc::new(MemoryProposalStore::new()));

switchboard_approvals::idempotency_store_conformance!(|retention| {
    Arc::new(MemoryIdempotencyStore::new(retention))
});

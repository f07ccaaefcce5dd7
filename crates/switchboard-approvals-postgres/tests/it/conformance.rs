//! The store conformance suites (`switchboard_approvals::conformance`) against the PostgreSQL
//! stores, on a fresh database per store: the same checks the in-memory and SQLite stores
//! pass, unchanged.

use crate::common::{TempKeys, TempProposals};

switchboard_approvals::proposal_store_conformance!(TempProposals::fresh);

switchboard_approvals::idempotency_store_conformance!(TempKeys::fresh);

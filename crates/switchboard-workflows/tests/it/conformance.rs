//! The run store conformance suite against the in-memory store, the reference: the same checks
//! every persistent store passes (`switchboard_workflows::conformance`).

use std::sync::Arc;

use switchboard_workflows::MemoryRunStore;

switchboard_workflows::run_store_conformance!(|| Arc::new(MemoryRunStore::new()));

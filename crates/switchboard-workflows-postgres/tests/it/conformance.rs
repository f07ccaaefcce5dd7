//! The run store conformance suite (`switchboard_workflows::conformance`) against the
//! PostgreSQL store, on a fresh database per check: the same checks the in-memory and SQLite
//! stores pass, unchanged.

use crate::common::fresh_store;

switchboard_workflows::run_store_conformance!(fresh_store);

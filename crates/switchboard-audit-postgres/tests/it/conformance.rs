//! The store conformance suite (`switchboard_audit::conformance`) against the PostgreSQL store,
//! on a fresh database per check: the same checks the in-memory table and the SQLite store pass,
//! unchanged.

use crate::common::fresh_store;

switchboard_audit::audit_store_conformance!(fresh_store);

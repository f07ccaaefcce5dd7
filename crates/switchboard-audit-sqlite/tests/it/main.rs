//! The SQLite audit store's integration tests, in one test binary: opening files, the
//! conformance suite, durability under a kill, migration of earlier schema versions, and the
//! store against the in-memory table as a model.

mod common;

mod conformance;
mod durability;
mod migration;
mod model;
mod open;

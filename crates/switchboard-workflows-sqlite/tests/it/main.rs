//! The SQLite run store's integration tests, in one test binary: the conformance suite,
//! opening files (and refusing the wrong ones), and durability across reopening.

mod common;

mod conformance;
mod durability;
mod open;

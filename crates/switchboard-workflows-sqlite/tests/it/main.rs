//! The SQLite run store's integration tests, in one test binary: the conformance suite,
//! opening files (and refusing the wrong ones), durability across reopening, two stores on
//! one file, and failing closed.

mod common;

mod conformance;
mod durability;
mod open;

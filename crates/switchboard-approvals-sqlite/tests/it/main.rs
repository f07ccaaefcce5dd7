//! The SQLite approval stores' integration tests, in one test binary: opening files, the
//! conformance suites, durability across restarts and processes, and the real registry on
//! these stores.

mod common;

mod conformance;
mod durability;
mod open;
mod registry;

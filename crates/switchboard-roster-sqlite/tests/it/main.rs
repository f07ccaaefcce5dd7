//! The SQLite roster store's integration tests, in one test binary: the store contract on a
//! real file, opening and migrating files, two store values on one file (two processes' view),
//! what a panicking change leaves, and the real registry on the store in two processes.

mod common;

mod changes;
mod conformance;
mod open;
mod processes;
mod registry;

//! The PostgreSQL audit store's integration tests, in one test binary, against a real server:
//! the shared one `cargo xtask test` starts (`SWITCHBOARD_TEST_POSTGRES_URL`, a fresh database
//! per test), and a private cluster for the tests that stop the server.
//!
//! The conformance suite, a batch stored once per key, migrations, two stores on one database (two nodes), the server
//! stopped mid-use and mid-load, a NUL in a value, and the store against the in-memory table as a model.

mod common;

mod batch_keys;
mod conformance;
mod faults;
mod migration;
mod model;
mod nodes;
mod values;

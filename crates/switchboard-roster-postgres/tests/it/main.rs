//! The PostgreSQL roster store's integration tests, in one test binary, on the test server
//! (`SWITCHBOARD_TEST_POSTGRES_URL`, started by `cargo xtask test`): the store contract, the
//! migrations, and the store under two registries sharing one database.

mod common;

mod conformance;
mod keys;
mod open;
mod registry;

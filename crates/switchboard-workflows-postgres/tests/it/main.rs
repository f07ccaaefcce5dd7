//! The PostgreSQL run store's integration tests, in one test binary: the conformance suite,
//! migrations and refusals at open, two stores on one database (two nodes), and a server that
//! stops mid-use. Each test makes a fresh database on the server `cargo xtask test` starts
//! (`SWITCHBOARD_TEST_POSTGRES_URL`).

mod common;

mod conformance;
mod nodes;
mod open;
mod outage;

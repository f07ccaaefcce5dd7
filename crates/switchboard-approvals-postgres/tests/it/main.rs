//! The PostgreSQL approval stores' integration tests, in one test binary, each on a fresh
//! database of the test server (`SWITCHBOARD_TEST_POSTGRES_URL`, started by `cargo xtask
//! test`): the conformance suites, opening and migrating, several nodes on one database, a
//! server stopped mid-use, and the real registry on two nodes.

mod common;

mod complete_in;
mod conformance;
mod nodes;
mod open;
mod outage;
mod own_claim;
mod registry;

//! Integration tests against a real PostgreSQL: the shared test server that `cargo xtask test`
//! starts (`SWITCHBOARD_TEST_POSTGRES_URL`), one fresh database per test.

mod calls;
mod open;

//! What the test files share: a fresh database per test.

use switchboard_test_postgres::TestDatabase;

/// A fresh, empty database on the test server.
pub(crate) async fn fresh_database() -> TestDatabase {
    switchboard_test_postgres::test_database()
        .await
        .expect("a test database (run the tests through `cargo xtask test`)")
}

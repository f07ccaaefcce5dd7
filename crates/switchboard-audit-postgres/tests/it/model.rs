//! The PostgreSQL store against the in-memory table as a model, on random histories
//! (`switchboard_audit::conformance::model`): both stores get the same batches, retention
//! sweeps and queries and must give the same answers, record for record, and the database
//! reopened answers the same.

use proptest::prelude::*;
use switchboard_audit::conformance::model;
use switchboard_audit_postgres::PostgresAuditStore;

use crate::common::fresh_database;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn answers_like_the_in_memory_table(
        steps in model::history(),
        questions in prop::collection::vec(model::question(), 24),
    ) {
        let database = fresh_database();
        let open = || PostgresAuditStore::open(database.url()).expect("the store opens");
        model::answers_like_the_in_memory_table(open(), open, steps, &questions)?;
    }
}

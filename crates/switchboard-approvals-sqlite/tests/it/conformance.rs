//! The store conformance suites (`switchboard_approvals::conformance`) against the SQLite
//! stores, on a new file per check: the same checks the in-memory stores pass, unchanged. Run
//! once with the default `synchronous = FULL` and once with `NORMAL`, which changes only when
//! commits are flushed, never what a store answers.

use crate::common::{TempKeys, TempProposals};
use switchboard_approvals_sqlite::SqliteOptions;

switchboard_approvals::proposal_store_conformance!(|| TempProposals::fresh(
    SqliteOptions::default()
));

switchboard_approvals::idempotency_store_conformance!(|retention| TempKeys::fresh(
    retention,
    SqliteOptions::default()
));

mod synchronous_normal {
    use super::*;
    use switchboard_approvals_sqlite::Synchronous;

    fn options() -> SqliteOptions {
        SqliteOptions::default().synchronous(Synchronous::Normal)
    }

    switchboard_approvals::proposal_store_conformance!(|| TempProposals::fresh(options()));

    switchboard_approvals::idempotency_store_conformance!(|retention| TempKeys::fresh(
        retention,
        options()
    ));
}

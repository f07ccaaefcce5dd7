//! A failing proposal store is an error the caller sees, never a wrong answer: a proposal the
//! store did not keep is not announced, a listing is not "empty", an approval is not
//! "not found", and nothing runs. The store is the real SQLite one, broken underneath the
//! running registry by dropping its table from another connection, as a damaged or
//! half-restored file would be.

use std::sync::Arc;

use serde_json::json;
use switchboard::{ErrorKind, Initiator, InvokeError, ToolRegistry};
use switchboard_approvals_sqlite::ApprovalsDatabase;
use switchboard_integration_tests::{assignee_of, audit_records, boot_with, ctx, seed_week_shifts};

/// The shift the agent asks to be assigned.
const SHIFT: &str = "acme-2026-11-24-am";

#[tokio::test]
async fn a_broken_proposal_store_refuses_instead_of_answering_wrongly() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("approvals.db");
    let database = ApprovalsDatabase::open(&path).expect("a new database opens");
    let runtime =
        boot_with(ToolRegistry::builder().proposal_store(Arc::new(database.proposal_store())))
            .await;
    let agent = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let assign = json!({ "shift_id": SHIFT, "user_id": "sam" });
    let assigned_before = assignee_of(&seed_week_shifts(&runtime.registry, &mark).await, SHIFT);

    // While the store works, a proposal is stored and listed.
    let kept = runtime
        .registry
        .propose("roster_assign_shift", assign.clone(), &agent, None)
        .await
        .expect("stored");
    assert_eq!(
        runtime
            .registry
            .proposals(&mark)
            .await
            .expect("listed")
            .len(),
        1
    );

    rusqlite::Connection::open(&path)
        .expect("plain SQLite opens the file")
        .execute_batch("DROP TABLE proposals")
        .expect("the table is dropped");

    let refused = runtime
        .registry
        .propose("roster_assign_shift", assign, &agent, None)
        .await
        .expect_err("the store cannot keep the proposal");
    assert_eq!(refused.kind(), ErrorKind::StoreUnavailable);
    let InvokeError::StoreUnavailable { store, reason } = &refused else {
        panic!("expected store_unavailable, got {refused:?}");
    };
    assert_eq!(store, "proposals");
    assert!(reason.contains("storing proposal prop-"), "{reason}");
    assert!(
        refused.to_string().contains("nothing was changed"),
        "{refused}"
    );
    // Oldest first: the kept proposal, then the refused one, which links to no proposal.
    let records = audit_records(&runtime.registry, &agent).await;
    let outcomes: Vec<&str> = records
        .iter()
        .map(|record| record.outcome.as_str())
        .collect();
    assert_eq!(outcomes, ["ok", "store_unavailable"]);
    assert!(records[0].action.is_some());
    assert!(records[1].action.is_none(), "{:?}", records[1].action);

    let listing = runtime
        .registry
        .proposals(&mark)
        .await
        .expect_err("a listing the store cannot read is not empty");
    assert_eq!(listing.kind(), ErrorKind::StoreUnavailable);

    let approval = runtime
        .registry
        .approve(&kept.id, &mark)
        .await
        .expect_err("a proposal the store cannot read is not `not found`");
    assert_eq!(approval.kind(), ErrorKind::StoreUnavailable);
    assert_eq!(
        assignee_of(&seed_week_shifts(&runtime.registry, &mark).await, SHIFT),
        assigned_before,
        "nothing was assigned"
    );
}

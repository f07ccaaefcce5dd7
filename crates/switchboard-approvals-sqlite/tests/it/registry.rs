//! The SQLite stores under the real registry, restarted between steps (each registry is a
//! "process": its own stores on the same file, its own fresh roster): an agent's proposal is
//! approved after a restart and runs once; a mutation retried after a restart with the same
//! key replays its first result and does not run; a mutation interrupted by a crash is in
//! doubt, not run again; and a typed retry after a restart never runs twice.

// Cargo dependencies only make crates candidates for linking; a crate whose `#[tool]`s must be
// registered has to be referenced (rust-lang/rust#64731).
use switchboard_domain_directory as _;
use switchboard_domain_roster as _;

use std::{path::Path, sync::Arc, time::Duration};

use serde_json::{Value, json};
use switchboard::{
    AgentMutations, AuditQuery, ErrorKind, InvokeError, ProposalStatus, RegistryConfig,
    ToolRegistry, audit::ActionEvent,
};
use switchboard_approvals::{Claim, Fingerprint, IdempotencyScope, IdempotencyStore};
use switchboard_approvals_sqlite::ApprovalsDatabase;
use switchboard_core::digest_json;
use switchboard_domain_roster::{
    AssignShift, AssignShiftInput,
    conformance::calls::{mark, sam_agent},
};

const RETENTION: Duration = Duration::from_secs(3_600);

/// Tuesday evening: seeded open, so an assignment that ran shows.
const SHIFT: &str = "acme-2026-11-24-pm";

fn assign_params() -> Value {
    json!({ "shift_id": SHIFT, "user_id": "sam" })
}

/// A registry on the approvals database at `path`, as a process would start it.
async fn start(path: &Path) -> ToolRegistry {
    let database = ApprovalsDatabase::open(path).expect("the approvals database opens");
    ToolRegistry::builder()
        .config(RegistryConfig {
            agent_mutations: AgentMutations::Propose,
            idempotency_retention: RETENTION,
            ..RegistryConfig::default()
        })
        .proposal_store(Arc::new(database.proposal_store()))
        .idempotency_store(Arc::new(database.idempotency_store(RETENTION)))
        .start()
        .await
        .expect("the registry starts")
}

/// Who works the seeded shift in this registry's roster.
async fn assignee(registry: &ToolRegistry) -> Value {
    let shifts = registry
        .invoke(
            "roster_list_shifts",
            json!({ "from": "2026-11-24", "to": "2026-11-24" }),
            &mark("list"),
        )
        .await
        .expect("lists");
    shifts["shifts"]
        .as_array()
        .and_then(|shifts| shifts.iter().find(|shift| shift["id"] == SHIFT))
        .map(|shift| shift["assignee"].clone())
        .unwrap_or(Value::Null)
}

/// The action events of the records of `correlation`.
async fn events(registry: &ToolRegistry, correlation: &str) -> Vec<(String, ActionEvent)> {
    registry
        .audit()
        .query(&AuditQuery::correlation(correlation))
        .await
        .expect("queries")
        .into_iter()
        .filter_map(|record| record.action)
        .map(|action| (action.id.as_str().to_owned(), action.event))
        .collect()
}

#[tokio::test]
async fn an_agents_proposal_is_approved_after_a_restart_and_runs_once() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("approvals.db");

    let first = start(&path).await;
    let agent = sam_agent("proposing");
    let error = first
        .invoke("roster_assign_shift", assign_params(), &agent)
        .await
        .expect_err("an agent's mutation is stored as a proposal");
    let InvokeError::ApprovalRequired { proposal_id, .. } = error else {
        panic!("expected approval_required, got {error:?}");
    };
    first.shutdown().await;

    let second = start(&path).await;
    let listed = second.proposals(&mark("listing")).await.expect("lists");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, proposal_id);
    assert_eq!(listed[0].status, ProposalStatus::Pending);
    let approved = second
        .approve(&proposal_id, &mark("approving"))
        .await
        .expect("a manager approves");
    assert_eq!(approved.output["assignee"], "sam");
    assert_eq!(assignee(&second).await, "sam");
    second.shutdown().await;

    let third = start(&path).await;
    let again = third
        .approve(&proposal_id, &mark("approving-again"))
        .await
        .expect_err("a decision is final across restarts");
    assert_eq!(again.kind(), ErrorKind::ProposalClosed);
    assert_eq!(
        assignee(&third).await,
        Value::Null,
        "nothing ran in the third process"
    );
    let stored = third
        .proposal(&proposal_id, &mark("reading"))
        .await
        .expect("found");
    assert!(matches!(
        stored.status,
        ProposalStatus::Approved { ref by, outcome: Some(ref outcome), .. }
            if by == "mark" && outcome == "ok"
    ));
    third.shutdown().await;
}

#[tokio::test]
async fn a_mutation_retried_after_a_restart_replays_its_first_result_without_running() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("approvals.db");
    let with_key = |correlation: &str| {
        let mut context = mark(correlation);
        context.idempotency_key = Some("assign-tuesday".into());
        context
    };

    let first = start(&path).await;
    let result = first
        .invoke("roster_assign_shift", assign_params(), &with_key("first"))
        .await
        .expect("runs");
    let first_events = events(&first, "first").await;
    let [(action_id, ActionEvent::Executed)] = &first_events[..] else {
        panic!("the first call executes: {first_events:?}");
    };
    first.shutdown().await;

    let second = start(&path).await;
    let replayed = second
        .invoke("roster_assign_shift", assign_params(), &with_key("retry"))
        .await
        .expect("replays");
    assert_eq!(replayed, result);
    assert_eq!(
        events(&second, "retry").await,
        [(action_id.clone(), ActionEvent::Replayed)]
    );
    assert_eq!(
        assignee(&second).await,
        Value::Null,
        "the retry did not run the tool in the second process"
    );
    let other = second
        .invoke(
            "roster_assign_shift",
            json!({ "shift_id": SHIFT, "user_id": "mark" }),
            &with_key("other-params"),
        )
        .await
        .expect_err("the key names another action");
    assert_eq!(other.kind(), ErrorKind::IdempotencyConflict);
    second.shutdown().await;
}

#[tokio::test]
async fn a_mutation_interrupted_by_a_crash_is_in_doubt_and_not_run_again() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("approvals.db");
    {
        // A process claimed the key, as the registry does before running the tool, and died.
        let crashed = ApprovalsDatabase::open(&path)
            .expect("opens")
            .idempotency_store(RETENTION);
        let fingerprint = Fingerprint::new(
            "roster_assign_shift",
            digest_json(&assign_params()).expect("JSON has a digest"),
        );
        let scope = IdempotencyScope::new("acme".into(), "assign-tuesday".into());
        assert!(matches!(
            crashed.claim(&scope, &fingerprint, jiff::Timestamp::now()),
            Claim::Run
        ));
    }
    let registry = start(&path).await;
    let mut retry = mark("retry");
    retry.idempotency_key = Some("assign-tuesday".into());
    let error = registry
        .invoke("roster_assign_shift", assign_params(), &retry)
        .await
        .expect_err("in doubt");
    let InvokeError::ToolFailed { error: reason, .. } = &error else {
        panic!("expected tool_failed, got {error:?}");
    };
    assert_eq!(reason.code(), "outcome_unknown");
    assert!(reason.is_in_doubt(), "{reason:?}");
    assert_eq!(assignee(&registry).await, Value::Null, "nothing ran");
    registry.shutdown().await;
}

/// The registry's typed path replays from the typed copy only, which a restart loses; it then
/// answers an error rather than run the tool a second time (see docs/runtime-semantics.md).
#[tokio::test]
async fn a_typed_retry_after_a_restart_never_runs_twice() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("approvals.db");
    let input = || AssignShiftInput {
        shift_id: SHIFT.to_owned(),
        user_id: "sam".to_owned(),
    };
    let with_key = |correlation: &str| {
        let mut context = mark(correlation);
        context.idempotency_key = Some("typed-assign".into());
        context
    };
    let first = start(&path).await;
    let shift = first
        .call::<AssignShift>(input(), &with_key("first"))
        .await
        .expect("runs");
    assert_eq!(shift.assignee.as_deref(), Some("sam"));
    let same_process = first
        .call::<AssignShift>(input(), &with_key("retry-here"))
        .await
        .expect("replays typed in the same process");
    assert_eq!(same_process, shift);
    first.shutdown().await;

    let second = start(&path).await;
    let after_restart = second
        .call::<AssignShift>(input(), &with_key("retry-after-restart"))
        .await;
    // Not a conflict with another action: it names the first run, and says how to read it.
    match after_restart {
        Err(InvokeError::IdempotencyConflict {
            first_run: Some(action),
            ..
        }) => assert!(!action.as_str().is_empty()),
        other => panic!("expected the first run to be named, got {other:?}"),
    }
    assert_eq!(
        assignee(&second).await,
        Value::Null,
        "the tool did not run again"
    );
    // The JSON face replays the first result.
    let replayed = second
        .invoke(
            "roster_assign_shift",
            assign_params(),
            &with_key("json-retry"),
        )
        .await
        .expect("replays");
    assert_eq!(replayed["assignee"], "sam");
    let store: &Arc<dyn IdempotencyStore> = second.idempotency_store();
    assert_eq!(store.len(), 1);
    second.shutdown().await;
}

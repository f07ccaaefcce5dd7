//! The roster on SQLite under the real registry, as the binary runs it in two processes (`serve`
//! and `switchboard approve`): each registry has its own store values on the same roster file
//! and the same approvals file. An agent's proposal made through one and approved through the
//! other runs once, and both then read its change; a retry with the same idempotency key
//! through the other replays the first result and does not change the roster again.

use std::{path::Path, sync::Arc, time::Duration};

use serde_json::{Value, json};
use switchboard_approvals_sqlite::ApprovalsDatabase;
use switchboard_core::InvokeError;
use switchboard_domain_roster::{
    Roster, RosterBook, RosterState, RosterStore,
    conformance::calls::{mark, sam_agent},
};
use switchboard_registry::{AgentMutations, RegistryConfig, ToolRegistry};
use switchboard_roster_sqlite::SqliteRosterStore;

const RETENTION: Duration = Duration::from_secs(3_600);

/// Tuesday evening: seeded open, so an assignment that ran shows.
const SHIFT: &str = "acme-2026-11-24-pm";

/// A registry on the files in `dir`, as a process would start it.
async fn process(dir: &Path) -> ToolRegistry {
    let approvals =
        ApprovalsDatabase::open(dir.join("approvals.db")).expect("the approvals database opens");
    let roster = SqliteRosterStore::open(dir.join("roster.db")).expect("the roster opens");
    roster.seed(RosterBook::seeded()).await.expect("seeded");
    ToolRegistry::builder()
        .config(RegistryConfig {
            agent_mutations: AgentMutations::Propose,
            idempotency_retention: RETENTION,
            ..RegistryConfig::default()
        })
        .proposal_store(Arc::new(approvals.proposal_store()))
        .idempotency_store(Arc::new(approvals.idempotency_store(RETENTION)))
        .domain_state::<Roster>(RosterState::new(Arc::new(roster)))
        .start()
        .await
        .expect("the registry starts")
}

/// Who works the seeded shift, as this registry reads it.
async fn assignee(registry: &ToolRegistry) -> Value {
    let shift = registry
        .invoke(
            "roster_get_shift",
            json!({ "shift_id": SHIFT }),
            &mark("read"),
        )
        .await
        .expect("reads the shift");
    shift["assignee"].clone()
}

async fn notices(registry: &ToolRegistry) -> usize {
    let listed = registry
        .invoke("roster_list_notices", json!({}), &mark("list"))
        .await
        .expect("lists the notices");
    listed["notices"].as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_approved_in_another_process_changes_the_roster_both_read() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let serve = process(dir.path()).await;
    let approve = process(dir.path()).await;

    let agent = sam_agent("proposing");
    let error = serve
        .invoke(
            "roster_assign_shift",
            json!({ "shift_id": SHIFT, "user_id": "sam" }),
            &agent,
        )
        .await
        .expect_err("an agent's mutation is stored as a proposal");
    let InvokeError::ApprovalRequired { proposal_id, .. } = error else {
        panic!("expected approval_required, got {error:?}");
    };
    assert_eq!(assignee(&serve).await, Value::Null);

    let approved = approve
        .approve(&proposal_id, &mark("approving"))
        .await
        .expect("a manager approves in the other process");
    assert_eq!(approved.output["assignee"], "sam");
    assert_eq!(assignee(&approve).await, "sam");
    assert_eq!(
        assignee(&serve).await,
        "sam",
        "the serving process reads the change the approving one made"
    );
    serve.shutdown().await;
    approve.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_through_the_other_process_replays_without_changing_the_roster() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let first = process(dir.path()).await;
    let second = process(dir.path()).await;
    let with_key = |correlation: &str| {
        let mut context = mark(correlation);
        context.idempotency_key = Some("post-closing".into());
        context
    };
    let post = json!({ "text": "Kitchen closed on Friday" });

    let posted = first
        .invoke("roster_post_notice", post.clone(), &with_key("first"))
        .await
        .expect("posts");
    assert_eq!(
        notices(&second).await,
        1,
        "the other process reads the notice"
    );
    let replayed = second
        .invoke("roster_post_notice", post, &with_key("retry"))
        .await
        .expect("the retry answers");
    assert_eq!(replayed, posted);
    assert_eq!(notices(&first).await, 1, "the retry posted again");
    first.shutdown().await;
    second.shutdown().await;
}

//! The roster on PostgreSQL under two registries sharing one database, as two nodes behind a
//! load balancer: a change made through one is what the other reads, and a retry on the other
//! node replays it rather than running it again.

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};
use switchboard_approvals_postgres::ApprovalsDatabase;
use switchboard_audit::{ActionEvent, AuditQuery};
use switchboard_core::{CallContext, Initiator, InvokeError};
use switchboard_domain_roster::{Roster, RosterBook, RosterState, RosterStore};
use switchboard_registry::ToolRegistry;
use switchboard_roster_postgres::PostgresRosterStore;

use crate::common::fresh_database;

async fn node(url: &str) -> ToolRegistry {
    let keys = Arc::new(
        ApprovalsDatabase::open(url)
            .expect("the approvals tables open")
            .idempotency_store(Duration::from_secs(3600)),
    );
    let roster = PostgresRosterStore::open(url)
        .expect("the roster table opens")
        .completing_keys_of(Arc::clone(&keys));
    roster.seed(RosterBook::seeded()).await.expect("seeded");
    ToolRegistry::builder()
        .idempotency_store(keys)
        .domain_state::<Roster>(RosterState::new(Arc::new(roster)))
        .start()
        .await
        .expect("the registry starts")
}

fn alice(correlation: &str, key: Option<&str>) -> CallContext {
    let builder = CallContext::builder()
        .org("acme")
        .user("alice")
        .session("session-1")
        .correlation(correlation)
        .role("admin")
        .initiator(Initiator::Human);
    match key {
        Some(key) => builder.idempotency_key(key).build(),
        None => builder.build(),
    }
}

async fn call(
    registry: &ToolRegistry,
    tool: &str,
    params: Value,
    context: &CallContext,
) -> Result<Value, InvokeError> {
    tokio::time::timeout(
        Duration::from_secs(20),
        registry.invoke(tool, params, context),
    )
    .await
    .unwrap_or_else(|_| panic!("`{tool}` did not answer"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_share_one_roster_and_a_retry_on_the_other_node_replays() {
    let test = fresh_database().await;
    let node_a = node(test.url()).await;
    let node_b = node(test.url()).await;
    let assign = json!({ "shift_id": "acme-2026-11-28-am", "user_id": "mark" });
    let first = call(
        &node_a,
        "roster_assign_shift",
        assign.clone(),
        &alice("assign-a", Some("assign-mark")),
    )
    .await
    .expect("node A assigns");
    assert_eq!(first["assignee"], json!("mark"));

    let seen = call(
        &node_b,
        "roster_get_shift",
        json!({ "shift_id": "acme-2026-11-28-am" }),
        &alice("read-b", None),
    )
    .await
    .expect("node B reads");
    assert_eq!(
        seen["assignee"],
        json!("mark"),
        "node B reads its own roster"
    );

    let retried = call(
        &node_b,
        "roster_assign_shift",
        assign,
        &alice("assign-b", Some("assign-mark")),
    )
    .await
    .expect("the retry answers");
    assert_eq!(retried, first);
    let records = node_b
        .audit()
        .query(&AuditQuery::correlation("assign-b"))
        .await
        .expect("node B's audit");
    let event = records
        .first()
        .and_then(|record| record.action.as_ref())
        .map(|action| action.event);
    assert_eq!(event, Some(ActionEvent::Replayed), "{records:#?}");

    // A change made on node B is what node A reads next.
    call(
        &node_b,
        "roster_post_notice",
        json!({ "text": "posted through B" }),
        &alice("post-b", None),
    )
    .await
    .expect("node B posts");
    let notices = call(
        &node_a,
        "roster_list_notices",
        json!({}),
        &alice("list-a", None),
    )
    .await
    .expect("node A lists");
    assert_eq!(notices["notices"][0]["text"], json!("posted through B"));
}

//! The PostgreSQL stores under the real registry, two nodes at once (two registries, each with
//! its own stores on the same database and its own in-memory roster, so a roster shows which
//! node ran a mutation): a proposal made on one node and approved on the other runs once; the
//! same idempotency key sent to both nodes at the same moment, many times, runs the tool once
//! and every caller gets the first result. (The sample tool is quick, so the other node's
//! callers mostly find its result already stored; `nodes.rs` keeps a key running while the
//! other node claims it, to exercise the cross-node wait.)

// Cargo dependencies only make crates candidates for linking; a crate whose `#[tool]`s must be
// registered has to be referenced (rust-lang/rust#64731).
use switchboard_domain_directory as _;
use switchboard_domain_roster as _;

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};
use switchboard::{
    AgentMutations, ErrorKind, InvokeError, ProposalStatus, RegistryConfig, ToolRegistry,
};
use switchboard_approvals_postgres::ApprovalsDatabase;
use switchboard_domain_roster::conformance::calls::{mark, sam_agent};

use crate::common::fresh_database;

const RETENTION: Duration = Duration::from_secs(3_600);

/// Tuesday evening: seeded open, so an assignment that ran shows.
const SHIFT: &str = "acme-2026-11-24-pm";

fn assign_params() -> Value {
    json!({ "shift_id": SHIFT, "user_id": "sam" })
}

/// A node: a registry on the approvals tables at `url`, as `switchboard serve` would start it.
async fn node(url: &str) -> ToolRegistry {
    let database = ApprovalsDatabase::open(url).expect("the approvals tables open");
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

/// Who works the seeded shift in this node's roster.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_made_on_one_node_and_approved_on_the_other_runs_once() {
    let test = tokio::task::spawn_blocking(fresh_database)
        .await
        .expect("a database");
    let (node_a, node_b) = (node(test.url()).await, node(test.url()).await);
    let agent = sam_agent("proposing");
    let error = node_a
        .invoke("roster_assign_shift", assign_params(), &agent)
        .await
        .expect_err("an agent's mutation is stored as a proposal");
    let InvokeError::ApprovalRequired { proposal_id, .. } = error else {
        panic!("expected approval_required, got {error:?}");
    };
    let listed = node_b.proposals(&mark("listing")).await.expect("lists");
    assert_eq!(listed.len(), 1, "node B sees node A's proposal");
    assert_eq!(listed[0].status, ProposalStatus::Pending);

    let approved = node_b
        .approve(&proposal_id, &mark("approving"))
        .await
        .expect("a manager approves on node B");
    assert_eq!(approved.output["assignee"], "sam");
    let again = node_a
        .approve(&proposal_id, &mark("approving-again"))
        .await
        .expect_err("the decision made on node B is final on node A");
    assert_eq!(again.kind(), ErrorKind::ProposalClosed);
    assert_eq!(assignee(&node_b).await, "sam", "it ran on node B");
    assert_eq!(assignee(&node_a).await, Value::Null, "and not on node A");
    let stored = node_a
        .proposal(&proposal_id, &mark("reading"))
        .await
        .expect("found");
    assert!(matches!(
        stored.status,
        ProposalStatus::Approved { ref by, outcome: Some(ref outcome), .. }
            if by == "mark" && outcome == "ok"
    ));
    node_a.shutdown().await;
    node_b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_sent_to_both_nodes_at_once_runs_once_and_everybody_gets_the_first_result() {
    const CALLS_PER_NODE: usize = 8;
    let test = tokio::task::spawn_blocking(fresh_database)
        .await
        .expect("a database");
    let (node_a, node_b) = (node(test.url()).await, node(test.url()).await);
    let calls = [&node_a, &node_b]
        .into_iter()
        .flat_map(|registry| std::iter::repeat_n(registry, CALLS_PER_NODE))
        .enumerate()
        .map(|(n, registry)| async move {
            let mut context = mark(&format!("call-{n}"));
            context.idempotency_key = Some("assign-tuesday".into());
            registry
                .invoke("roster_assign_shift", assign_params(), &context)
                .await
        });
    let results = futures::future::join_all(calls).await;
    let first = results[0].as_ref().expect("the call succeeds").clone();
    for result in &results {
        assert_eq!(
            result.as_ref().expect("every call succeeds"),
            &first,
            "every caller gets the first result"
        );
    }
    let ran_on = [assignee(&node_a).await, assignee(&node_b).await];
    assert_eq!(
        ran_on.iter().filter(|assignee| **assignee == "sam").count(),
        1,
        "the tool ran on exactly one node: {ran_on:?}"
    );
    node_a.shutdown().await;
    node_b.shutdown().await;
}

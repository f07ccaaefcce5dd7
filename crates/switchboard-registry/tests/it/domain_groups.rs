//! The process groups where other nodes find a domain's actor (`cluster` feature): a registry
//! built with `join_domain_groups` puts each domain actor in `switchboard.domain.<name>`, a
//! call sent to the actor found there is served, and an actor restarted after a failure is in
//! the group in place of the failed one. A front registry reaches the domain through a
//! `ClusterLink` over the group. Uses the `courier` domain of `domain_call` and the `fragile`
//! domain of `supervision`.

use std::sync::Arc;

use serde_json::json;
use switchboard_core::InvokeError;
use switchboard_registry::{
    ClusterLink, DomainLink, LinkHealth, LinkedCall, StatementIssuer, StatementNotIssued,
    ToolRegistry, call_domain_actor, domain_actors, domain_group,
};

use crate::{
    common::{
        PATIENCE, actor_id, admin_context, invoke, invoke_with, only_record_of,
        wait_until_describing,
    },
    domain_call::{KnownStatements, read_of},
};

/// Issues `stmt-<correlation id>` for every call: the statements [`KnownStatements`] knows.
struct ByCorrelation;

impl StatementIssuer for ByCorrelation {
    fn issue(&self, _domain: &str, call: &LinkedCall<'_>) -> Result<String, StatementNotIssued> {
        Ok(format!("stmt-{}", call.caller.correlation_id.as_str()))
    }
}

/// A front registry holding `courier` as a remote domain reached through a cluster link.
async fn front() -> ToolRegistry {
    ToolRegistry::builder()
        .remote_domain(
            "courier",
            Arc::new(ClusterLink::new("courier", Arc::new(ByCorrelation))),
        )
        .start()
        .await
        .expect("the front starts")
}

fn group_ids(domain: &str) -> Vec<ractor::ActorId> {
    domain_actors(domain)
        .iter()
        .map(|actor| actor.get_id())
        .collect()
}

#[tokio::test]
async fn each_domain_actor_joins_its_group_and_a_call_sent_to_the_member_is_served() {
    let registry = ToolRegistry::builder()
        .statement_verifier(Arc::new(KnownStatements::of([(
            "alice-read",
            "courier_quick",
            admin_context("group-read"),
        )])))
        .join_domain_groups()
        .start()
        .await
        .expect("the registry starts");

    let members = domain_actors("courier");
    let [member] = members.as_slice() else {
        panic!("one actor in the courier group: {members:?}");
    };
    let answer = call_domain_actor(
        member,
        &read_of("alice-read", "courier_quick"),
        tokio::time::Instant::now() + PATIENCE,
    )
    .await;

    assert_eq!(domain_group("courier"), "switchboard.domain.courier");
    assert_eq!(member.get_id(), actor_id(&registry, "courier"));
    assert_eq!(answer.expect("the call is served"), json!("delivered"));
}

#[tokio::test]
async fn a_registry_that_does_not_join_leaves_the_domain_groups_empty() {
    let registry = ToolRegistry::builder()
        .start()
        .await
        .expect("the registry starts");

    assert!(registry.domain_actor("courier").is_some());
    assert!(group_ids("courier").is_empty());
}

#[tokio::test]
async fn a_domain_actor_restarted_after_a_failure_is_in_the_group_in_place_of_the_failed_one() {
    let registry = ToolRegistry::builder()
        .join_domain_groups()
        .start()
        .await
        .expect("the registry starts");
    let failed = actor_id(&registry, "fragile");

    invoke_with(&registry, "fragile_arm", json!({"times": 1}), "group-arm")
        .await
        .expect("armed");
    invoke(&registry, "fragile_touch", "group-touch")
        .await
        .expect("the write is applied before the actor fails");
    wait_until_describing(
        "the fragile actor is restarted and in its group in place of the failed one",
        || {
            registry
                .domain_actor("fragile")
                .is_some_and(|actor| actor.get_id() != failed)
                && group_ids("fragile") == vec![actor_id(&registry, "fragile")]
        },
        || format!("group {:?}, failed {failed:?}", group_ids("fragile")),
    )
    .await;
}

#[tokio::test]
async fn a_call_through_a_cluster_link_runs_on_the_registry_whose_actor_is_in_the_group() {
    let back = ToolRegistry::builder()
        .statement_verifier(Arc::new(KnownStatements::of([(
            "stmt-cluster-read",
            "courier_quick",
            admin_context("cluster-read"),
        )])))
        .join_domain_groups()
        .start()
        .await
        .expect("the back starts");
    let front = front().await;

    let answer = invoke(&front, "courier_quick", "cluster-read").await;

    assert_eq!(answer.expect("served by the back"), json!("delivered"));
    assert!(front.domain_actor("courier").is_none());
    let front_record = only_record_of(&front, "cluster-read").await;
    let back_record = only_record_of(&back, "cluster-read").await;
    assert_eq!(front_record.input_hash, back_record.input_hash);
    assert_eq!(front_record.output_hash, back_record.output_hash);
}

#[tokio::test]
async fn a_cluster_link_whose_group_is_empty_is_open_and_its_calls_fail_at_once() {
    let link = ClusterLink::new("courier", Arc::new(ByCorrelation));
    let front = front().await;

    let answer = invoke(&front, "courier_quick", "cluster-empty").await;

    assert!(matches!(link.health(), LinkHealth::Open { reason } if reason.contains("empty")));
    assert!(
        matches!(&answer, Err(InvokeError::DomainUnavailable { reason, .. })
            if reason.contains("switchboard.domain.courier")),
        "{answer:?}"
    );
}

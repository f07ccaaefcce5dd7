//! The process groups where other nodes find a domain's actor (`cluster` feature): a registry
//! built with `join_domain_groups` puts each domain actor in `switchboard.domain.<name>`, a
//! call sent to the actor found there is served, and an actor restarted after a failure is in
//! the group in place of the failed one. Uses the `courier` domain of `domain_call` and the
//! `fragile` domain of `supervision`.

use std::sync::Arc;

use serde_json::json;
use switchboard_registry::{ToolRegistry, call_domain_actor, domain_actors, domain_group};

use crate::{
    common::{PATIENCE, actor_id, admin_context, invoke, invoke_with, wait_until_describing},
    domain_call::{KnownStatements, read_of},
};

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

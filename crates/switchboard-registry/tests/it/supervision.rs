//! Supervision of the domain actors by the registry actor: a domain stopped on purpose stays
//! stopped and its calls fail fast with `domain_unavailable`; a domain actor that fails is
//! restarted within `RegistryConfig::max_restarts`, and left unavailable beyond it; a killed
//! actor is never reported as running; `shutdown` stops every domain.
//!
//! A domain actor fails, here, by panicking inside its `handle` outside every panic guard: the
//! `fragile` domain's state panics when it is dropped while armed, and the actor drops the
//! replaced state after publishing a write (the update itself, and the copy it works on, are
//! guarded by `DomainCell::write` and cannot fail the actor).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use crate::common::{
    PATIENCE, actor_id, domain_status, invoke, invoke_with, only_record_of, start,
    wait_until_describing,
};
use ractor::{ActorId, ActorStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_audit::Outcome;
use switchboard_core::{ErrorKind, InvokeError, NoInput, ToolContext, ToolError, ToolInput, tool};
use switchboard_registry::{RegistryConfig, ToolRegistry};
use validator::Validate;

switchboard_core::domain! {
    /// A domain the tests stop.
    Victim { name: "victim" }
}

switchboard_core::domain! {
    /// A domain that must keep working whatever happens to the others.
    Bystander { name: "bystander" }
}

/// Answers with the name of its domain.
#[tool(domain = Victim, category = read, permission = "victim.ping")]
async fn ping(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("victim".to_owned())
}

/// Answers with the name of its domain.
#[tool(domain = Bystander, category = read, permission = "bystander.ping", name = "bystander_ping")]
async fn bystander_ping(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("bystander".to_owned())
}

/// A state whose next drops panic once armed. Every copy shares the same fuse.
#[derive(Debug, Clone, Default)]
struct FragileState {
    armed: Arc<AtomicU32>,
    writes: u64,
}

impl Drop for FragileState {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let fuse = self
            .armed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |armed| {
                armed.checked_sub(1)
            });
        if fuse.is_ok() {
            panic!("the fragile state broke while being dropped");
        }
    }
}

switchboard_core::domain! {
    /// A domain whose actor can be made to fail.
    Fragile { name: "fragile", state: FragileState = FragileState::default }
}

/// How many of the next drops of the state panic.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
struct ArmInput {
    /// How many.
    #[validate(range(min = 1, max = 100))]
    times: u32,
}

/// Arms the state: its next `times` drops panic, failing the domain actor each time.
#[tool(domain = Fragile, category = read, permission = "fragile.arm")]
async fn arm(ctx: &ToolContext<FragileState>, input: ArmInput) -> Result<u32, ToolError> {
    ctx.state().armed.store(input.times, Ordering::SeqCst);
    Ok(input.times)
}

/// Counts one write.
#[tool(domain = Fragile, category = execute, permission = "fragile.touch")]
async fn touch(ctx: &ToolContext<FragileState>, _input: NoInput) -> Result<u64, ToolError> {
    ctx.write(|state: &mut FragileState| {
        state.writes += 1;
        state.writes
    })
    .await
}

/// How many writes were applied.
#[tool(domain = Fragile, category = read, permission = "fragile.peek")]
async fn peek(ctx: &ToolContext<FragileState>, _input: NoInput) -> Result<u64, ToolError> {
    Ok(ctx.state().writes)
}

fn assert_domain_unavailable(result: Result<Value, InvokeError>, domain: &str) {
    match result {
        Err(InvokeError::DomainUnavailable {
            domain: reported, ..
        }) => assert_eq!(reported, domain),
        other => panic!("expected domain_unavailable for `{domain}`, got {other:?}"),
    }
}

/// Makes the `fragile` actor fail once, through a write, and checks what the writer saw: its
/// write died with the actor, so the domain was unavailable to it.
/// Applies one write; the actor then fails while dropping the state the write replaced.
async fn fail_fragile_actor_once(registry: &ToolRegistry, correlation: &str) {
    let result = invoke(registry, "fragile_touch", correlation).await;
    assert!(result.is_ok(), "the write itself is applied: {result:?}");
    assert_eq!(
        only_record_of(registry, correlation).await.outcome,
        Outcome::Ok
    );
}

/// Whether `domain` now has an actor other than `old_actor`, and that actor is running.
fn replaced_and_running(registry: &ToolRegistry, domain: &str, old_actor: &ActorId) -> bool {
    registry.domain_actor(domain).is_some_and(|actor| {
        actor.get_id() != *old_actor && actor.get_status() == ActorStatus::Running
    })
}

#[tokio::test]
async fn a_stopped_domain_fails_fast_while_the_others_keep_working() {
    let registry = start(RegistryConfig::default()).await;
    invoke(&registry, "victim_ping", "before-stop")
        .await
        .expect("the victim serves before it is stopped");

    registry
        .domain_actor("victim")
        .expect("the victim runs")
        .stop(None);
    wait_until_describing(
        "the victim domain is reported stopped",
        || !domain_status(&registry, "victim").running,
        || format!("{:?}", domain_status(&registry, "victim")),
    )
    .await;
    assert!(registry.domain_actor("victim").is_none());

    assert_domain_unavailable(
        invoke(&registry, "victim_ping", "after-stop").await,
        "victim",
    );
    let record = only_record_of(&registry, "after-stop").await;
    assert_eq!(record.outcome, Outcome::Error(ErrorKind::DomainUnavailable));
    assert_eq!(record.domain.as_deref(), Some("victim"));

    // Other domains are untouched.
    assert_eq!(
        invoke(&registry, "bystander_ping", "bystander")
            .await
            .expect("the bystander keeps serving"),
        json!("bystander")
    );
    assert!(domain_status(&registry, "bystander").running);

    // Stopped on purpose is not a failure: no restart.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let status = domain_status(&registry, "victim");
    assert!(!status.running, "{status:?}");
    assert_eq!(status.restarts, 0, "{status:?}");
    registry.shutdown().await;
}

#[tokio::test]
async fn a_failed_domain_actor_is_restarted_and_serves_again() {
    let registry = start(RegistryConfig {
        max_restarts: 3,
        ..RegistryConfig::default()
    })
    .await;
    let first_actor = actor_id(&registry, "fragile");
    invoke_with(&registry, "fragile_arm", json!({ "times": 1 }), "arm")
        .await
        .expect("arming is a read");

    fail_fragile_actor_once(&registry, "doomed-write").await;
    wait_until_describing(
        "the fragile actor has been restarted",
        || {
            let status = domain_status(&registry, "fragile");
            status.restarts == 1 && replaced_and_running(&registry, "fragile", &first_actor)
        },
        || format!("{:?}", domain_status(&registry, "fragile")),
    )
    .await;

    // The restarted actor carries on from the last published state (one write so far).
    assert_eq!(
        invoke(&registry, "fragile_touch", "after-restart")
            .await
            .expect("the restarted actor applies writes"),
        json!(2)
    );
    assert_eq!(
        invoke(&registry, "fragile_peek", "peek")
            .await
            .expect("a read"),
        json!(2)
    );
    let status = domain_status(&registry, "fragile");
    assert!(status.running, "{status:?}");
    assert_eq!(status.restarts, 1, "{status:?}");
    assert_eq!(
        status.panics, 0,
        "an actor failure is not a tool panic: {status:?}"
    );
    assert_eq!(domain_status(&registry, "bystander").restarts, 0);
    registry.shutdown().await;
}

#[tokio::test]
async fn a_domain_actor_failing_beyond_its_restart_budget_stays_unavailable() {
    let registry = start(RegistryConfig {
        max_restarts: 1,
        restart_window: Duration::from_secs(600),
        ..RegistryConfig::default()
    })
    .await;
    let first_actor = actor_id(&registry, "fragile");
    invoke_with(&registry, "fragile_arm", json!({ "times": 1 }), "arm")
        .await
        .expect("arming is a read");

    // First failure: within the budget of one restart.
    fail_fragile_actor_once(&registry, "first-failure").await;
    wait_until_describing(
        "the fragile actor has been restarted once",
        || {
            domain_status(&registry, "fragile").restarts == 1
                && replaced_and_running(&registry, "fragile", &first_actor)
        },
        || format!("{:?}", domain_status(&registry, "fragile")),
    )
    .await;
    let second_actor = actor_id(&registry, "fragile");
    // Arm again: whether a restart keeps the state or builds it afresh is not what this tests.
    invoke_with(&registry, "fragile_arm", json!({ "times": 1 }), "re-arm")
        .await
        .expect("arming is a read, served while the actor runs");

    // Second failure: beyond the budget. The domain must be reported down and fail fast.
    fail_fragile_actor_once(&registry, "second-failure").await;
    wait_until_describing(
        "the fragile domain is reported not running once its restart budget is spent",
        || !domain_status(&registry, "fragile").running,
        || {
            let actor_status = registry
                .domain_actor("fragile")
                .map(|actor| (actor.get_id() == second_actor, actor.get_status()));
            format!(
                "status {:?}; the actor the registry still holds (is it the failed one?, its status): {actor_status:?}",
                domain_status(&registry, "fragile")
            )
        },
    )
    .await;
    let status = domain_status(&registry, "fragile");
    assert_eq!(
        status.restarts, 1,
        "no restart beyond the budget: {status:?}"
    );

    for (tool, correlation) in [
        ("fragile_touch", "down-touch"),
        ("fragile_peek", "down-peek"),
    ] {
        assert_domain_unavailable(invoke(&registry, tool, correlation).await, "fragile");
        assert_eq!(
            only_record_of(&registry, correlation).await.outcome,
            Outcome::Error(ErrorKind::DomainUnavailable)
        );
    }
    assert_eq!(
        invoke(&registry, "bystander_ping", "bystander")
            .await
            .expect("the bystander keeps serving"),
        json!("bystander")
    );
    registry.shutdown().await;
}

/// Ractor's `kill` skips `post_stop` and reports `ActorTerminated(_, _, Some("killed"))`, not
/// `ActorFailed`. Whether the registry restarts a killed actor or treats the kill as a stop is
/// its choice; what it may never do is report a dead actor as running.
#[tokio::test]
async fn a_killed_domain_actor_is_never_reported_as_running() {
    let registry = start(RegistryConfig::default()).await;
    let killed = registry.domain_actor("victim").expect("the victim runs");
    let killed_id = killed.get_id();
    killed
        .kill_and_wait(Some(PATIENCE))
        .await
        .expect("the actor dies within the patience bound");
    assert_eq!(killed.get_status(), ActorStatus::Stopped);

    let restarted_or_down = || {
        let status = domain_status(&registry, "victim");
        let live_replacement = replaced_and_running(&registry, "victim", &killed_id);
        let restarted = live_replacement && status.restarts == 1;
        !status.running || restarted
    };
    wait_until_describing(
        "the killed victim is either restarted or reported not running",
        restarted_or_down,
        || {
            let held = registry
                .domain_actor("victim")
                .map(|actor| (actor.get_id() == killed_id, actor.get_status()));
            format!(
                "status {:?}; the actor the registry holds (is it the killed one?, its status): {held:?}",
                domain_status(&registry, "victim")
            )
        },
    )
    .await;

    let result = invoke(&registry, "victim_ping", "after-kill").await;
    if domain_status(&registry, "victim").running {
        assert_eq!(result.expect("a restarted domain serves"), json!("victim"));
    } else {
        assert_domain_unavailable(result, "victim");
    }
    assert!(domain_status(&registry, "bystander").running);
    registry.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_every_domain_and_later_calls_fail_fast() {
    let registry = start(RegistryConfig::default()).await;
    invoke(&registry, "bystander_ping", "before-shutdown")
        .await
        .expect("serving before shutdown");
    registry.shutdown().await;

    wait_until_describing(
        "every domain is reported stopped",
        || registry.domains().iter().all(|status| !status.running),
        || format!("{:?}", registry.domains()),
    )
    .await;
    for (tool, domain) in [("bystander_ping", "bystander"), ("victim_ping", "victim")] {
        let correlation = format!("after-shutdown-{tool}");
        assert_domain_unavailable(invoke(&registry, tool, &correlation).await, domain);
        assert_eq!(
            only_record_of(&registry, &correlation).await.outcome,
            Outcome::Error(ErrorKind::DomainUnavailable)
        );
    }
}

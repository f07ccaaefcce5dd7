//! Each limit counts its own keys: one user's burst does not limit another, another
//! organisation is unaffected, a tool's limit leaves other tools alone; a refusal names the
//! limit as configured and when to retry, and idle keys are pruned.

use std::time::Duration;

use governor::clock::FakeRelativeClock;
use switchboard_core::{ErrorKind, InvokeError};
use switchboard_limits::{Limits, PRUNE_EVERY, Scope};

use crate::probe::{call, limited};

fn rule(text: &str) -> switchboard_limits::Rule {
    text.parse().expect("a rate")
}

/// The refusal's limit and retry-after, or a panic if the call was not rate limited.
fn refusal(result: Result<(), InvokeError>) -> (String, u64) {
    match result {
        Err(InvokeError::RateLimited {
            limit,
            retry_after_ms,
            ..
        }) => (limit, retry_after_ms),
        other => panic!("expected rate_limited, got {other:?}"),
    }
}

#[tokio::test]
async fn a_users_burst_limits_that_user_only() {
    let limits = Limits {
        per_user: Some(rule("2/min")),
        ..Limits::default()
    };
    let clock = FakeRelativeClock::default();
    let (registry, _) = limited(&limits, &clock).await;
    for _ in 0..2 {
        call(&registry, "probe_ping", "acme", "alice")
            .await
            .expect("within alice's burst");
    }
    let refused = call(&registry, "probe_ping", "acme", "alice").await;
    assert_eq!(
        refused.as_ref().map_err(InvokeError::kind).err(),
        Some(ErrorKind::RateLimited)
    );
    let (limit, retry_after_ms) = refusal(refused);
    assert_eq!(limit, "2 calls per 60 s per user");
    assert_eq!(retry_after_ms, 30_000, "one call every 30 s");

    // Another user of the same organisation, and alice of another organisation, are not her.
    call(&registry, "probe_ping", "acme", "bob")
        .await
        .expect("bob has his own limit");
    call(&registry, "probe_pong", "globex", "alice")
        .await
        .expect("globex's alice is another user");

    // After the retry-after, alice is admitted again, once.
    clock.advance(Duration::from_secs(30));
    call(&registry, "probe_ping", "acme", "alice")
        .await
        .expect("a cell refilled");
    refusal(call(&registry, "probe_ping", "acme", "alice").await);
}

#[tokio::test]
async fn an_organisations_limit_leaves_other_organisations_alone() {
    let limits = Limits {
        per_org: Some(rule("3/min")),
        per_user: Some(rule("1/min")),
        ..Limits::default()
    };
    let clock = FakeRelativeClock::default();
    let (registry, _) = limited(&limits, &clock).await;
    // Alice's refused calls stop at her own limit: they use none of acme's.
    call(&registry, "probe_ping", "acme", "alice")
        .await
        .expect("alice's one call");
    for _ in 0..10 {
        let (limit, _) = refusal(call(&registry, "probe_ping", "acme", "alice").await);
        assert_eq!(limit, "1 calls per 60 s per user");
    }
    for user in ["bob", "carol"] {
        call(&registry, "probe_ping", "acme", user)
            .await
            .expect("acme has room for three users' calls");
    }
    let (limit, retry_after_ms) = refusal(call(&registry, "probe_ping", "acme", "dave").await);
    assert_eq!(limit, "3 calls per 60 s per org");
    assert_eq!(retry_after_ms, 20_000);
    for user in ["alice", "bob", "dave"] {
        call(&registry, "probe_ping", "globex", user)
            .await
            .expect("globex is another organisation");
    }
}

#[tokio::test]
async fn a_tools_limit_counts_that_tool_per_user_or_per_org() {
    let mut limits = Limits::default();
    limits
        .tools
        .insert("probe_ping".to_owned(), (rule("1/min"), Scope::User));
    limits.tools.insert(
        "probe_pong".to_owned(),
        (
            rule("2/min").with_burst(std::num::NonZeroU32::MIN),
            Scope::Org,
        ),
    );
    let clock = FakeRelativeClock::default();
    let (registry, _) = limited(&limits, &clock).await;
    call(&registry, "probe_ping", "acme", "alice")
        .await
        .expect("alice's ping");
    let (limit, _) = refusal(call(&registry, "probe_ping", "acme", "alice").await);
    assert_eq!(limit, "1 calls of probe_ping per 60 s per user");
    call(&registry, "probe_ping", "acme", "bob")
        .await
        .expect("bob's ping is his own");

    call(&registry, "probe_pong", "acme", "alice")
        .await
        .expect("acme's pong");
    let (limit, retry_after_ms) = refusal(call(&registry, "probe_pong", "acme", "bob").await);
    assert_eq!(
        limit,
        "2 calls of probe_pong per 60 s per org, bursts of up to 1"
    );
    assert_eq!(retry_after_ms, 30_000);
    call(&registry, "probe_pong", "globex", "bob")
        .await
        .expect("globex's pong");
}

#[tokio::test]
async fn keys_whose_limit_is_full_again_are_pruned() {
    let limits = Limits {
        per_user: Some(rule("1/s")),
        ..Limits::default()
    };
    let clock = FakeRelativeClock::default();
    let (registry, layer) = limited(&limits, &clock).await;
    for user in 0..100 {
        call(&registry, "probe_ping", "acme", &format!("user-{user}"))
            .await
            .expect("each user's first call");
    }
    assert_eq!(layer.tracked_keys(), 100);

    // Before the schedule, nothing is dropped.
    clock.advance(PRUNE_EVERY / 2);
    call(&registry, "probe_ping", "acme", "late")
        .await
        .expect("a new user");
    assert_eq!(layer.tracked_keys(), 101);

    // The first call after the schedule drops every key but its own, still refilling.
    clock.advance(PRUNE_EVERY / 2);
    call(&registry, "probe_ping", "acme", "later")
        .await
        .expect("a new user");
    assert_eq!(layer.tracked_keys(), 1);

    // A pruned key is a fresh one: its full burst, no more.
    call(&registry, "probe_ping", "acme", "user-0")
        .await
        .expect("a full burst");
    refusal(call(&registry, "probe_ping", "acme", "user-0").await);
}

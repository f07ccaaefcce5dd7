//! Writes to a domain's state: they go through the domain's actor one at a time, are visible to
//! the calls that follow, are refused to `read` tools, and leave the state untouched when the
//! update panics.
//!
//! The `ledger` domain and its tools are defined here, for these tests.

use crate::common::{
    actor_id, domain_status, invoke, join_calls, only_record_of, spawn_calls, start,
};
use serde_json::{Value, json};
use switchboard_audit::Outcome;
use switchboard_core::{ErrorKind, InvokeError, NoInput, ToolContext, ToolError, tool};
use switchboard_registry::{RegistryConfig, ToolRegistry};

/// A count of entries.
#[derive(Debug, Clone, Default)]
struct LedgerState {
    entries: u64,
}

switchboard_core::domain! {
    /// A ledger that only ever grows, one entry per write.
    Ledger { name: "ledger", state: LedgerState = LedgerState::default }
}

/// Adds one entry and returns how many the ledger now holds.
#[tool(domain = Ledger, category = execute, permission = "ledger.add")]
async fn add(ctx: &ToolContext<LedgerState>, _input: NoInput) -> Result<u64, ToolError> {
    ctx.write(|ledger: &mut LedgerState| {
        ledger.entries += 1;
        ledger.entries
    })
    .await
}

/// How many entries the ledger holds.
#[tool(domain = Ledger, category = read, permission = "ledger.read")]
async fn count(ctx: &ToolContext<LedgerState>, _input: NoInput) -> Result<u64, ToolError> {
    Ok(ctx.state().entries)
}

/// A read tool that tries to write anyway.
#[tool(domain = Ledger, category = read, permission = "ledger.read")]
async fn sneak(ctx: &ToolContext<LedgerState>, _input: NoInput) -> Result<u64, ToolError> {
    ctx.write(|ledger: &mut LedgerState| {
        ledger.entries += 100;
        ledger.entries
    })
    .await
}

/// An execute tool whose update changes its copy of the state, then panics.
#[tool(domain = Ledger, category = execute, permission = "ledger.add")]
async fn botch(ctx: &ToolContext<LedgerState>, _input: NoInput) -> Result<u64, ToolError> {
    ctx.write(|ledger: &mut LedgerState| {
        ledger.entries += 1000;
        if ledger.entries >= 1000 {
            panic!("the update botched the ledger");
        }
        ledger.entries
    })
    .await
}

async fn entries(registry: &ToolRegistry) -> Value {
    invoke(registry, "ledger_count", "count")
        .await
        .expect("reading the ledger always works")
}

fn tool_error_code(error: &InvokeError) -> &str {
    match error {
        InvokeError::ToolFailed { error, .. } => error.code(),
        other => panic!("expected tool_failed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_write_is_visible_to_the_reads_that_follow() {
    let registry = start(RegistryConfig::default()).await;
    assert_eq!(entries(&registry).await, json!(0));
    assert_eq!(
        invoke(&registry, "ledger_add", "add-1")
            .await
            .expect("added"),
        json!(1)
    );
    assert_eq!(entries(&registry).await, json!(1));
    assert_eq!(
        invoke(&registry, "ledger_add", "add-2")
            .await
            .expect("added"),
        json!(2)
    );
    assert_eq!(entries(&registry).await, json!(2));
    assert_eq!(
        only_record_of(&registry, "add-2").await.outcome,
        Outcome::Ok
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn a_read_tool_may_not_write() {
    let registry = start(RegistryConfig::default()).await;
    let error = invoke(&registry, "ledger_sneak", "sneak")
        .await
        .expect_err("a read tool's write is refused");
    assert_eq!(error.kind(), ErrorKind::ToolFailed);
    assert_eq!(tool_error_code(&error), "write_not_allowed");
    assert!(error.to_string().contains("ledger_sneak"), "{error}");
    assert_eq!(
        only_record_of(&registry, "sneak").await.outcome,
        Outcome::Error(ErrorKind::ToolFailed)
    );
    assert_eq!(entries(&registry).await, json!(0), "the state is unchanged");
    registry.shutdown().await;
}

#[tokio::test]
async fn a_panicking_update_leaves_the_state_unchanged_and_the_domain_serving() {
    let registry = start(RegistryConfig::default()).await;
    let actor_before = actor_id(&registry, "ledger");
    invoke(&registry, "ledger_add", "before")
        .await
        .expect("added");

    let error = invoke(&registry, "ledger_botch", "botch")
        .await
        .expect_err("the update panics");
    assert_eq!(error.kind(), ErrorKind::ToolFailed);
    assert_eq!(tool_error_code(&error), "write_panicked");
    assert_eq!(
        only_record_of(&registry, "botch").await.outcome,
        Outcome::Error(ErrorKind::ToolFailed)
    );
    // The update added 1000 to its copy before panicking; the published state never saw it.
    assert_eq!(entries(&registry).await, json!(1));

    // The same actor keeps applying writes.
    assert_eq!(
        invoke(&registry, "ledger_add", "after")
            .await
            .expect("added"),
        json!(2)
    );
    let actor_after = actor_id(&registry, "ledger");
    assert_eq!(actor_before, actor_after, "the domain actor did not fail");
    let status = domain_status(&registry, "ledger");
    assert!(status.running, "{status:?}");
    assert_eq!(status.restarts, 0, "{status:?}");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_writes_are_applied_one_at_a_time_and_none_is_lost() {
    let registry = start(RegistryConfig::default()).await;
    let calls = spawn_calls(&registry, "ledger_add", "concurrent", 50);
    let mut seen: Vec<u64> = join_calls(calls)
        .await
        .iter()
        .map(|value| value.as_u64().expect("`add` returns a count"))
        .collect();
    seen.sort_unstable();
    // Each write saw every write applied before it: the counts are exactly 1..=50.
    assert_eq!(seen, (1..=50).collect::<Vec<u64>>());
    assert_eq!(entries(&registry).await, json!(50));
    registry.shutdown().await;
}

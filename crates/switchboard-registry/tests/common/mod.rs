//! Helpers shared by the registry's integration tests: a human caller's `CallContext`, starting
//! a registry, calling a tool under a bounded wait, reading the audit trail of one correlation
//! id, a domain's status and actor, the names in the catalogue, and bounded polling.
//!
//! Each file under `tests/` is its own test binary and links its own `#[tool]`s and `domain!`s
//! (inventory registration is per binary, and the `boot_*` binaries are broken on purpose), so
//! those stay in their files. Only what works whatever the linked tool set lives here, included
//! with `mod common;`. Every wait is bounded by [`PATIENCE`], which only turns a hang into a
//! failure: the tests assert behaviour, never durations.

#![allow(
    dead_code,
    reason = "each test binary uses a subset of the shared helpers"
)]

use std::{sync::Arc, time::Duration};

use ractor::ActorId;
use serde_json::{Value, json};
use switchboard_audit::{AuditQuery, AuditRecord};
use switchboard_core::{CallContext, Initiator, InvokeError, ToolDescriptor};
use switchboard_registry::{
    DomainStatus, PermissionMatrix, RegistryConfig, RegistryError, ToolRegistry,
};
use tokio::task::JoinHandle;

/// The upper bound on any wait in these tests. Reaching it means something hangs.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// A complete context of `alice`, a human at `acme`, holding `role`.
pub(crate) fn human_context(correlation: &str, role: &str) -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .session("session-1")
        .correlation(correlation)
        .role(role)
        .initiator(Initiator::Human)
        .build()
}

/// A human admin: may run execute tools, and holds every permission of the built-in matrix.
pub(crate) fn admin_context(correlation: &str) -> CallContext {
    human_context(correlation, "admin")
}

/// Boots a registry of every tool linked into this binary, under `config`.
pub(crate) async fn start(config: RegistryConfig) -> ToolRegistry {
    ToolRegistry::builder()
        .config(config)
        .start()
        .await
        .expect("the test tools are well formed, so the registry starts")
}

/// Boots a registry of every tool linked into this binary, under the permission `matrix`.
pub(crate) async fn start_with_permissions(matrix: PermissionMatrix) -> ToolRegistry {
    ToolRegistry::builder()
        .permissions(matrix)
        .start()
        .await
        .expect("the test tools are well formed")
}

/// Boots a registry of the tools linked into this binary, leaving `domain` and its tools out.
pub(crate) async fn start_excluding(domain: &str) -> Result<ToolRegistry, RegistryError> {
    ToolRegistry::builder().exclude_domain(domain).start().await
}

/// Calls `tool` with `params` as the admin of [`admin_context`]; a call that does not answer
/// within [`PATIENCE`] fails the test.
pub(crate) async fn invoke_with(
    registry: &ToolRegistry,
    tool: &str,
    params: Value,
    correlation: &str,
) -> Result<Value, InvokeError> {
    tokio::time::timeout(
        PATIENCE,
        registry.invoke(tool, params, &admin_context(correlation)),
    )
    .await
    .unwrap_or_else(|_| panic!("`{tool}` did not answer within {PATIENCE:?}"))
}

/// Calls `tool` with empty params, like [`invoke_with`].
pub(crate) async fn invoke(
    registry: &ToolRegistry,
    tool: &str,
    correlation: &str,
) -> Result<Value, InvokeError> {
    invoke_with(registry, tool, json!({}), correlation).await
}

/// A call running in a task of its own.
pub(crate) type CallTask = JoinHandle<Result<Value, InvokeError>>;

/// Starts `count` calls of `tool` at once, each in a task of its own, as the admin of
/// [`admin_context`] with the correlation id `{correlation_prefix}-{index}`.
pub(crate) fn spawn_calls(
    registry: &ToolRegistry,
    tool: &'static str,
    correlation_prefix: &str,
    count: usize,
) -> Vec<CallTask> {
    (0..count)
        .map(|index| {
            let registry = registry.clone();
            let ctx = admin_context(&format!("{correlation_prefix}-{index}"));
            tokio::spawn(async move { registry.invoke(tool, json!({}), &ctx).await })
        })
        .collect()
}

/// Waits for every spawned call, in order; each must succeed. Returns what they answered.
pub(crate) async fn join_calls(calls: Vec<CallTask>) -> Vec<Value> {
    let mut answers = Vec::with_capacity(calls.len());
    for call in calls {
        let result = tokio::time::timeout(PATIENCE, call)
            .await
            .expect("every call finishes")
            .expect("the call task does not panic");
        answers.push(result.expect("every call succeeds"));
    }
    answers
}

/// Every audit record of a correlation id, newest first.
pub(crate) async fn records_of(registry: &ToolRegistry, correlation: &str) -> Vec<AuditRecord> {
    registry
        .audit()
        .query(&AuditQuery::correlation(correlation))
        .await
        .expect("the in-memory store answers every query")
}

/// The one audit record of a correlation id; fails if there are none or several.
pub(crate) async fn only_record_of(registry: &ToolRegistry, correlation: &str) -> AuditRecord {
    let mut records = records_of(registry, correlation).await;
    assert_eq!(
        records.len(),
        1,
        "expected exactly one audit record for `{correlation}`, got {records:#?}"
    );
    records.remove(0)
}

/// What the registry reports about `domain`; fails if the domain is not registered.
pub(crate) fn domain_status(registry: &ToolRegistry, domain: &str) -> DomainStatus {
    registry
        .domains()
        .into_iter()
        .find(|status| status.name == domain)
        .unwrap_or_else(|| panic!("the `{domain}` domain is not registered"))
}

/// The id of `domain`'s running actor; fails if the domain has none.
pub(crate) fn actor_id(registry: &ToolRegistry, domain: &str) -> ActorId {
    registry
        .domain_actor(domain)
        .unwrap_or_else(|| panic!("the `{domain}` domain has an actor"))
        .get_id()
}

/// The names of `descriptors`, in their order.
pub(crate) fn names(descriptors: &[Arc<ToolDescriptor>]) -> Vec<&str> {
    descriptors
        .iter()
        .map(|descriptor| &*descriptor.name)
        .collect()
}

/// The names of the registry's domains, in the order it reports them.
pub(crate) fn domain_names(registry: &ToolRegistry) -> Vec<String> {
    registry
        .domains()
        .into_iter()
        .map(|status| status.name)
        .collect()
}

/// Waits until `condition` holds; fails if it does not within [`PATIENCE`].
pub(crate) async fn wait_until(what: &str, condition: impl FnMut() -> bool) {
    wait_until_describing(what, condition, String::new).await;
}

/// Waits until `condition` holds; fails with `describe()` if it does not within [`PATIENCE`].
pub(crate) async fn wait_until_describing(
    what: &str,
    mut condition: impl FnMut() -> bool,
    describe: impl Fn() -> String,
) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition() {
        if tokio::time::Instant::now() >= deadline {
            let description = describe();
            let separator = if description.is_empty() { "" } else { "; " };
            panic!("gave up after {PATIENCE:?} waiting until {what}{separator}{description}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

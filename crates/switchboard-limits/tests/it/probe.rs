//! The `probe` test domain (two read tools that answer at once), callers of any organisation,
//! and a registry with a rate-limit layer on a fake clock.

use governor::clock::FakeRelativeClock;
use serde_json::json;
use switchboard_core::{
    CallContext, Initiator, InvokeError, NoInput, ToolContext, ToolError, tool,
};
use switchboard_limits::{Limits, RateLimitLayer};
use switchboard_registry::ToolRegistry;

switchboard_core::domain! {
    /// Tools that answer at once, for the rate-limit tests.
    pub(crate) Probe { name: "probe" }
}

/// Answers `pong`.
#[tool(domain = Probe, category = read, permission = "probe.read")]
async fn ping(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("pong".to_owned())
}

/// Answers `ping`.
#[tool(domain = Probe, category = read, permission = "probe.read")]
async fn pong(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("ping".to_owned())
}

/// An admin `user` of `org`.
pub(crate) fn caller(org: &str, user: &str) -> CallContext {
    CallContext::builder()
        .org(org)
        .user(user)
        .session(format!("session-{user}"))
        .correlation(format!("call-{org}-{user}"))
        .role("admin")
        .initiator(Initiator::Human)
        .build()
}

/// A registry of the probe tools behind the layer of `limits` on `clock`, and the layer.
pub(crate) async fn limited(
    limits: &Limits,
    clock: &FakeRelativeClock,
) -> (ToolRegistry, RateLimitLayer<FakeRelativeClock>) {
    let layer = RateLimitLayer::with_clock(limits, clock.clone());
    let registry = ToolRegistry::builder()
        .layer(layer.clone())
        .start()
        .await
        .expect("the probe tools are well formed");
    (registry, layer)
}

/// Calls `tool` as `user` of `org`.
pub(crate) async fn call(
    registry: &ToolRegistry,
    tool: &str,
    org: &str,
    user: &str,
) -> Result<(), InvokeError> {
    registry
        .invoke(tool, json!({}), &caller(org, user))
        .await
        .map(|_| ())
}

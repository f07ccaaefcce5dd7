//! Calling every tool the way the invariant tests do: contexts, fresh correlation ids, params
//! that smuggle an `org_id`, and the audit records a call left behind.
//!
//! Nothing here links a domain: a test binary that wants the sample tools must reference the
//! domain crates itself (`use switchboard_domain_core as _;`, see rust-lang/rust#64731).

use std::{
    collections::BTreeSet,
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::Context as _;
use serde_json::{Value, json};
use switchboard::{AuditQuery, AuditRecord, CallContext, Initiator, InvokeError, ToolRegistry};
use switchboard_audit::Outcome;

use crate::workspace::{domain_crates, domain_of_crate, workspace_metadata};

/// The organisation the tests act for (seeded by the sample domains).
pub const HOME_ORG: &str = "acme";

/// Another seeded organisation, the one smuggled `org_id`s point at.
pub const OTHER_ORG: &str = "globex";

/// The seeded admin of [`HOME_ORG`].
pub const HOME_ADMIN: &str = "alice";

/// A role the permission matrix does not mention, so it grants nothing.
pub const ROLE_WITHOUT_PERMISSIONS: &str = "nobody";

/// Boots the registry the way an application does (through the facade), with every tool linked
/// into the calling binary and the built-in permission matrix.
///
/// Fails unless every domain crate of the workspace (`switchboard-domain-<name>`) registered
/// its domain `<name>`: a test "for every tool" over some of the tools proves little.
pub async fn start_registry() -> anyhow::Result<ToolRegistry> {
    let registry = ToolRegistry::builder()
        .start()
        .await
        .context("the registry refused to start with the linked tools")?;
    let missing = unregistered_domain_crates(&registry)?;
    if registry.list().is_empty() || !missing.is_empty() {
        registry.shutdown().await;
        anyhow::bail!(
            "this test binary does not register the domains of {missing:?} (tools found: {}): \
             add each as a dev-dependency of architecture-tests and reference it in the test \
             file with `use switchboard_domain_<name> as _;` (rust-lang/rust#64731)",
            tool_names(&registry).len()
        );
    }
    Ok(registry)
}

/// The workspace's domain crates whose domain (`switchboard-domain-<name>` declares `<name>`)
/// `registry` does not have, sorted.
pub fn unregistered_domain_crates(registry: &ToolRegistry) -> anyhow::Result<Vec<String>> {
    let metadata = workspace_metadata()?;
    let registered: BTreeSet<String> = registry
        .domains()
        .into_iter()
        .map(|domain| domain.name)
        .collect();
    Ok(domain_crates(metadata)
        .into_iter()
        .filter(|package_name| {
            domain_of_crate(package_name).is_none_or(|domain| !registered.contains(domain))
        })
        .collect())
}

/// The names of the registered tools, sorted.
pub fn tool_names(registry: &ToolRegistry) -> Vec<String> {
    registry
        .list()
        .iter()
        .map(|descriptor| descriptor.name.to_string())
        .collect()
}

/// A correlation id no other call in this process has used.
pub fn fresh_correlation_id(label: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let sequence = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("architecture-{label}-{}-{sequence}", std::process::id())
}

/// A context every check lets through: the admin of [`HOME_ORG`], a human, who confirmed.
pub fn admin_human_confirmed(correlation_id: &str) -> CallContext {
    CallContext::builder()
        .org(HOME_ORG)
        .user(HOME_ADMIN)
        .session("architecture-tests")
        .correlation(correlation_id)
        .role("admin")
        .initiator(Initiator::Human)
        .confirmed(true)
        .build()
}

/// Params carrying an organisation id in each place a caller could hide one, labelled.
pub fn params_with_org_id() -> Vec<(&'static str, Value)> {
    vec![
        ("top level", json!({ "org_id": OTHER_ORG })),
        (
            "nested object",
            json!({ "filter": { "org_id": OTHER_ORG } }),
        ),
        (
            "inside an array",
            json!({ "items": [{ "name": "x" }, { "org_id": OTHER_ORG }] }),
        ),
        ("spelled orgId", json!({ "orgId": OTHER_ORG })),
    ]
}

/// The audit outcome a call's result must have been recorded with.
pub fn expected_outcome(result: &Result<Value, InvokeError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Ok,
        Err(error) => Outcome::Error(error.kind()),
    }
}

/// Every audit record carrying `correlation_id`.
pub async fn audit_records_of(
    registry: &ToolRegistry,
    correlation_id: &str,
) -> anyhow::Result<Vec<AuditRecord>> {
    registry
        .audit()
        .query(&AuditQuery::correlation(correlation_id))
        .await
        .with_context(|| format!("querying the audit store for `{correlation_id}` failed"))
}

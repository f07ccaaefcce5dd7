//! Calling every tool the way the invariant tests do: contexts, fresh correlation ids, params
//! that smuggle an `org_id`, and the audit records a call left behind.
//!
//! Nothing here links a domain: a test binary that wants the sample tools must reference
//! `switchboard_domains` itself (`use switchboard_domains as _;`, see rust-lang/rust#64731).

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use serde_json::Value;
use switchboard::{AuditQuery, AuditRecord, CallContext, Initiator, InvokeError, ToolRegistry};
use switchboard_audit::Outcome;

use switchboard_core::ToolOrigin;

use crate::workspace::{
    display_path, is_domain_crate, package_dir, workspace_members, workspace_metadata,
};

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
/// Fails unless every domain crate of the workspace (`switchboard-domain-*`) registered a tool:
/// a test "for every tool" over some of the tools proves little.
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
             list each in crates/switchboard-domains/Cargo.toml, and reference \
             `switchboard_domains` in the test binary with `use switchboard_domains as _;` \
             (rust-lang/rust#64731)",
            tool_names(&registry).len()
        );
    }
    Ok(registry)
}

/// The workspace's domain crates that no tool of `registry` is defined in, sorted.
///
/// A linked tool's origin is the `file:line` of its definition, relative to the workspace
/// root, so the crate a tool comes from is the crate whose folder holds that file; a domain
/// crate's name need not match the name of the domain it declares.
pub fn unregistered_domain_crates(registry: &ToolRegistry) -> anyhow::Result<Vec<String>> {
    let metadata = workspace_metadata()?;
    let tool_locations: Vec<String> = registry
        .list()
        .iter()
        .filter_map(|descriptor| match &descriptor.origin {
            ToolOrigin::Linked { location } => Some(location.replace('\\', "/")),
            _ => None,
        })
        .collect();
    Ok(workspace_members(metadata)
        .into_iter()
        .filter(|package| is_domain_crate(&package.name))
        .filter(|package| {
            let crate_dir = format!("{}/", display_path(&package_dir(package)));
            !tool_locations
                .iter()
                .any(|location| location.starts_with(&crate_dir))
        })
        .map(|package| package.name.to_string())
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

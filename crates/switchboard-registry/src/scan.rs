//! What the binary linked, checked before the registry boots: the domains and the tool
//! policies that `inventory` collected from every crate.
//!
//! Kept apart from the builder because these checks are about the link, not the builder's
//! settings: two crates declaring one domain, a policy for a tool nobody linked, a remote
//! domain no crate declares. Each stops the boot with the places to fix.

use std::{collections::BTreeMap, sync::Arc};

use switchboard_core::{ToolPolicyEntry, linked_domains, linked_policies, linked_tools};

use crate::{
    config::RegistryConfig, domain::DomainRuntime, error::RegistryError, link::DomainLink,
    registry::MakeCell,
};

/// Every linked tool policy by tool name. A policy naming no linked tool, or a second policy
/// for one tool, stops the boot: policies cannot drift from their tools. (A policy of a tool
/// whose domain is excluded is simply unused.)
pub(crate) fn scan_policies()
-> Result<BTreeMap<&'static str, &'static ToolPolicyEntry>, RegistryError> {
    let mut policies: BTreeMap<&'static str, &'static ToolPolicyEntry> = BTreeMap::new();
    for policy in linked_policies() {
        if !linked_tools().any(|entry| entry.spec.name == policy.tool) {
            return Err(RegistryError::PolicyForUnknownTool {
                tool: policy.tool.to_owned(),
                location: policy.location.to_string(),
            });
        }
        if let Some(first) = policies.insert(policy.tool, policy) {
            return Err(RegistryError::DuplicatePolicy {
                tool: policy.tool.to_owned(),
                first: first.location.to_string(),
                second: policy.location.to_string(),
            });
        }
    }
    Ok(policies)
}

/// A runtime for every linked domain not `excluded`: linked to the registry that serves it when
/// `remote` names it, else with the state `states` gives it or the initial state its
/// declaration names.
pub(crate) fn scan_domains(
    config: &RegistryConfig,
    excluded: &dyn Fn(&str) -> bool,
    mut states: BTreeMap<&'static str, MakeCell>,
    mut remote: BTreeMap<String, Arc<dyn DomainLink>>,
) -> Result<BTreeMap<Arc<str>, Arc<DomainRuntime>>, RegistryError> {
    let mut seen: BTreeMap<&'static str, &'static str> = BTreeMap::new();
    let mut domains = BTreeMap::new();
    for entry in linked_domains().filter(|entry| !excluded(entry.name)) {
        if let Some(first) = seen.insert(entry.name, entry.state_type) {
            return Err(RegistryError::DuplicateDomain {
                name: entry.name.to_owned(),
                first: first.to_owned(),
                second: entry.state_type.to_owned(),
            });
        }
        let concurrency = config.concurrency_of(entry.name);
        let runtime = match (remote.remove(entry.name), states.remove(entry.name)) {
            (Some(link), _) => DomainRuntime::linked(entry.name, link, concurrency),
            (None, Some(make)) => DomainRuntime::new(entry.name, make, concurrency),
            (None, None) => DomainRuntime::new(entry.name, entry.cell, concurrency),
        };
        domains.insert(Arc::clone(&runtime.name), runtime);
    }
    if let Some(name) = remote.into_keys().find(|name| !excluded(name)) {
        return Err(RegistryError::UnknownRemoteDomain {
            domain: name,
            known: domains
                .keys()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(domains)
}

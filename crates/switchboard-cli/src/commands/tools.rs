//! `switchboard tools [--json]`: every linked tool, sorted by name, and where each domain
//! lives.
//!
//! The table shows what a person needs to pick a tool, then one line per domain: where its
//! calls run (in this process, or the kind and location of the link to the node serving it)
//! and its health. `--json` adds the intents the orchestrator routes on and the tags (when a
//! tool has any), keeps the full description, and gives each tool its domain's placement and
//! health.

use std::collections::BTreeMap;

use serde::Serialize;
use switchboard::{
    Category, DomainStatus, ToolRegistry,
    registry::{IN_PROCESS, LinkHealth},
};

use crate::{app::Exit, args::ToolsArgs, output, render};

/// One tool, as `tools --json` prints it.
#[derive(Debug, Serialize)]
struct ToolRow<'a> {
    name: &'a str,
    domain: &'a str,
    category: Category,
    permission: &'a str,
    description: &'a str,
    intents: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<&'a str>,
    /// Where its domain's calls run: `in-process`, or the link's kind (`mcp`, …).
    placement: &'a str,
    /// Where the linked domain lives; absent for a domain in this process.
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<&'a str>,
    /// The domain's health: see [`health`].
    health: String,
}

/// A domain's health in one word, and why when its link is open: `running` or `stopped` for a
/// domain in this process (its actor), `up`, `starting` or `open: REASON` for a linked one.
pub(crate) fn health(status: &DomainStatus) -> String {
    match &status.link {
        None if status.running => "running".to_owned(),
        None => "stopped".to_owned(),
        Some(link) => match &link.health {
            LinkHealth::Up => "up".to_owned(),
            LinkHealth::Starting => "starting".to_owned(),
            LinkHealth::Open { reason } => format!("open: {reason}"),
            // A state added later: its serialized tag.
            other => serde_json::to_value(other)
                .ok()
                .and_then(|value| value["state"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "unknown".to_owned()),
        },
    }
}

/// Where a domain lives, in one cell: `in-process`, or the link's kind and location.
pub(crate) fn placement(status: &DomainStatus) -> String {
    match &status.link {
        None => status.placement.clone(),
        Some(link) => format!("{} {}", status.placement, link.location),
    }
}

/// Prints the tools.
pub(super) fn run(registry: &ToolRegistry, args: &ToolsArgs) -> anyhow::Result<Exit> {
    let mut tools = registry.list();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let tools: Vec<_> = tools.iter().map(|tool| &**tool).collect();
    let domains: BTreeMap<String, DomainStatus> = registry
        .domains()
        .into_iter()
        .map(|status| (status.name.clone(), status))
        .collect();
    if args.json {
        let rows: Vec<ToolRow<'_>> = tools
            .iter()
            .map(|tool| ToolRow {
                name: &tool.name,
                domain: &tool.domain,
                category: tool.category,
                permission: &tool.permission,
                description: &tool.description,
                intents: tool.intents.iter().map(|intent| &**intent).collect(),
                tags: tool.tags.iter().map(|tag| &**tag).collect(),
                placement: domains
                    .get(&*tool.domain)
                    .map_or(IN_PROCESS, |status| &status.placement),
                location: domains
                    .get(&*tool.domain)
                    .and_then(|status| Some(&*status.link.as_ref()?.location)),
                health: domains.get(&*tool.domain).map_or_else(String::new, health),
            })
            .collect();
        output::write_stdout(&output::to_json(&rows)?);
    } else {
        let domains: Vec<DomainStatus> = domains.into_values().collect();
        output::write_stdout(&render::tools(&tools, &domains));
    }
    Ok(Exit::Success)
}

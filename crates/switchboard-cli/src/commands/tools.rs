//! `switchboard tools [--json]`: every linked tool, sorted by name.
//!
//! The table shows what a person needs to pick a tool; `--json` adds the intents the
//! orchestrator routes on and the tags (when a tool has any), and keeps the full description.

use serde::Serialize;
use switchboard::{Category, ToolRegistry};

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
}

/// Prints the tools.
pub(super) fn run(registry: &ToolRegistry, args: &ToolsArgs) -> anyhow::Result<Exit> {
    let mut tools = registry.list();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let tools: Vec<_> = tools.iter().map(|tool| &**tool).collect();
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
            })
            .collect();
        output::write_stdout(&output::to_json(&rows)?);
    } else {
        output::write_stdout(&render::tools(&tools));
    }
    Ok(Exit::Success)
}

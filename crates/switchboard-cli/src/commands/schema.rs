//! `switchboard schema TOOL [--format anthropic|mcp]`: one tool's definition, as pretty JSON.
//!
//! The shapes are the runtime's own (`ToolDescriptor::anthropic` and `::mcp`), so what this
//! prints is exactly what an agent is given. A name nothing is registered under is refused as
//! `tool_not_found`, with the names that look alike.

use switchboard::{InvokeError, ToolRegistry};

use crate::{
    app::Exit,
    args::{SchemaArgs, SchemaFormat},
    hints, output, render,
};

/// Prints the definition, or says the tool does not exist.
pub(super) fn run(registry: &ToolRegistry, args: &SchemaArgs) -> anyhow::Result<Exit> {
    let Some(tool) = registry.find(&args.tool) else {
        let suggestions = registry.similar_names(&args.tool);
        let hints = hints::unknown_tool(&suggestions);
        let error = InvokeError::ToolNotFound {
            name: args.tool.clone(),
            suggestions,
        };
        output::write_stderr(&render::schema_refusal(&error, &hints));
        return Ok(Exit::Refused);
    };
    let definition = match args.format {
        SchemaFormat::Anthropic => tool.anthropic(),
        SchemaFormat::Mcp => tool.mcp(),
    };
    output::write_stdout(&output::to_json(&definition)?);
    Ok(Exit::Success)
}

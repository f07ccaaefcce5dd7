//! The arguments of the commands that show what the linked domains offer: `tools`, `schema`,
//! `prompts` and `prompt`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{MountArgs, RegistryArgs};
use crate::identity::IdentityArgs;

/// `switchboard tools [--json]`.
#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// Print a JSON array (with each tool's intents) instead of a table.
    #[arg(long)]
    pub(crate) json: bool,

    /// Mounted MCP servers, whose tools are listed too.
    #[command(flatten)]
    pub(crate) mounts: MountArgs,

    /// Read settings from this TOML file: its `[[remote_domain]]` entries are listed with
    /// their placement and health.
    #[arg(long, value_name = "FILE", env = "SWITCHBOARD_CONFIG")]
    pub(crate) config: Option<PathBuf>,
}

/// `switchboard schema TOOL [--format anthropic|mcp]`.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// The tool's name (see `switchboard tools`).
    #[arg(value_name = "TOOL")]
    pub(crate) tool: String,

    /// Which definition shape to print.
    #[arg(long, value_enum, default_value_t = SchemaFormat::Mcp)]
    pub(crate) format: SchemaFormat,
}

/// The shapes `schema` can print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchemaFormat {
    /// `{name, description, input_schema}`, for the Anthropic Messages API.
    Anthropic,
    /// The MCP `Tool` object: `inputSchema`, `outputSchema`, annotations and `_meta`.
    Mcp,
}

/// `switchboard prompts [--json]`.
#[derive(Debug, Args)]
pub(crate) struct PromptsArgs {
    /// Print a JSON array (each prompt with its arguments, their descriptions and values)
    /// instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `switchboard prompt NAME [--arg NAME=VALUE]... [IDENTITY] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct PromptArgs {
    /// The prompt's name (see `switchboard prompts`).
    #[arg(value_name = "NAME")]
    pub(crate) prompt: String,

    /// One argument, as `NAME=VALUE` (the value is a string; give the flag once per argument).
    #[arg(long = "arg", value_name = "NAME=VALUE", value_parser = parse_prompt_argument)]
    pub(crate) arguments: Vec<(String, String)>,

    /// Print one JSON object: `{"result": {"description", "messages"}}` or `{"error"}`.
    #[arg(long)]
    pub(crate) json: bool,

    /// Who asks for it.
    #[command(flatten)]
    pub(crate) identity: IdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,
}

/// `NAME=VALUE`, split at the first `=`.
fn parse_prompt_argument(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not NAME=VALUE")),
    }
}

//! `docs/reference/tools.json`: the catalog for programs.
//!
//! The shape is `{"tools": [...], "pages": [...], "prompts": [...]}`: one object per tool,
//! sorted by domain then name, then the pages by route and the prompts by name. Each
//! object carries the descriptor's fields, the JSON Schemas, and the ready-made Anthropic
//! (`ToolDescriptor::anthropic`) and MCP (`ToolDescriptor::mcp`) tool definitions. The
//! descriptor's `origin` (`file:line` of the definition) is left out on purpose: moving a
//! function must not make the catalog stale.
//!
//! Object keys inside schemas are re-inserted in sorted order, so the output is the same
//! whether or not some other crate in the build turns on `serde_json/preserve_order`.

use serde::Serialize;
use serde_json::{Map, Value};
use switchboard::{Category, ToolDescriptor};

use super::RegistrySnapshot;

#[derive(Serialize)]
struct CatalogJson<'a> {
    tools: Vec<ToolJson>,
    pages: &'a [super::PageSummary],
    prompts: &'a [switchboard::PromptDescriptor],
}

#[derive(Serialize)]
struct ToolJson {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    domain: String,
    category: Category,
    permission: String,
    description: String,
    intents: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
    input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<Value>,
    anthropic: Value,
    mcp: Value,
}

impl ToolJson {
    fn from_descriptor(tool: &ToolDescriptor) -> Self {
        ToolJson {
            name: tool.name.to_string(),
            title: tool.title.as_ref().map(ToString::to_string),
            domain: tool.domain.to_string(),
            category: tool.category,
            permission: tool.permission.to_string(),
            description: tool.description.to_string(),
            intents: tool.intents.iter().map(ToString::to_string).collect(),
            tags: tool.tags.iter().map(ToString::to_string).collect(),
            timeout_ms: tool
                .timeout
                .map(|timeout| u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
            input_schema: sorted_keys(&tool.input_schema),
            output_schema: tool.output_schema.as_deref().map(sorted_keys),
            anthropic: sorted_keys(&tool.anthropic()),
            mcp: sorted_keys(&tool.mcp()),
        }
    }
}

/// Pretty JSON with a trailing newline.
pub(super) fn render(snapshot: &RegistrySnapshot) -> serde_json::Result<String> {
    let catalog = CatalogJson {
        tools: snapshot
            .tools
            .iter()
            .map(ToolJson::from_descriptor)
            .collect(),
        pages: &snapshot.pages,
        prompts: &snapshot.prompts,
    };
    let mut text = serde_json::to_string_pretty(&catalog)?;
    text.push('\n');
    Ok(text)
}

/// A copy of `value` whose objects list their keys in sorted order.
pub(super) fn sorted_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|left, right| left.0.cmp(right.0));
            let sorted: Map<String, Value> = entries
                .into_iter()
                .map(|(key, child)| (key.clone(), sorted_keys(child)))
                .collect();
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted_keys).collect()),
        other => other.clone(),
    }
}

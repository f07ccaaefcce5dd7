//! What a caller sees of a page: its content and the actions offered to them, as data (MCP
//! `structuredContent`, JSON) and as markdown (what a model or a person reads).

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use switchboard_core::Category;

/// A loaded page, as one caller sees it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PageView {
    /// The URL it was loaded from, as given.
    pub url: String,
    /// The route it matched, such as `/roster/shifts/{shift_id}`.
    pub route: &'static str,
    /// Its title.
    pub title: &'static str,
    /// Its content, as markdown, without the title or the actions.
    pub content: String,
    /// What it loaded, as JSON.
    pub data: Value,
    /// The version of `data`: pass it back to
    /// [`Navigator::execute_action`](crate::Navigator::execute_action) to refuse an action on
    /// a page that changed since.
    #[schemars(description = "The version of `data`: it changes when the loaded data does.")]
    pub version: String,
    /// The actions offered to this caller here, in the page's order.
    pub actions: Vec<ActionView>,
}

/// How an offered action runs for this caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionMode {
    /// It runs when asked (reads, proposals, and a person's changes).
    Run,
    /// It runs when asked with an explicit confirmation (a person's restricted action).
    Confirm,
    /// It is stored as a proposal that a person with its permission approves (an agent's
    /// change).
    Propose,
}

/// An action offered on a page.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ActionView {
    /// What to pass as `action`.
    pub name: &'static str,
    /// The tool it runs.
    pub tool: String,
    /// The tool's description, first sentence.
    pub description: String,
    /// The tool's category.
    pub category: Category,
    /// How it runs for this caller.
    pub mode: ActionMode,
    /// The parameters the caller still supplies (the page binds the others).
    pub params: Vec<ParamView>,
}

/// One parameter an action still needs.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ParamView {
    /// Its name in `params`.
    pub name: String,
    /// Its JSON type (`string`, `integer`, ...).
    #[serde(rename = "type")]
    pub json_type: String,
    /// Whether it must be given.
    pub required: bool,
    /// What it is, from the tool's input schema.
    pub description: String,
}

impl PageView {
    /// The whole page as markdown: title, content, then an "Available actions" section that
    /// ends by saying how an agent runs one ([`EXECUTE_ACTION_HINT`]).
    pub fn markdown(&self) -> String {
        self.markdown_with_hint(EXECUTE_ACTION_HINT)
    }

    /// [`PageView::markdown`] for a surface that runs actions some other way: `hint` ends the
    /// actions section (the command line says `switchboard act`, not the MCP tool).
    pub fn markdown_with_hint(&self, hint: &str) -> String {
        let mut text = format!("# {}\n\n", self.title);
        let content = self.content.trim();
        if !content.is_empty() {
            text.push_str(content);
            text.push_str("\n\n");
        }
        text.push_str(&actions_markdown(&self.actions, hint));
        text
    }
}

/// The last line of a page's actions in [`PageView::markdown`]: how an agent runs one, with the
/// MCP tool `execute_action`.
pub const EXECUTE_ACTION_HINT: &str = "Run one with `execute_action` and this page's URL.";

/// The "Available actions" section, ending with `hint` when there is an action to run.
fn actions_markdown(actions: &[ActionView], hint: &str) -> String {
    let mut text = String::from("## Available actions\n\n");
    if actions.is_empty() {
        text.push_str("None for you here.\n");
        return text;
    }
    for action in actions {
        let how = match action.mode {
            ActionMode::Run => match action.category {
                Category::Read => "reads",
                Category::Propose => "proposes, changes nothing",
                Category::Execute | Category::Restricted => "changes data",
            },
            ActionMode::Confirm => "changes data and cannot be undone: needs confirmation",
            ActionMode::Propose => "becomes a proposal that a person approves",
        };
        let _ = writeln!(text, "- `{}`: {} ({how})", action.name, action.description);
        for param in &action.params {
            let need = if param.required {
                "required"
            } else {
                "optional"
            };
            let _ = writeln!(
                text,
                "  - `{}` ({}, {need}): {}",
                param.name, param.json_type, param.description
            );
        }
    }
    let _ = writeln!(text, "\n{hint}");
    text
}

/// The parameters of `input_schema` minus those the page binds.
pub(crate) fn unbound_params(
    input_schema: &Value,
    bound: &serde_json::Map<String, Value>,
) -> Vec<ParamView> {
    let required: Vec<&str> = input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(name, _)| !bound.contains_key(*name))
        .map(|(name, property)| ParamView {
            name: name.clone(),
            json_type: json_type(property),
            required: required.contains(&name.as_str()),
            description: property
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        })
        .collect()
}

/// A property's JSON type: its first non-null `type`, `string` when it names none.
fn json_type(property: &Value) -> String {
    match property.get("type") {
        Some(Value::String(single)) => single.clone(),
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null")
            .unwrap_or("string")
            .to_owned(),
        _ => "string".to_owned(),
    }
}

/// The first sentence of a description.
pub(crate) fn first_sentence(description: &str) -> String {
    let end = description
        .find(". ")
        .map_or(description.len(), |at| at + 1);
    description[..end].trim().to_owned()
}

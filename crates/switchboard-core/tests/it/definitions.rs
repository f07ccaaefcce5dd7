//! Pins the tool definitions clients see: the Anthropic and MCP shapes of a sample tool, as
//! insta snapshots (`tests/it/snapshots/`), plus plain assertions on the parts that must hold
//! whatever else changes. Review snapshot changes with `cargo insta review`, or regenerate with
//! `INSTA_UPDATE=always cargo test -p switchboard-core --test it definitions` and read the diff.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_core::{ToolContext, ToolDescriptor, ToolEntry, ToolError, ToolInput, tool};
use validator::Validate;

/// The sample domain's state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Roster {
    /// Every planned shift.
    pub shifts: Vec<Shift>,
}

switchboard_core::domain! {
    /// Who works when.
    Shifts { name: "shifts", state: Roster = Roster::default }
}

/// One planned shift.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Shift {
    /// The team the shift belongs to.
    pub team: String,
    /// The day, `YYYY-MM-DD`.
    pub day: String,
    /// Who works it.
    pub person: String,
}

/// A range of days.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate)]
pub(crate) struct Window {
    /// First day, `YYYY-MM-DD`.
    #[validate(length(min = 10, max = 10))]
    pub from: String,
    /// Last day, inclusive, `YYYY-MM-DD`.
    #[validate(length(min = 10, max = 10))]
    pub to: String,
}

/// What to list.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
pub(crate) struct ListShiftsInput {
    /// The team whose shifts to list.
    #[validate(length(min = 1, max = 64))]
    pub team: String,
    /// How many shifts to return at most.
    #[validate(range(min = 1, max = 100))]
    pub limit: u32,
    /// Only shifts inside this window.
    #[validate(nested)]
    pub window: Window,
    /// Only the shifts of this person, if given.
    pub person: Option<String>,
}

/// The shifts found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct ShiftList {
    /// Matching shifts, oldest first.
    pub shifts: Vec<Shift>,
}

/// Lists a team's shifts in a window of days, oldest first.
///
/// Use it to answer "who works when"; it never changes the roster.
#[tool(
    domain = Shifts,
    category = read,
    permission = "shifts.list",
    title = "List shifts",
    intents = ["shifts of {team}", "who works in {team}"],
    tags = ["planning", "beta"],
    timeout_ms = 1500
)]
async fn list_shifts(
    ctx: &ToolContext<Roster>,
    input: ListShiftsInput,
) -> Result<ShiftList, ToolError> {
    let roster = ctx.state();
    let shifts = roster
        .shifts
        .iter()
        .filter(|shift| shift.team == input.team)
        .filter(|shift| input.window.from <= shift.day && shift.day <= input.window.to)
        .filter(|shift| {
            input
                .person
                .as_ref()
                .is_none_or(|person| *person == shift.person)
        })
        .take(input.limit as usize)
        .cloned()
        .collect();
    Ok(ShiftList { shifts })
}

fn entry() -> &'static ToolEntry {
    switchboard_core::linked_tools()
        .find(|entry| entry.spec.name == "shifts_list_shifts")
        .expect("the sample tool is linked")
}

fn descriptor() -> ToolDescriptor {
    ToolDescriptor::from_entry(entry())
}

// Sorted keys, so the snapshots do not depend on whether some other crate in the build turns on
// serde_json's `preserve_order`.
#[test]
fn anthropic_shape_snapshot() {
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("anthropic", descriptor().anthropic());
    });
}

#[test]
fn mcp_shape_snapshot() {
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("mcp", descriptor().mcp());
    });
}

#[test]
fn anthropic_shape_has_exactly_name_description_and_input_schema() {
    let tool = descriptor().anthropic();
    let mut keys: Vec<&str> = object(&tool).keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["description", "input_schema", "name"]);
    assert_eq!(tool["name"], "shifts_list_shifts");
    assert_eq!(
        tool["description"],
        "Lists a team's shifts in a window of days, oldest first.\n\n\
         Use it to answer \"who works when\"; it never changes the roster."
    );

    let schema = &tool["input_schema"];
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"].is_object(), "{schema}");
    assert!(schema["required"].is_array(), "{schema}");
    // The Anthropic API takes a bare schema: no `$schema`, no Rust type name as `title`.
    assert!(object(schema).get("$schema").is_none(), "{schema}");
    assert!(object(schema).get("title").is_none(), "{schema}");
}

#[test]
fn mcp_shape_declares_2020_12_and_annotations() {
    let tool = descriptor().mcp();
    assert_eq!(tool["name"], "shifts_list_shifts");
    assert_eq!(tool["title"], "List shifts");
    assert_eq!(
        tool["inputSchema"]["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(tool["inputSchema"]["type"], "object");
    assert_eq!(tool["outputSchema"]["type"], "object");
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(tool["annotations"]["destructiveHint"], false);
    assert_eq!(tool["_meta"]["switchboard/domain"], "shifts");
    assert_eq!(tool["_meta"]["switchboard/permission"], "shifts.list");
    assert_eq!(
        tool["_meta"]["switchboard/tags"],
        json!(["planning", "beta"])
    );
}

#[test]
fn tags_are_in_the_spec_and_the_descriptor_in_declared_order() {
    assert_eq!(entry().spec.tags, ["planning", "beta"]);
    let descriptor = descriptor();
    assert_eq!(descriptor.tags, ["planning", "beta"]);
    let serialized = serde_json::to_value(&descriptor).expect("a descriptor is JSON");
    assert_eq!(serialized["tags"], json!(["planning", "beta"]));
}

#[test]
fn field_docs_become_descriptions() {
    let schema = &descriptor().anthropic()["input_schema"];
    let properties = &schema["properties"];
    assert_eq!(
        properties["team"]["description"],
        "The team whose shifts to list."
    );
    assert_eq!(
        properties["limit"]["description"],
        "How many shifts to return at most."
    );
    assert_eq!(
        properties["person"]["description"],
        "Only the shifts of this person, if given."
    );
    let window = resolve(schema, &properties["window"]);
    assert_eq!(
        window["properties"]["from"]["description"],
        "First day, `YYYY-MM-DD`."
    );
}

#[test]
fn validator_attributes_become_keywords() {
    let schema = &descriptor().anthropic()["input_schema"];
    let properties = &schema["properties"];
    assert_eq!(properties["team"]["minLength"], 1);
    assert_eq!(properties["team"]["maxLength"], 64);
    assert_eq!(properties["limit"]["minimum"], 1);
    assert_eq!(properties["limit"]["maximum"], 100);
    let window = resolve(schema, &properties["window"]);
    assert_eq!(window["properties"]["from"]["minLength"], 10);
    assert_eq!(window["properties"]["from"]["maxLength"], 10);
}

#[test]
fn option_fields_are_optional_and_nullable() {
    let schema = &descriptor().anthropic()["input_schema"];
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .expect("`required` is an array")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["limit", "team", "window"]);
    // Nullable as `anyOf`, one type per schema: strict clients read `type` as one string.
    assert_eq!(
        schema["properties"]["person"]["anyOf"],
        json!([{"type": "string"}, {"type": "null"}])
    );
    assert_eq!(schema["properties"]["person"].get("type"), None);
}

fn object(value: &Value) -> &serde_json::Map<String, Value> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("expected an object, got {value}"))
}

/// Follows a local `$ref` (`#/$defs/Name`) inside `root`; returns `schema` if it has none.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let pointer = reference
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("not a local reference: {reference}"));
            root.pointer(pointer)
                .unwrap_or_else(|| panic!("dangling reference: {reference}"))
        }
        None => schema,
    }
}

//! Two tools with the same name refuse the whole registry at boot, with an error that names
//! both definitions (`file:line`), so the author knows which two to tell apart. Excluding the
//! domain that holds them lets the rest boot.
//!
//! This binary's tool set is broken on purpose, so it is its own test file.

mod common;

use common::{names, start_excluding};
use switchboard_core::{NoInput, Tool, ToolContext, ToolError, tool};
use switchboard_registry::{RegistryError, ToolRegistry};

switchboard_core::domain! {
    /// Holds two tools that share a name.
    Twins { name: "twins" }
}

switchboard_core::domain! {
    /// Holds a tool with a name of its own.
    Single { name: "single" }
}

/// The first of two tools named `twins_same`.
#[tool(domain = Twins, category = read, permission = "twins.use", name = "twins_same")]
async fn first(_ctx: &ToolContext, _input: NoInput) -> Result<u8, ToolError> {
    Ok(1)
}

/// The second of two tools named `twins_same`.
#[tool(domain = Twins, category = read, permission = "twins.use", name = "twins_same")]
async fn second(_ctx: &ToolContext, _input: NoInput) -> Result<u8, ToolError> {
    Ok(2)
}

/// A tool whose name nobody else takes.
#[tool(domain = Single, category = read, permission = "single.use")]
async fn alone(_ctx: &ToolContext, _input: NoInput) -> Result<u8, ToolError> {
    Ok(0)
}

/// This file's source, to check that reported lines are the `#[tool]` lines.
const SOURCE: &str = include_str!("boot_duplicate_tool.rs");

fn assert_points_at_a_tool_attribute(location: &str) {
    let (file, line) = location
        .rsplit_once(':')
        .unwrap_or_else(|| panic!("`{location}` is `file:line`"));
    assert!(file.ends_with("tests/boot_duplicate_tool.rs"), "{location}");
    let line: usize = line
        .parse()
        .unwrap_or_else(|_| panic!("`{location}` ends with a line"));
    let text = SOURCE.lines().nth(line - 1).unwrap_or_default();
    assert!(text.starts_with("#[tool("), "{location} is `{text}`");
}

#[tokio::test]
async fn duplicate_tool_names_refuse_the_registry_and_name_both_places() {
    let error = ToolRegistry::start()
        .await
        .expect_err("two tools are named twins_same");
    let RegistryError::DuplicateTool {
        name,
        first,
        second,
    } = &error
    else {
        panic!("expected DuplicateTool, got {error:?}");
    };
    assert_eq!(name, "twins_same");
    assert_ne!(first, second);
    let mut reported = [first.clone(), second.clone()];
    reported.sort();
    let mut defined = [
        First::SPEC.location.to_string(),
        Second::SPEC.location.to_string(),
    ];
    defined.sort();
    assert_eq!(reported, defined, "the error names both definitions");
    assert_points_at_a_tool_attribute(first);
    assert_points_at_a_tool_attribute(second);

    let message = error.to_string();
    assert!(message.contains("`twins_same`"), "{message}");
    assert!(
        message.contains(first.as_str()) && message.contains(second.as_str()),
        "{message}"
    );
    assert!(
        message.contains("rename"),
        "the message says what to do: {message}"
    );
}

#[tokio::test]
async fn excluding_the_domain_of_the_duplicates_lets_the_rest_boot() {
    let registry = start_excluding("twins")
        .await
        .expect("without the twins, every name is unique");
    let tools = registry.list();
    assert_eq!(names(&tools), ["single_alone"]);
    registry.shutdown().await;
}

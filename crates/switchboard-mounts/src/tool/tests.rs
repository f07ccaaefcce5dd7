//! A mounted tool's category, descriptor and results, from rmcp values built here.

use std::collections::BTreeMap;

use rmcp::model::{ContentBlock, ToolAnnotations};
use serde_json::json;

use super::*;
use crate::config::{ServerConfig, ToolOverride, Transport};

fn tool(annotations: Option<ToolAnnotations>) -> Tool {
    let schema = json!({"type": "object", "properties": {"message": {"type": "string"}}});
    let mut tool = Tool::new(
        "echo",
        "Echoes the message.",
        Arc::new(schema.as_object().cloned().unwrap_or_default()),
    );
    tool.annotations = annotations;
    tool
}

fn hints(read_only: Option<bool>, destructive: Option<bool>) -> Option<ToolAnnotations> {
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = read_only;
    annotations.destructive_hint = destructive;
    Some(annotations)
}

fn server(category: Option<Category>, tools: BTreeMap<String, ToolOverride>) -> ServerConfig {
    ServerConfig {
        id: "everything".into(),
        transport: Transport::Stdio {
            command: "x".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
        start_timeout: Duration::from_secs(1),
        call_timeout: Duration::from_secs(2),
        category,
        permission: "mounts.everything".into(),
        lazy: false,
        tools,
        restart: crate::actor::RestartPolicy::default(),
    }
}

#[test]
fn annotations_decide_only_when_nothing_is_configured() {
    assert_eq!(category_of(None, &tool(None)), Category::Execute);
    assert_eq!(
        category_of(None, &tool(hints(Some(true), None))),
        Category::Read
    );
    assert_eq!(
        category_of(None, &tool(hints(None, Some(true)))),
        Category::Restricted
    );
}

#[test]
fn annotations_may_tighten_the_configuration_never_loosen_it() {
    let read_only = tool(hints(Some(true), None));
    assert_eq!(
        category_of(Some(Category::Execute), &read_only),
        Category::Execute
    );
    let destructive = tool(hints(None, Some(true)));
    assert_eq!(
        category_of(Some(Category::Read), &destructive),
        Category::Restricted
    );
    // A server saying "not destructive" cannot undo a configured restricted.
    let harmless = tool(hints(Some(true), Some(false)));
    assert_eq!(
        category_of(Some(Category::Restricted), &harmless),
        Category::Restricted
    );
}

#[test]
fn the_descriptor_prefixes_the_name_and_takes_overrides() {
    let overrides = BTreeMap::from([(
        "echo".to_owned(),
        ToolOverride {
            category: Some(Category::Read),
            permission: Some("mounts.everything.echo".into()),
        },
    )]);
    let described = descriptor(&server(Some(Category::Execute), overrides), &tool(None));
    assert_eq!(described.name, "everything_echo");
    assert_eq!(described.domain, "everything");
    assert_eq!(described.category, Category::Read);
    assert_eq!(described.permission, "mounts.everything.echo");
    assert_eq!(described.timeout, Some(Duration::from_secs(2)));
    assert_eq!(
        described.input_schema["properties"]["message"]["type"],
        "string"
    );
    assert!(
        described.returns_content(),
        "no output schema: content blocks"
    );

    let plain = descriptor(&server(None, BTreeMap::new()), &tool(None));
    assert_eq!(plain.permission, "mounts.everything");
    assert_eq!(plain.category, Category::Execute);
}

#[test]
fn content_passes_through_and_is_error_becomes_a_tool_error() {
    let result = CallToolResult::success(vec![ContentBlock::text("hello")]);
    let output = output_of("s", "echo", result, false).expect("an output");
    assert_eq!(
        output,
        json!({"content": [{"type": "text", "text": "hello"}]})
    );

    let failed = CallToolResult::error(vec![ContentBlock::text("no such file")]);
    let error = output_of("s", "read", failed, false).expect_err("an error");
    assert_eq!(error.code(), MOUNTED_TOOL_ERROR);
    assert_eq!(error.message(), "no such file");
}

#[test]
fn a_structured_tool_answers_its_structured_content() {
    let result = CallToolResult::structured(json!({"sum": 3}));
    assert_eq!(
        output_of("s", "add", result, true).expect("an output"),
        json!({"sum": 3})
    );
    let unstructured = CallToolResult::success(vec![ContentBlock::text("3")]);
    let error = output_of("s", "add", unstructured, true).expect_err("no structuredContent");
    assert!(
        error.message().contains("no structuredContent"),
        "{}",
        error.message()
    );
}

//! The conformance tools run directly, without a registry: each answers what its scenario
//! expects, in the shape the MCP server turns into content blocks.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchboard_core::{
    CallContext, Category, DomainCell, NoInput, Progress, ProgressNotifier, Tool, ToolContext,
    ToolDescriptor, linked_tools,
};

use crate::{
    DOMAIN, ErrorHandling, ImageContent, JsonSchemaFeatures, MultipleContentTypes, PERMISSION,
    SimpleText, TemplateData, ToolWithProgress,
};

fn context(progress: ProgressNotifier) -> ToolContext {
    let caller = CallContext::builder()
        .org("acme")
        .user("alice")
        .session("test-session")
        .correlation("test-correlation")
        .progress(progress)
        .build()
        .verify()
        .expect("the test context is complete");
    ToolContext::new(
        caller,
        Arc::from("test"),
        Category::Read,
        DomainCell::standalone(DOMAIN, ()),
    )
}

fn json_of(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("serialises")
}

#[tokio::test]
async fn content_tools_answer_the_blocks_their_scenarios_expect() {
    let ctx = context(ProgressNotifier::none());
    let text = SimpleText::call(&ctx, NoInput {}).await.expect("answers");
    assert_eq!(
        json_of(&text),
        json!({"content": [{"type": "text", "text": "This is a simple text response for testing."}]})
    );
    let image = json_of(&ImageContent::call(&ctx, NoInput {}).await.expect("answers"));
    assert_eq!(image["content"][0]["type"], "image");
    assert_eq!(image["content"][0]["mimeType"], "image/png");
    let mixed = json_of(
        &MultipleContentTypes::call(&ctx, NoInput {})
            .await
            .expect("answers"),
    );
    let kinds: Vec<&str> = mixed["content"]
        .as_array()
        .expect("blocks")
        .iter()
        .filter_map(|block| block["type"].as_str())
        .collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    assert_eq!(
        mixed["content"][2]["resource"]["uri"],
        "test://mixed-content-resource"
    );
}

#[tokio::test]
async fn the_progress_tool_reports_0_50_100_of_100() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let ctx = context(ProgressNotifier::new(move |progress: Progress<'_>| {
        sink.lock()
            .expect("not poisoned")
            .push((progress.done, progress.total));
    }));
    ToolWithProgress::call(&ctx, NoInput {})
        .await
        .expect("answers");
    assert_eq!(
        *seen.lock().expect("not poisoned"),
        [
            (0.0, Some(100.0)),
            (50.0, Some(100.0)),
            (100.0, Some(100.0))
        ]
    );
    // Without a listener the same tool runs the same way.
    ToolWithProgress::call(&context(ProgressNotifier::none()), NoInput {})
        .await
        .expect("answers");
}

#[tokio::test]
async fn the_error_tool_fails_with_the_suites_message() {
    let error = ErrorHandling::call(&context(ProgressNotifier::none()), NoInput {})
        .await
        .expect_err("always fails");
    assert_eq!(
        error.message(),
        "This tool intentionally returns an error for testing"
    );
}

#[test]
fn every_tool_is_a_read_tool_of_the_domain_and_content_tools_declare_no_output_schema() {
    let tools: Vec<ToolDescriptor> = linked_tools()
        .filter(|entry| entry.spec.domain == DOMAIN)
        .map(ToolDescriptor::from_entry)
        .collect();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "confirm_delete",
            "failing_job",
            "greet",
            "json_schema_2020_12_tool",
            "multi_input",
            "protocol_error_job",
            "slow_compute",
            "test_audio_content",
            "test_elicitation",
            "test_elicitation_sep1034_defaults",
            "test_elicitation_sep1330_enums",
            "test_embedded_resource",
            "test_error_handling",
            "test_header_parameter",
            "test_image_content",
            "test_input_required_result_capabilities",
            "test_input_required_result_elicitation",
            "test_input_required_result_list_roots",
            "test_input_required_result_multi_round",
            "test_input_required_result_multiple_inputs",
            "test_input_required_result_request_state",
            "test_input_required_result_sampling",
            "test_input_required_result_tampered_state",
            "test_logging_tool",
            "test_missing_capability",
            "test_multiple_content_types",
            "test_reconnection",
            "test_resource_static_binary",
            "test_resource_static_text",
            "test_resource_template_data",
            "test_resource_watched",
            "test_sampling",
            "test_simple_text",
            "test_streaming_elicitation",
            "test_tool_with_logging",
            "test_tool_with_progress",
            "test_tool_with_task",
        ]
    );
    for tool in &tools {
        assert_eq!(tool.category, Category::Read, "{}", tool.name);
        assert_eq!(tool.permission, PERMISSION, "{}", tool.name);
        let mcp = tool.mcp();
        // The two tools that answer JSON rather than content blocks.
        let json_tool =
            [JsonSchemaFeatures::SPEC.name, TemplateData::SPEC.name].contains(&tool.name.as_ref());
        assert_eq!(tool.returns_content(), !json_tool, "{}", tool.name);
        assert_eq!(mcp.get("outputSchema").is_some(), json_tool, "{mcp}");
    }
}

#[test]
fn the_task_tools_declare_their_task_support_to_mcp() {
    let support = |name: &str| {
        let entry = linked_tools()
            .find(|entry| entry.spec.name == name)
            .unwrap_or_else(|| panic!("{name} is linked"));
        let mcp = ToolDescriptor::from_entry(entry).mcp();
        mcp.get("execution")
            .map(|execution| execution["taskSupport"].clone())
    };
    assert_eq!(support("greet"), None);
    assert_eq!(support("test_simple_text"), None);
    for optional in [
        "slow_compute",
        "protocol_error_job",
        "confirm_delete",
        "multi_input",
    ] {
        assert_eq!(
            support(optional),
            Some(serde_json::json!("optional")),
            "{optional}"
        );
    }
    for required in ["failing_job", "test_tool_with_task"] {
        assert_eq!(
            support(required),
            Some(serde_json::json!("required")),
            "{required}"
        );
    }
    let asks_before_task: Vec<_> = linked_tools()
        .filter(|entry| entry.spec.asks_before_task)
        .map(|entry| entry.spec.name)
        .collect();
    assert_eq!(asks_before_task, ["test_tool_with_task"]);
}

#[test]
fn the_json_schema_tool_keeps_its_2020_12_keywords() {
    let entry = linked_tools()
        .find(|entry| entry.spec.name == "json_schema_2020_12_tool")
        .expect("linked");
    let schema = &ToolDescriptor::from_entry(entry).mcp()["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["additionalProperties"], false, "{schema}");
    assert_eq!(schema["$defs"]["address"]["type"], "object", "{schema}");
    assert!(
        schema["properties"]["address"]
            .to_string()
            .contains("#/$defs/address"),
        "{schema}"
    );
    assert_eq!(
        schema["$defs"]["address"]["$anchor"], "addressDef",
        "{schema}"
    );
    assert_eq!(
        schema["allOf"][0]["anyOf"],
        json!([{"required": ["phone"]}, {"required": ["email"]}]),
        "{schema}"
    );
    for keyword in ["if", "then", "else"] {
        assert!(schema.get(keyword).is_some(), "{keyword} in {schema}");
    }
    assert!(
        schema["properties"].get("contactMethod").is_some(),
        "{schema}"
    );
}

#[tokio::test]
async fn prompts_render_what_their_scenarios_expect() {
    use switchboard_core::Prompt;

    use crate::{
        PromptWithArguments, PromptWithEmbeddedResource, PromptWithImage, ResourceUri,
        SimplePrompt, TwoArguments,
    };

    let ctx = context(ProgressNotifier::none());
    let simple = SimplePrompt::render(&ctx, NoInput {})
        .await
        .expect("renders");
    assert_eq!(
        json_of(&simple),
        json!([{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}])
    );
    let with_arguments = PromptWithArguments::render(
        &ctx,
        TwoArguments {
            arg1: "hello".to_owned(),
            arg2: "world".to_owned(),
        },
    )
    .await
    .expect("renders");
    assert_eq!(
        json_of(&with_arguments)[0]["content"]["text"],
        "Prompt with arguments: arg1='hello', arg2='world'"
    );
    assert_eq!(
        PromptWithArguments::complete(&ctx, "arg1", "pa"),
        ["paris", "park", "party"]
    );
    let embedded = PromptWithEmbeddedResource::render(
        &ctx,
        ResourceUri {
            resource_uri: "test://example-resource".to_owned(),
        },
    )
    .await
    .expect("renders");
    assert_eq!(
        json_of(&embedded)[0]["content"],
        json!({"type": "resource", "resource": {
            "uri": "test://example-resource",
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing."
        }})
    );
    let image = PromptWithImage::render(&ctx, NoInput {})
        .await
        .expect("renders");
    assert_eq!(json_of(&image)[0]["content"]["type"], "image");
    assert_eq!(json_of(&image)[0]["content"]["mimeType"], "image/png");
    let descriptors: Vec<_> = switchboard_core::linked_prompts()
        .filter(|entry| entry.spec.domain == DOMAIN)
        .map(|entry| entry.descriptor().expect("string arguments"))
        .collect();
    assert_eq!(descriptors.len(), 5);
    let embedded_arguments = descriptors
        .iter()
        .find(|descriptor| descriptor.name == "test_prompt_with_embedded_resource")
        .map(|descriptor| descriptor.arguments.clone())
        .expect("linked");
    assert_eq!(embedded_arguments[0].name, "resourceUri");
    assert!(embedded_arguments[0].required);
}

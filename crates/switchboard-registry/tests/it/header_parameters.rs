//! Header parameters (`x-mcp-header`) at registration: a tool whose annotations MCP clients
//! would refuse is refused with the reason, and one whose annotations are sound is served.

use std::{borrow::Cow, sync::Arc};

use serde_json::{Value, json};
use switchboard_core::{BoxFuture, Category, ToolContext, ToolDescriptor, ToolError, ToolOrigin};
use switchboard_registry::{Exposure, RegistryConfig, RegistryError, RuntimeTool, RuntimeToolSpec};

use crate::common::start;

struct Nothing;

impl RuntimeTool for Nothing {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async { Ok(json!({})) })
    }
}

fn with_schema(name: &'static str, input_schema: Value) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Borrowed(name),
            title: None,
            domain: Cow::Borrowed("ext"),
            category: Category::Read,
            permission: Cow::Borrowed("ext.read"),
            description: Cow::Borrowed("Does nothing."),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: None,
            input_schema: Arc::new(input_schema),
            output_schema: None,
            origin: ToolOrigin::Runtime {
                source: "test".to_owned(),
            },
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
        },
        tool: Arc::new(Nothing),
        exposure: Exposure::Listed,
    }
}

#[tokio::test]
async fn unusable_header_parameters_are_refused_at_registration_and_sound_ones_served() {
    let registry = start(RegistryConfig::default()).await;
    let refused = registry
        .register(vec![with_schema(
            "ext_bad_header",
            json!({"type": "object", "properties": {
                "tags": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Tags"}
            }}),
        )])
        .await;
    match refused {
        Err(RegistryError::InvalidSchema { tool, reason }) => {
            assert_eq!(tool, "ext_bad_header");
            assert!(reason.contains("`tags`"), "{reason}");
            assert!(
                reason.contains("a string, an integer or a boolean"),
                "{reason}"
            );
        }
        other => panic!("expected an unusable schema, got {other:?}"),
    }
    assert!(registry.find("ext_bad_header").is_none());

    registry
        .register(vec![with_schema(
            "ext_good_header",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}
            }}),
        )])
        .await
        .expect("a sound header parameter is served");
    assert!(registry.find("ext_good_header").is_some());
    registry.shutdown().await;
}

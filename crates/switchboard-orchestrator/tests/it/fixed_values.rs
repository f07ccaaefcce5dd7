//! Intents that set values, and enum captures, end to end: a run-time stock tool whose input
//! takes a string enum (`filter`), an integer and a boolean. The orchestrator types fixed
//! values and captures by that schema, and the registry validates the call as it validates
//! every call. Malformed fixed values stop the orchestrator at start, naming what to fix.

use std::{borrow::Cow, sync::Arc};

use serde_json::{Value, json};
use switchboard_core::{
    BoxFuture, CallContext, Category, ErrorKind, Initiator, ToolContext, ToolDescriptor, ToolError,
    ToolOrigin,
};
use switchboard_orchestrator::{AskError, Orchestrator, OrchestratorError};
use switchboard_registry::{
    Exposure, PermissionMatrix, RuntimeTool, RuntimeToolSpec, ToolRegistry,
};

const TOOL: &str = "stock_list_items";

/// The intents of the stock tool: fixed values, an enum capture, and both.
const INTENTS: &[&str] = &[
    "what is low on stock => filter=low",
    "what is {filter} on stock",
    "everything on stock => filter=all, limit=50, include_archived=true",
    "top {limit} items => filter=all",
];

/// Answers with the params it was called with, so a test sees exactly what was routed.
struct Echo;

impl RuntimeTool for Echo {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { Ok(json!({ "params": params })) })
    }
}

/// The input schema, in the shape schemars writes for a documented enum (`oneOf` of `const`s
/// under `$defs`).
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "filter": {"$ref": "#/$defs/StockFilter"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "include_archived": {"type": "boolean"}
        },
        "required": ["filter"],
        "additionalProperties": false,
        "$defs": {
            "StockFilter": {"oneOf": [
                {"const": "low", "type": "string", "description": "Running low."},
                {"const": "out", "type": "string", "description": "None left."},
                {"const": "all", "type": "string", "description": "Every item."}
            ]}
        }
    })
}

fn stock_tool(intents: &[&'static str]) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Borrowed(TOOL),
            title: Some(Cow::Borrowed("List stock items")),
            domain: Cow::Borrowed("stock"),
            category: Category::Read,
            permission: Cow::Borrowed("stock.items.read"),
            description: Cow::Borrowed("Lists the items on stock, by how much is left."),
            intents: intents
                .iter()
                .map(|intent| Cow::Borrowed(*intent))
                .collect(),
            tags: Vec::new(),
            timeout: None,
            input_schema: Arc::new(schema()),
            output_schema: None,
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "orchestrator-test".to_owned(),
            },
        },
        tool: Arc::new(Echo),
        exposure: Exposure::Listed,
    }
}

/// A registry holding the stock tool with `intents`, which clerks may call.
async fn registry_with(intents: &[&'static str]) -> ToolRegistry {
    let permissions = PermissionMatrix::from_toml("[roles]\nclerk = [\"stock.*\"]\n")
        .expect("the test matrix parses");
    let registry = ToolRegistry::builder()
        .permissions(permissions)
        .start()
        .await
        .expect("the registry starts");
    registry
        .register(vec![stock_tool(intents)])
        .await
        .expect("the stock tool registers");
    registry
}

async fn orchestrator() -> Orchestrator {
    Orchestrator::start(registry_with(INTENTS).await)
        .await
        .expect("the orchestrator starts with valid fixed values")
}

fn clerk() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("ann")
        .session("session-ann")
        .correlation("orchestrator-it")
        .role("clerk")
        .initiator(Initiator::Human)
        .build()
}

/// What `utterance` routes to (intent, params), called through the registry.
async fn ask(orchestrator: &Orchestrator, utterance: &str) -> (String, Value) {
    match orchestrator.ask(utterance, &clerk()).await {
        Ok(answer) => {
            assert_eq!(answer.route.tool, TOOL);
            assert_eq!(
                answer.result["params"], answer.route.params,
                "the tool got the route's params"
            );
            (answer.route.intent.unwrap_or_default(), answer.route.params)
        }
        Err(error) => panic!("{utterance:?} should route and run: {error}"),
    }
}

#[tokio::test]
async fn a_fixed_value_and_an_enum_capture_reach_the_tool_in_the_schemas_spelling() {
    let orchestrator = orchestrator().await;
    for utterance in [
        "what is low on stock",
        "What is Low on stock?",
        "WHAT IS LOW ON STOCK",
    ] {
        let (intent, params) = ask(&orchestrator, utterance).await;
        assert_eq!(
            intent, "what is low on stock => filter=low",
            "{utterance:?}"
        );
        assert_eq!(params, json!({"filter": "low"}), "{utterance:?}");
    }
    for (utterance, filter) in [
        ("What is Out on stock?", "out"),
        ("what is ALL on stock", "all"),
    ] {
        let (intent, params) = ask(&orchestrator, utterance).await;
        assert_eq!(intent, "what is {filter} on stock", "{utterance:?}");
        assert_eq!(params, json!({"filter": filter}), "{utterance:?}");
    }
    orchestrator.shutdown().await;
}

#[tokio::test]
async fn several_fixed_values_are_typed_by_the_input_schema() {
    let orchestrator = orchestrator().await;
    let (_, params) = ask(&orchestrator, "everything on stock").await;
    assert_eq!(
        params,
        json!({"filter": "all", "limit": 50, "include_archived": true})
    );
    // Beside a capture; and with the intent's words in another order.
    let (_, params) = ask(&orchestrator, "top 5 items").await;
    assert_eq!(params, json!({"filter": "all", "limit": 5}));
    let (intent, params) = ask(&orchestrator, "on stock, everything").await;
    assert_eq!(intent, INTENTS[2]);
    assert_eq!(params["limit"], 50);
    orchestrator.shutdown().await;
}

#[tokio::test]
async fn routed_params_are_still_validated_by_the_registry() {
    let orchestrator = orchestrator().await;
    for utterance in ["top 80 items", "what is blue on stock"] {
        match orchestrator.ask(utterance, &clerk()).await {
            Err(error @ AskError::Invoke { .. }) => {
                assert_eq!(
                    error.kind(),
                    ErrorKind::InvalidInput,
                    "{utterance:?}: {error}"
                );
            }
            other => panic!("{utterance:?} should be refused as invalid input, got {other:?}"),
        }
    }
    orchestrator.shutdown().await;
}

/// The error `Orchestrator::start` reports for a stock tool declaring `intent`.
async fn start_error(intent: &'static str) -> OrchestratorError {
    let registry = registry_with(&[intent]).await;
    match Orchestrator::start(registry).await {
        Ok(_) => panic!("{intent:?} should stop the orchestrator at start"),
        Err(error) => error,
    }
}

#[tokio::test]
async fn malformed_fixed_values_stop_the_orchestrator_at_start() {
    for (intent, param, says) in [
        (
            "low stock => colour=red",
            "colour",
            "the input has no field `colour`",
        ),
        (
            "low stock => limit=five",
            "limit",
            "`limit` takes an integer",
        ),
        (
            "low stock => include_archived=maybe",
            "include_archived",
            "`true` or `false`",
        ),
        ("low stock => filter=high", "filter", "one of low, out, all"),
    ] {
        let error = start_error(intent).await;
        let message = error.to_string();
        match &error {
            OrchestratorError::InvalidFixedValue {
                tool, param: named, ..
            } => {
                assert_eq!((tool.as_str(), named.as_str()), (TOOL, param), "{message}");
            }
            other => panic!("{intent:?}: expected an invalid fixed value, got {other:?}"),
        }
        assert!(message.contains(says), "{intent:?}: {message}");
        assert!(message.contains(intent), "{intent:?}: {message}");
    }
    for (intent, says) in [
        ("low stock => filter", "`field=value`"),
        ("low stock =>", "no fixed value"),
        ("what is {filter} on stock => filter=low", "both captured"),
    ] {
        let message = start_error(intent).await.to_string();
        assert!(message.contains(says), "{intent:?}: {message}");
    }
}

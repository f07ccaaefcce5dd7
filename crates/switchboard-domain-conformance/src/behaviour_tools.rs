//! The conformance tools that exercise what happens during and around a call: logging,
//! progress, a failing tool, a slow call for SSE polling, and a JSON Schema 2020-12 input
//! (scenarios `tools-call-with-logging`, `tools-call-with-progress`, `tools-call-error`,
//! `server-sse-polling`, `json-schema-2020-12`).
//!
//! Logging is plain `tracing`: the MCP server forwards the events of a call to the session that
//! made it, filtered by the level the session set. Progress goes through
//! [`ToolContext::progress`]. The waits (~50 ms between notifications) are the suite's.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{NoInput, ToolContent, ToolContext, ToolError, ToolInput, tool};
use validator::Validate;

/// The pause between two notifications, as the suite asks.
const PAUSE: Duration = Duration::from_millis(50);

/// Logs "Tool execution started", "Tool processing data" and "Tool execution completed" at
/// info level, about 50 ms apart, then answers with a text.
/// For the MCP conformance scenario `tools-call-with-logging`.
#[tool(
    name = "test_tool_with_logging",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn tool_with_logging(
    _ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    tracing::info!("Tool execution started");
    tokio::time::sleep(PAUSE).await;
    tracing::info!("Tool processing data");
    tokio::time::sleep(PAUSE).await;
    tracing::info!("Tool execution completed");
    Ok(ToolContent::text("Logging test completed"))
}

/// Reports progress 0, 50 and 100 out of 100, about 50 ms apart, then answers with a text.
/// For the MCP conformance scenario `tools-call-with-progress`.
#[tool(
    name = "test_tool_with_progress",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn tool_with_progress(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    ctx.progress(0.0, Some(100.0), Some("starting"));
    tokio::time::sleep(PAUSE).await;
    ctx.progress(50.0, Some(100.0), Some("halfway"));
    tokio::time::sleep(PAUSE).await;
    ctx.progress(100.0, Some(100.0), Some("done"));
    Ok(ToolContent::text("Progress test completed"))
}

/// Always fails with "This tool intentionally returns an error for testing".
/// For the MCP conformance scenario `tools-call-error`.
#[tool(
    name = "test_error_handling",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn error_handling(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    Err(ToolError::new(
        "intentional_error",
        "This tool intentionally returns an error for testing",
    ))
}

/// Waits 100 ms, then answers with a text: a call long enough for the client to watch its SSE
/// stream. For the MCP conformance scenario `server-sse-polling`.
#[tool(
    name = "test_reconnection",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn reconnection(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    tokio::time::sleep(2 * PAUSE).await;
    Ok(ToolContent::text("Reconnection test completed"))
}

/// Logs "test_logging_tool called" at info level, then answers with a text. The 2026-07-28
/// suite calls it without a `_meta` log level and checks that no log message arrives.
#[tool(
    name = "test_logging_tool",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn logging_tool(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    tracing::info!("test_logging_tool called");
    Ok(ToolContent::text("Logged one message"))
}

/// A postal address: a `$defs` entry of the JSON Schema 2020-12 tool's input, with an
/// `$anchor`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "address", extend("$anchor" = "addressDef"))]
pub struct PostalAddress {
    /// The street and number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub street: Option<String>,
    /// The city.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
}

/// How to reach someone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContactMethod {
    /// By phone: `phone` is required.
    Phone,
    /// By email: `email` is required.
    Email,
}

/// The input of `json_schema_2020_12_tool`. Its schema has what the suite looks for:
/// `$schema`, `$defs.address` (with an `$anchor`), `additionalProperties: false`, and the
/// keywords serde cannot express, added as they are: `allOf`/`anyOf` (a phone or an email is
/// required) and `if`/`then`/`else` (the one `contactMethod` names). The registry validates
/// calls against the whole schema, so those rules hold even though the Rust type cannot say so.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(extend(
    "allOf" = [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if" = {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then" = {"required": ["phone"]},
    "else" = {"required": ["email"]}
))]
pub struct JsonSchemaFeaturesInput {
    /// A name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<PostalAddress>,
    /// How to reach the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact_method: Option<ContactMethod>,
    /// A phone number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    /// An email address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// What `json_schema_2020_12_tool` answers: the name and address it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JsonSchemaFeaturesOutput {
    /// The name given, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The address given, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<PostalAddress>,
}

/// Echoes a name and an address; its input schema uses JSON Schema 2020-12 features (`$defs`
/// with `$anchor`, `$ref`, `allOf`/`anyOf`, `if`/`then`/`else`, `additionalProperties: false`).
/// A phone or an email is required. For the MCP conformance scenario `json-schema-2020-12`.
#[tool(
    name = "json_schema_2020_12_tool",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn json_schema_features(
    _ctx: &ToolContext,
    input: JsonSchemaFeaturesInput,
) -> Result<JsonSchemaFeaturesOutput, ToolError> {
    Ok(JsonSchemaFeaturesOutput {
        name: input.name,
        address: input.address,
    })
}

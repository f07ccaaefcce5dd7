//! The conformance tools of the 2026-07-28 revision's HTTP and stateless checks (scenarios
//! `http-custom-header-server-validation` and `server-stateless`): a tool with a parameter
//! mirrored into an HTTP header, one that needs a capability the client may not have declared,
//! and one that asks the client a question mid-call.
//!
//! None of them does anything a real tool would not: the header parameter is an ordinary
//! `x-mcp-header` field (the server checks the header against the body), and the other two ask
//! through [`ToolContext::sample`] and [`ToolContext::elicit`], so what the suite checks is how
//! the server carries their questions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{
    NoInput, ToolContent, ToolContext, ToolError, ToolInput,
    ask::{Answer, SampleRequest},
    tool,
};
use validator::Validate;

/// The input of `test_header_parameter`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct HeaderParameterInput {
    /// Any text; an HTTP client also sends it as the `Mcp-Param-Value` header.
    #[schemars(extend("x-mcp-header" = "Value"))]
    pub value: String,
}

/// Answers `value: <value>`. Its `value` is a header parameter (`x-mcp-header`), so over HTTP
/// the call must carry the same value in `Mcp-Param-Value`. For the MCP conformance scenario
/// `http-custom-header-server-validation`.
#[tool(
    name = "test_header_parameter",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn header_parameter(
    _ctx: &ToolContext,
    input: HeaderParameterInput,
) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::text(format!("value: {}", input.value)))
}

/// Asks the client's model for one word, and answers with it. Called by a client that declared
/// no `sampling` capability, the question is never sent: on 2026-07-28 the call fails with
/// MCP's missing-capability error. For the MCP conformance scenario `server-stateless`.
#[tool(
    name = "test_missing_capability",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn missing_capability(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let sampled = ctx.sample(&SampleRequest::new("Say one word.", 10)).await?;
    Ok(ToolContent::text(format!(
        "LLM response: {}",
        sampled.text().unwrap_or("(no text)")
    )))
}

/// The form `test_streaming_elicitation` shows.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Confirmation {
    /// Whether to go on.
    confirmed: bool,
}

/// Asks the person to confirm, and answers with what they did. On 2026-07-28 the question
/// travels in the call's `input_required` result, never as a request of the server's on the
/// response stream. For the MCP conformance scenario `server-stateless`.
#[tool(
    name = "test_streaming_elicitation",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn streaming_elicitation(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let answer = ctx.elicit::<Confirmation>("Go on?").await?;
    Ok(ToolContent::text(match answer {
        Answer::Accepted(Confirmation { confirmed }) => format!("confirmed: {confirmed}"),
        Answer::Declined => "declined".to_owned(),
        Answer::Cancelled => "cancelled".to_owned(),
    }))
}

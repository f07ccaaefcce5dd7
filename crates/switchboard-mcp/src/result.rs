//! How the registry's answer to a call becomes an MCP answer.
//!
//! A result is `structuredContent` (an object, as MCP requires: a non-object is wrapped as
//! `{"result": value}`) plus the same JSON as a text block for clients that only read text.
//! An unknown tool is the client's protocol mistake, a JSON-RPC `-32602`. Every other refusal
//! or failure is a tool result with `isError: true`, so the model can read why and adjust: the
//! message as text, and the error's stable JSON (`{"kind", "message", ...}`) as
//! `structuredContent`.

use rmcp::{
    ErrorData,
    model::{CallToolResult, ContentBlock},
};
use serde_json::{Value, json};
use switchboard_core::InvokeError;

/// The MCP answer to one `tools/call`.
pub(crate) fn call_result(
    outcome: Result<Value, InvokeError>,
) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(value) => Ok(success(value)),
        Err(error @ InvokeError::ToolNotFound { .. }) => Err(ErrorData::invalid_params(
            error.to_string(),
            Some(error_json(&error)),
        )),
        Err(error) => Ok(failure(&error)),
    }
}

fn success(value: Value) -> CallToolResult {
    let structured = match value {
        Value::Object(_) => value,
        other => json!({ "result": other }),
    };
    CallToolResult::structured(structured)
}

fn failure(error: &InvokeError) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(error.to_string())]);
    result.structured_content = Some(error_json(error));
    result
}

/// The error's JSON, or at least its message if it cannot be serialised.
fn error_json(error: &InvokeError) -> Value {
    serde_json::to_value(error).unwrap_or_else(|_| json!({ "message": error.to_string() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_object_results_are_wrapped() {
        let result = call_result(Ok(json!([1, 2]))).expect("a result");
        assert_eq!(result.structured_content, Some(json!({"result": [1, 2]})));
        assert_ne!(result.is_error, Some(true));
    }

    #[test]
    fn refusals_are_tool_errors_with_their_kind() {
        let error = InvokeError::OrgIdNotAllowed {
            path: "/org_id".to_owned(),
        };
        let result = call_result(Err(error)).expect("a tool error, not a protocol error");
        assert_eq!(result.is_error, Some(true));
        let structured = result.structured_content.expect("the error's JSON");
        assert_eq!(structured["kind"], "org_id_not_allowed");
    }

    #[test]
    fn unknown_tools_are_invalid_params() {
        let error = InvokeError::ToolNotFound {
            name: "nope".to_owned(),
            suggestions: Vec::new(),
        };
        let refused = call_result(Err(error)).expect_err("a protocol error");
        assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }
}

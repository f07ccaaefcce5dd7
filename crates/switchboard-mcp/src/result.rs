//! How the registry's answer to a call becomes an MCP answer.
//!
//! A result is `structuredContent` (an object, as MCP requires: a non-object is wrapped as
//! `{"result": value}`) plus the same JSON as a text block for clients that only read text.
//! An unknown tool is the client's protocol mistake, a JSON-RPC `-32602`. Every other refusal
//! or failure is a tool result with `isError: true`, so the model can read why and adjust: the
//! message as text, and the error's stable JSON (`{"kind", "message", ...}`) for programs in
//! the result's `_meta`, under [`ERROR_META_KEY`]. Not as `structuredContent`: a tool's
//! `outputSchema` describes its output, clients validate `structuredContent` against it (the
//! TypeScript SDK and the MCP Inspector do even when `isError` is set), and an error's JSON
//! does not match it, so the client would answer its own validation error (`-32602`) in place
//! of ours and the model would never read why its call was refused.
//!
//! A tool that returns [`ToolContent`](switchboard_core::ToolContent) (its descriptor says so:
//! [`ToolDescriptor::returns_content`](switchboard_core::ToolDescriptor::returns_content)) is
//! answered with its content blocks as they are (images, audio, embedded resources, text) and
//! no `structuredContent`: its `tools/list` entry declares no `outputSchema` either. If such a
//! tool's output is not valid content, the JSON is sent as an ordinary result rather than lost.

use rmcp::{
    ErrorData,
    model::{CallToolResult, ContentBlock, MetaObject},
};
use serde::Deserialize as _;
use serde_json::{Value, json};
use switchboard_core::InvokeError;

/// The `_meta` key of a refused or failed call's result under which its error's JSON
/// (`{"kind", "message", ...}`, as [`InvokeError`] serialises) is.
pub const ERROR_META_KEY: &str = "switchboard/error";

/// The MCP answer to one `tools/call`. `returns_content` says whether the tool answers with
/// content blocks; it is asked only for a successful output that has a `content` field.
pub(crate) fn call_result(
    outcome: Result<Value, InvokeError>,
    returns_content: impl FnOnce() -> bool,
) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(value) if value.get("content").is_some() && returns_content() => Ok(content(value)),
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

/// The blocks of a content tool's output, or the output as an ordinary result if they are
/// not valid MCP content blocks.
fn content(value: Value) -> CallToolResult {
    match Vec::<ContentBlock>::deserialize(&value["content"]) {
        Ok(blocks) => CallToolResult::success(blocks),
        Err(error) => {
            tracing::error!(
                %error,
                "a content tool returned something that is not MCP content blocks; it is sent \
                 as structured content instead"
            );
            success(value)
        }
    }
}

pub(crate) fn failure(error: &InvokeError) -> CallToolResult {
    refusal(error.to_string(), error_json(error))
}

/// A refused or failed call's result: `message` as text for the model, `error` (the error's
/// JSON, `{"kind", "message", ...}`) in `_meta` under [`ERROR_META_KEY`].
pub(crate) fn refusal(message: String, error: Value) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message)]);
    let mut meta = MetaObject::default();
    meta.insert(ERROR_META_KEY.to_owned(), error);
    result.meta = Some(meta);
    result
}

/// The error's JSON, or at least its message if it cannot be serialised.
pub(crate) fn error_json(error: &InvokeError) -> Value {
    serde_json::to_value(error).unwrap_or_else(|_| json!({ "message": error.to_string() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_object_results_are_wrapped() {
        let result = call_result(Ok(json!([1, 2])), || false).expect("a result");
        assert_eq!(result.structured_content, Some(json!({"result": [1, 2]})));
        assert_ne!(result.is_error, Some(true));
    }

    #[test]
    fn refusals_are_tool_errors_with_their_kind() {
        let error = InvokeError::OrgIdNotAllowed {
            path: "/org_id".to_owned(),
        };
        let result = call_result(Err(error), || false).expect("a tool error, not a protocol error");
        assert_eq!(result.is_error, Some(true));
        // The error is not the tool's output: `structuredContent` would fail its schema.
        assert_eq!(result.structured_content, None);
        let meta = result.meta.expect("the error's JSON in `_meta`");
        assert_eq!(meta[ERROR_META_KEY]["kind"], "org_id_not_allowed");
        assert!(
            result.content[0]
                .as_text()
                .is_some_and(|text| text.text.contains("remove the field")),
            "the message, for the model: {:?}",
            result.content
        );
    }

    #[test]
    fn content_tools_answer_their_blocks_and_others_their_json() {
        let output = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
        ]});
        let result = call_result(Ok(output.clone()), || true).expect("a result");
        assert_eq!(result.structured_content, None);
        assert_eq!(result.content.len(), 2);
        let blocks = serde_json::to_value(&result.content).expect("serialises");
        assert_eq!(blocks, output["content"]);

        // The same JSON from an ordinary tool is its structured result.
        let result = call_result(Ok(output.clone()), || false).expect("a result");
        assert_eq!(result.structured_content, Some(output));

        // A content tool whose output is not content still answers, with its JSON.
        let broken = json!({"content": [{"type": "hologram"}]});
        let result = call_result(Ok(broken.clone()), || true).expect("a result");
        assert_eq!(result.structured_content, Some(broken));
        assert_ne!(result.is_error, Some(true));
    }

    #[test]
    fn the_content_question_is_asked_only_for_outputs_with_content() {
        let result = call_result(Ok(json!({"rows": []})), || {
            panic!("no `content` field: no descriptor lookup")
        });
        assert!(result.is_ok());
    }

    #[test]
    fn unknown_tools_are_invalid_params() {
        let error = InvokeError::ToolNotFound {
            name: "nope".to_owned(),
            suggestions: Vec::new(),
        };
        let refused = call_result(Err(error), || false).expect_err("a protocol error");
        assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    }
}

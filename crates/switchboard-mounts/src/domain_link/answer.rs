//! How a remote node's answer to one linked call is sorted into the output or a [`LinkError`].
//!
//! The remote node is trusted to run the domain, not to send well-formed answers: everything it
//! sends is decoded with serde into typed values, and an answer that does not decode is
//! [`LinkError::InDoubt`] (the call was sent, so the tool may have run), never a panic.
//!
//! - A success carries the tool's output as `structuredContent` (an output that is not a JSON
//!   object is wrapped as `{"result": value}` by the serving node); a tool that answers content
//!   blocks carries them as the result's `content`.
//! - A failure is `isError` with the registry's error under `_meta["switchboard/error"]`, in its
//!   wire form (`{"kind", "message", ...details}`), which leaves out the free-text fields only
//!   the audit record keeps (a reason, a tool error's message). They are recovered from the
//!   message, which the error's `Display` builds around them ([`decode_served`]).

use rmcp::model::CallToolResult;
use serde::Deserialize;
use serde_json::{Map, Value};
use switchboard_core::{InvokeError, ToolDescriptor};
use switchboard_registry::LinkError;

/// The `_meta` key of a failed call's result under which the serving registry puts its error.
pub(crate) const ERROR_META_KEY: &str = "switchboard/error";

/// The fields of an error's record that its wire form leaves out, each a free text that the
/// error's message shows.
const FREE_TEXT_FIELDS: [&str; 3] = ["reason", "error_message", "panic_message"];

/// Stands for a free-text field while the message's template is rendered.
const PLACEHOLDER: &str = "\u{1}switchboard-free-text\u{1}";

/// `tool`'s answer from `node`: its output, or why there is none.
pub(crate) fn sort(
    node: &str,
    tool: &ToolDescriptor,
    result: CallToolResult,
) -> Result<Value, LinkError> {
    if result.is_error == Some(true) {
        let Some(error) = result
            .meta
            .as_ref()
            .and_then(|meta| meta.0.get(ERROR_META_KEY))
        else {
            return Err(in_doubt(
                node,
                tool,
                "an error without the registry's error in `_meta`".to_owned(),
            ));
        };
        return Err(match decode_served(error) {
            Ok(error) => LinkError::from_served(error),
            Err(why) => in_doubt(node, tool, format!("an error that does not decode ({why})")),
        });
    }
    if tool.returns_content() {
        let content = serde_json::to_value(&result.content).map_err(|error| {
            in_doubt(
                node,
                tool,
                format!("content that does not encode ({error})"),
            )
        })?;
        let mut output = Map::new();
        output.insert("content".to_owned(), content);
        return Ok(Value::Object(output));
    }
    match result.structured_content {
        Some(Value::Object(structured)) => Ok(unwrapped(tool, structured)),
        Some(_) => Err(in_doubt(
            node,
            tool,
            "structured content that is not a JSON object".to_owned(),
        )),
        None => Err(in_doubt(
            node,
            tool,
            "a success without structured content".to_owned(),
        )),
    }
}

/// The output as the tool returned it: the serving node wraps an output that is not an object
/// as `{"result": value}`, so an object with that one key is unwrapped unless the tool's
/// output schema says its output is an object.
fn unwrapped(tool: &ToolDescriptor, mut structured: Map<String, Value>) -> Value {
    let object_output = tool
        .output_schema
        .as_deref()
        .and_then(|schema| schema.get("type"))
        .and_then(Value::as_str)
        == Some("object");
    if !object_output && structured.len() == 1 && structured.contains_key("result") {
        return structured.remove("result").unwrap_or(Value::Null);
    }
    Value::Object(structured)
}

fn in_doubt(node: &str, tool: &ToolDescriptor, what: String) -> LinkError {
    LinkError::InDoubt {
        reason: format!(
            "`{node}` answered the call of `{}` with {what}; the call may have run",
            tool.name
        ),
    }
}

/// The wire form's frame: what every error answer must have.
#[derive(Deserialize)]
struct Frame {
    kind: String,
    message: String,
}

/// The registry's error from its wire form (or its full record).
fn decode_served(error: &Value) -> Result<InvokeError, String> {
    if let Ok(error) = InvokeError::from_record(error) {
        return Ok(error);
    }
    let frame = Frame::deserialize(error).map_err(|error| error.to_string())?;
    let Value::Object(fields) = error else {
        return Err("not a JSON object".to_owned());
    };
    let mut record = fields.clone();
    // A timeout's wire form has its milliseconds; the record has seconds and nanoseconds.
    if let Some(millis) = fields.get("timeout_ms").and_then(Value::as_u64)
        && !fields.contains_key("timeout_secs")
    {
        record.insert("timeout_secs".to_owned(), Value::from(millis / 1000));
        record.insert(
            "timeout_subsec_nanos".to_owned(),
            Value::from((millis % 1000) * 1_000_000),
        );
    }
    let missing: Vec<&str> = FREE_TEXT_FIELDS
        .into_iter()
        .filter(|field| !fields.contains_key(*field))
        .collect();
    for field in &missing {
        record.insert((*field).to_owned(), Value::from(PLACEHOLDER));
    }
    let template = InvokeError::from_record(&Value::Object(record.clone()))
        .map_err(|error| format!("`{}`: {error}", frame.kind))?
        .to_string();
    let text = free_text(&template, &frame.message);
    for field in &missing {
        record.insert((*field).to_owned(), Value::from(text.clone()));
    }
    InvokeError::from_record(&Value::Object(record))
        .map_err(|error| format!("`{}`: {error}", frame.kind))
}

/// The free text that `template`'s placeholder stands for in `message`: what is left once the
/// text around the placeholder is taken off, or the whole message when it does not fit.
fn free_text(template: &str, message: &str) -> String {
    let Some((before, after)) = template.split_once(PLACEHOLDER) else {
        return message.to_owned();
    };
    message
        .strip_prefix(before)
        .and_then(|rest| rest.strip_suffix(after))
        .map_or_else(|| message.to_owned(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use std::{borrow::Cow, sync::Arc, time::Duration};

    use rmcp::model::{ContentBlock, MetaObject};
    use serde_json::json;
    use switchboard_core::{Category, ToolError, ToolOrigin};

    use super::*;

    fn descriptor(output_schema: Value) -> ToolDescriptor {
        ToolDescriptor {
            name: Cow::Borrowed("depot_reserve"),
            title: None,
            domain: Cow::Borrowed("depot"),
            category: Category::Execute,
            permission: Cow::Borrowed("depot.reserve"),
            description: Cow::Borrowed(""),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: None,
            input_schema: Arc::new(json!({"type": "object"})),
            output_schema: Some(Arc::new(output_schema)),
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "a test".to_owned(),
            },
        }
    }

    fn failure(error: Value) -> CallToolResult {
        let mut result = CallToolResult::error(vec![ContentBlock::text("failed")]);
        let mut meta = MetaObject::default();
        meta.0.insert(ERROR_META_KEY.to_owned(), error);
        result.meta = Some(meta);
        result
    }

    /// Every error kind a registry answers survives its wire form, its free text included.
    #[test]
    fn the_wire_form_of_every_served_error_decodes_to_the_same_error() {
        let errors = [
            InvokeError::ToolFailed {
                tool: "depot_reserve".to_owned(),
                error: ToolError::new("out_of_stock", "only 2 left: the reserve fails").in_doubt(),
            },
            InvokeError::GateRefused {
                tool: "depot_reserve".to_owned(),
                error: ToolError::new("week_locked", "week 12: locked"),
            },
            InvokeError::ToolPanicked {
                tool: "depot_reserve".to_owned(),
                message: "index out of bounds; a panic".to_owned(),
            },
            InvokeError::Timeout {
                tool: "depot_reserve".to_owned(),
                after: Duration::from_millis(1500),
            },
            InvokeError::DomainUnavailable {
                tool: "depot_reserve".to_owned(),
                domain: "depot".to_owned(),
                reason: "its actor restarts".to_owned(),
            },
            InvokeError::AuditFailed {
                tool: "depot_reserve".to_owned(),
                reason: "the store is gone".to_owned(),
            },
            InvokeError::PermissionDenied {
                tool: "depot_reserve".to_owned(),
                permission: "depot.reserve".to_owned(),
                roles: Vec::new(),
            },
        ];
        for error in errors {
            let wire = serde_json::to_value(&error).expect("serializes");
            let decoded = decode_served(&wire);
            assert_eq!(decoded, Ok(error.clone()), "{wire}");
            assert_eq!(
                decoded.map(|error| error.to_string()),
                Ok(error.to_string())
            );
        }
    }

    #[test]
    fn errors_are_sorted_by_what_is_known_of_the_run() {
        let tool = descriptor(json!({"type": "object"}));
        let ran = InvokeError::ToolFailed {
            tool: "depot_reserve".to_owned(),
            error: ToolError::new("out_of_stock", "none left"),
        };
        let answer = sort(
            "node-b",
            &tool,
            failure(serde_json::to_value(&ran).expect("json")),
        );
        assert!(matches!(answer, Err(LinkError::Failed(error)) if error == ran));
        let refused = InvokeError::PermissionDenied {
            tool: "depot_reserve".to_owned(),
            permission: "depot.reserve".to_owned(),
            roles: Vec::new(),
        };
        let answer = sort(
            "node-b",
            &tool,
            failure(serde_json::to_value(&refused).expect("json")),
        );
        assert!(matches!(answer, Err(LinkError::Refused(error)) if error == refused));
        for garbage in [
            json!("no"),
            json!({"kind": "no_such_kind", "message": "x"}),
            json!({"kind": "tool_failed"}),
        ] {
            let answer = sort("node-b", &tool, failure(garbage.clone()));
            assert!(
                matches!(answer, Err(LinkError::InDoubt { .. })),
                "{garbage}: {answer:?}"
            );
        }
        let mut bare = CallToolResult::error(vec![ContentBlock::text("failed")]);
        bare.meta = None;
        assert!(
            matches!(sort("node-b", &tool, bare), Err(LinkError::InDoubt { reason }) if reason.contains("node-b"))
        );
    }

    #[test]
    fn outputs_are_unwrapped_only_when_the_serving_node_wrapped_them() {
        let object = descriptor(json!({"type": "object"}));
        let text = descriptor(json!({"type": "string"}));
        let wrapped = CallToolResult::structured(json!({"result": "the back"}));
        assert_eq!(
            sort("node-b", &text, wrapped.clone()).ok(),
            Some(json!("the back"))
        );
        assert_eq!(
            sort("node-b", &object, wrapped).ok(),
            Some(json!({"result": "the back"}))
        );
        let mut missing = CallToolResult::success(vec![ContentBlock::text("hi")]);
        missing.structured_content = None;
        assert!(matches!(
            sort("node-b", &object, missing),
            Err(LinkError::InDoubt { .. })
        ));
        let mut scalar = CallToolResult::structured(json!({}));
        scalar.structured_content = Some(json!(3));
        assert!(matches!(
            sort("node-b", &object, scalar),
            Err(LinkError::InDoubt { .. })
        ));
    }
}

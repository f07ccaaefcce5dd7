//! What one stdio input line is: a JSON-RPC message for rmcp, nothing (a blank line), or bad
//! input with the JSON-RPC error reply it deserves.
//!
//! A line is parsed once in the common case: a line that starts with `{` goes straight into
//! rmcp's message type, as rmcp's own transport does. Only when that fails is the line looked
//! at as JSON (`serde_json::Value`) to tell the errors apart: not JSON (`-32700`, `id: null`),
//! a batch array or a scalar (`-32600`, `id: null`), or an object that is not a message an MCP
//! client sends (`-32600`, with the object's `id` when it can be echoed exactly). Parsing
//! every line into a `Value` first and converting that into the message would parse every
//! valid request twice.
//!
//! An error echoes the client's `id` only when it is a string or an integer that fits 64 bits
//! (signed or unsigned): `serde_json::Value` reads any other number as an `f64`, and writing
//! that back would answer `123456789012345678901234567890` with `1.2345678901234568e+29`, an
//! id the client never sent. Such ids (and fractions, which JSON-RPC advises against) are
//! answered with `id: null`, as JSON-RPC 2.0 prescribes when the id cannot be read.
//!
//! A request of a method the server knows whose params do not fit that method is sorted apart
//! ([`Classified::InvalidParams`]), with the `-32602` reply naming the method and what was
//! wrong ([`super::known_methods`]): rmcp would take it for an unknown method. A paginated list
//! request (`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`) whose
//! params do not decode is read by rmcp as the list request without params, so for those four
//! alone the params are read a second time, raw, and checked: a small request, and every other
//! message (`tools/call` among them) is still parsed once. stdio sends the reply at once; the
//! HTTP edge answers it only once the request has passed the checks a valid request passes (its
//! session among them), as an ordinary JSON-RPC response.
//!
//! [`classify`] and [`error_reply`] know nothing of stdio beyond "one message": the HTTP edge
//! sorts a request body with them too.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde::Deserialize as _;
use serde_json::{Value, json};

/// JSON-RPC 2.0: invalid JSON was received.
pub(crate) const PARSE_ERROR: i64 = -32700;

/// JSON-RPC 2.0: the JSON sent is not a valid request object.
pub(crate) const INVALID_REQUEST: i64 = -32600;

/// What one input line is.
pub(crate) enum Classified {
    /// A JSON-RPC message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Nothing to do (a blank line).
    Skip,
    /// Bad input: send this error reply.
    Reply(Value),
    /// A request of a method the server knows whose params do not fit it.
    InvalidParams(Box<InvalidParams>),
}

/// A well-formed request of a known method with params that do not fit that method.
pub(crate) struct InvalidParams {
    /// The `-32602` reply, with the request's id.
    pub(crate) reply: Value,
    /// The request's method.
    pub(crate) method: String,
    /// The request as rmcp reads it (a custom request, which [`crate::McpServer`] answers
    /// with the same reply), when rmcp reads it as one: not when its params are no object,
    /// nor for a list request (rmcp reads that as the list request without params, which
    /// would be answered with the first page).
    pub(crate) message: Option<Box<ClientJsonRpcMessage>>,
}

/// Sorts one line (without its line ending) into a message, nothing, or an error reply.
pub(crate) fn classify(text: &[u8]) -> Classified {
    let Some(first) = text.iter().find(|byte| !byte.is_ascii_whitespace()) else {
        return Classified::Skip;
    };
    // The common case. Only an object can be a message: anything else (an array, which serde
    // could read as a struct's fields in order) takes the slow path to its error reply.
    if *first == b'{'
        && let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(text)
    {
        return checked(message, || raw_params(text));
    }
    classify_as_value(text)
}

/// `message`, or what it is if it is a request of a known method whose params do not fit:
/// one rmcp took for a custom request, or a list request whose params (`raw_params`, read
/// only for a list request) rmcp dropped.
fn checked(
    message: ClientJsonRpcMessage,
    raw_params: impl FnOnce() -> Option<Value>,
) -> Classified {
    let ClientJsonRpcMessage::Request(request) = &message else {
        return Classified::Message(Box::new(message));
    };
    let (refusal, readable) = match &request.request {
        ClientRequest::CustomRequest(custom) => (
            super::known_methods::invalid_params(&custom.method, custom.params.as_ref()),
            true,
        ),
        ClientRequest::ListToolsRequest(_)
        | ClientRequest::ListResourcesRequest(_)
        | ClientRequest::ListResourceTemplatesRequest(_)
        | ClientRequest::ListPromptsRequest(_) => (
            super::known_methods::unfit_params(request.request.method(), raw_params().as_ref()),
            false,
        ),
        _ => (None, true),
    };
    let Some(refusal) = refusal else {
        return Classified::Message(Box::new(message));
    };
    let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
    let method = request.request.method().to_owned();
    Classified::InvalidParams(Box::new(InvalidParams {
        reply: error_reply(id, super::known_methods::INVALID_PARAMS, &refusal),
        method,
        message: readable.then(|| Box::new(message)),
    }))
}

/// The `params` member of the message `text` (which rmcp has read as a message), as JSON.
fn raw_params(text: &[u8]) -> Option<Value> {
    /// Only `params`: serde skips the other members without building them.
    #[derive(serde::Deserialize)]
    struct Params {
        params: Option<Value>,
    }
    serde_json::from_slice::<Params>(text)
        .ok()
        .and_then(|message| message.params)
}

/// The slow path: the line as a `serde_json::Value`, to tell which error it deserves (or, if
/// it turns out to be a message after all, the message).
fn classify_as_value(text: &[u8]) -> Classified {
    let value = match serde_json::from_slice::<Value>(text) {
        Ok(value) => value,
        Err(error) => {
            return Classified::Reply(error_reply(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: the message is not JSON ({error})"),
            ));
        }
    };
    if value.is_array() {
        return Classified::Reply(error_reply(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: JSON-RPC batches are not supported by MCP; send one message at a time",
        ));
    }
    let id = value.get("id").map_or(Value::Null, echoable_id);
    // A request of a known method whose params are no object at all: rmcp reads it as no
    // message, but the method is right and its params are wrong.
    if let (Some(Value::String(method)), Some(params), Some(_)) =
        (value.get("method"), value.get("params"), value.get("id"))
        && value.get("jsonrpc") == Some(&Value::from("2.0"))
        && !params.is_object()
        && let Some(refusal) = super::known_methods::invalid_params(method, Some(params))
    {
        return Classified::InvalidParams(Box::new(InvalidParams {
            reply: error_reply(id, super::known_methods::INVALID_PARAMS, &refusal),
            method: method.clone(),
            message: None,
        }));
    }
    match ClientJsonRpcMessage::deserialize(&value) {
        Ok(message) => checked(message, || value.get("params").cloned()),
        Err(error) => Classified::Reply(error_reply(
            id,
            INVALID_REQUEST,
            &format!("Invalid Request: not a JSON-RPC 2.0 message an MCP client sends ({error})"),
        )),
    }
}

/// The id to echo in an error reply to a message whose `id` member is `id`: the same string,
/// the same integer when it fits 64 bits, and `null` for anything else (an object, an array,
/// a fraction, or an integer `Value` could only hold as a rounded `f64`).
pub(crate) fn echoable_id(id: &Value) -> Value {
    match id {
        Value::String(_) => id.clone(),
        Value::Number(number) if number.is_i64() || number.is_u64() => id.clone(),
        _ => Value::Null,
    }
}

/// A JSON-RPC error response.
pub(crate) fn error_reply(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply_of(line: &[u8]) -> Value {
        match classify(line) {
            Classified::Reply(reply) => reply,
            Classified::InvalidParams(invalid) => invalid.reply,
            Classified::Message(message) => panic!("expected an error reply, got {message:?}"),
            Classified::Skip => panic!("expected an error reply, got nothing"),
        }
    }

    #[test]
    fn not_json_is_a_parse_error_with_a_null_id() {
        for line in [&b"{not json"[..], b"\xff\xfe\x00", b"}", b"{\"id\": 1"] {
            let reply = reply_of(line);
            assert_eq!(reply["error"]["code"], json!(PARSE_ERROR), "{reply}");
            assert_eq!(reply["id"], Value::Null, "{reply}");
        }
    }

    #[test]
    fn wrong_shapes_are_invalid_requests_with_the_id_when_readable() {
        let reply = reply_of(br#"{"foo": 1}"#);
        assert_eq!(reply["error"]["code"], json!(INVALID_REQUEST), "{reply}");
        assert_eq!(reply["id"], Value::Null);
        let reply = reply_of(br#"{"jsonrpc": "2.0", "id": 7, "method": 12}"#);
        assert_eq!(reply["error"]["code"], json!(INVALID_REQUEST), "{reply}");
        assert_eq!(reply["id"], json!(7), "{reply}");
        let reply = reply_of(br#"{"jsonrpc": "1.0", "id": "a", "method": "ping"}"#);
        assert_eq!(reply["error"]["code"], json!(INVALID_REQUEST), "{reply}");
        assert_eq!(reply["id"], json!("a"), "{reply}");
        for line in [
            &br#"[1, 2]"#[..],
            br#"["2.0", 1, {"method": "ping"}]"#,
            br#"  [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#,
            br#""text""#,
            b"42",
            b"null",
        ] {
            let reply = reply_of(line);
            assert_eq!(reply["error"]["code"], json!(INVALID_REQUEST), "{reply}");
            assert_eq!(reply["id"], Value::Null, "{reply}");
        }
    }

    #[test]
    fn an_id_is_echoed_exactly_or_as_null() {
        let huge = br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#;
        let reply = reply_of(huge);
        assert_eq!(reply["error"]["code"], json!(INVALID_REQUEST), "{reply}");
        assert!(reply["id"].is_null(), "{reply}");
        for (line, id) in [
            (
                &br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":12}"#[..],
                json!(u64::MAX),
            ),
            (
                br#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":12}"#,
                json!(i64::MIN),
            ),
            (
                br#"{"jsonrpc":"2.0","id":"1e400","method":12}"#,
                json!("1e400"),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
                Value::Null,
            ),
        ] {
            let reply = reply_of(line);
            assert_eq!(reply["id"], id, "{reply}");
            assert!(
                reply
                    .as_object()
                    .is_some_and(|reply| reply.contains_key("id")),
                "{reply}"
            );
        }
    }

    #[test]
    fn blank_lines_are_skipped_and_messages_pass() {
        assert!(matches!(classify(b"  \t"), Classified::Skip));
        assert!(matches!(classify(b""), Classified::Skip));
        for message in [
            &br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#[..],
            br#"  {"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
            br#"{"jsonrpc": "2.0", "id": "x", "result": {}}"#,
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":{}}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"offset:1"}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"prompts/list","params":{"_meta":{"progressToken":1}}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"resources/list","params":null}"#,
        ] {
            assert!(
                matches!(classify(message), Classified::Message(_)),
                "{}",
                String::from_utf8_lossy(message)
            );
        }
    }

    #[test]
    fn known_methods_with_params_that_do_not_fit_are_sorted_apart() {
        for (line, readable) in [
            (
                &br#"{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":1}}"#[..],
                true,
            ),
            (br#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#, true),
            (
                br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":1}"#,
                false,
            ),
        ] {
            let Classified::InvalidParams(invalid) = classify(line) else {
                panic!("invalid params: {}", String::from_utf8_lossy(line));
            };
            assert_eq!(
                invalid.reply["error"]["code"],
                json!(-32602),
                "{}",
                invalid.reply
            );
            assert_eq!(invalid.reply["id"], json!(3));
            assert_eq!(invalid.message.is_some(), readable, "{}", invalid.method);
        }
    }

    #[test]
    fn list_requests_with_a_cursor_that_is_no_string_are_sorted_apart() {
        for (method, params) in [
            ("tools/list", r#"{"cursor":1}"#),
            ("resources/list", r#"{"cursor":true,"_meta":{}}"#),
            ("resources/templates/list", r#"{"cursor":{}}"#),
            ("prompts/list", r#"{"cursor":["a"]}"#),
        ] {
            let line =
                format!(r#"{{"jsonrpc":"2.0","id":"l","method":"{method}","params":{params}}}"#);
            for classified in [
                classify(line.as_bytes()),
                classify_as_value(line.as_bytes()),
            ] {
                let Classified::InvalidParams(invalid) = classified else {
                    panic!("invalid params: {line}");
                };
                assert_eq!(invalid.reply["error"]["code"], json!(-32602));
                assert_eq!(invalid.reply["id"], json!("l"));
                let message = invalid.reply["error"]["message"]
                    .as_str()
                    .unwrap_or_default();
                assert!(
                    message.contains(&format!("`{method}`")) && message.contains("`cursor`"),
                    "{message}"
                );
                assert_eq!(invalid.method, method);
                // rmcp reads it as the first page's request: the edge must answer it.
                assert!(invalid.message.is_none(), "{line}");
            }
        }
    }

    /// The fast path and the `Value` path agree on every line the fast path takes.
    #[test]
    fn parsing_once_gives_the_message_the_value_path_gives() {
        let lines = [
            &br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#[..],
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"t","arguments":{"x":[1,{"y":null}]},"_meta":{"progressToken":3}}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}"#,
            br#"{"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no"}}"#,
        ];
        for line in lines {
            let Classified::Message(fast) = classify(line) else {
                panic!("a message: {}", String::from_utf8_lossy(line));
            };
            let Classified::Message(slow) = classify_as_value(line) else {
                panic!("a message: {}", String::from_utf8_lossy(line));
            };
            assert_eq!(
                serde_json::to_value(&fast).expect("JSON"),
                serde_json::to_value(&slow).expect("JSON"),
            );
        }
    }
}

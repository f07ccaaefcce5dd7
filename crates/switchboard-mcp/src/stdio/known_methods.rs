//! The methods the server answers, and what their params must be: so that a known method whose
//! params do not fit is refused with `-32602` (invalid params), not `-32601`.
//!
//! rmcp decodes a request into one enum of the methods it knows, trying each in turn; a
//! request whose params do not decode into its method's type matches none of them and ends up
//! as a custom request (`ClientRequest::CustomRequest`), which a handler answers as an unknown
//! method. `initialize` never reaches the handler that way: rmcp's handshake reads it and
//! answers a custom one itself. So the transport edge ([`super::classify`], which sorts both
//! stdio lines and HTTP bodies) asks [`invalid_params`] about every custom request, decodes the
//! params of a known method into rmcp's own type for it, and sorts it apart with what serde
//! found wrong and where (stdio answers it at once; HTTP after the request's session checks);
//! the server's handler asks the same for a custom request that reaches it. The paginated list
//! methods are the exception to that path: rmcp reads one whose params do not decode as the
//! list request without params (the first page), so the edge checks their raw params with
//! [`unfit_params`]. Methods rmcp would answer `-32601` even with good params (the skills;
//! `tasks/list` and `tasks/result`, which rmcp does not know) are not listed: for them `-32601`
//! stays right.

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

use rmcp::model::{
    CallToolRequestParams, CancelTaskParams, CompleteRequestParams, GetPromptRequestParams,
    GetTaskParams, InitializeRequestParams, PaginatedRequestParams, ReadResourceRequestParams,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams, UpdateTaskParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// JSON-RPC 2.0: invalid method parameters.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// What the params of a paginated list method must be.
const PAGINATED: &str = "no params, or an object with an optional `cursor` (a string from a previous \
                         page) and optionally `_meta`";

/// How one known method's params are checked.
struct Known {
    method: &'static str,
    /// What the params must be, in words.
    expected: &'static str,
    /// Decodes the params (`Value::Null` when there are none), or says what is wrong.
    decode: fn(Value) -> Result<(), String>,
}

/// Every method the server answers that takes params.
const KNOWN: &[Known] = &[
    Known {
        method: "initialize",
        expected: "an object with `protocolVersion` (a string), `capabilities` (an object) and \
                   `clientInfo` (`name` and `version`)",
        decode: decode::<InitializeRequestParams>,
    },
    Known {
        method: "ping",
        expected: "no params, or an object with only `_meta`",
        decode: decode_optional_object,
    },
    Known {
        method: "server/discover",
        expected: "no params, or an object with only `_meta`",
        decode: decode_optional_object,
    },
    Known {
        method: "tools/list",
        expected: PAGINATED,
        decode: decode_optional::<PaginatedRequestParams>,
    },
    Known {
        method: "tools/call",
        expected: "an object with `name` (a string) and optionally `arguments` (an object) and \
                   `_meta`",
        decode: decode::<CallToolRequestParams>,
    },
    Known {
        method: "resources/list",
        expected: PAGINATED,
        decode: decode_optional::<PaginatedRequestParams>,
    },
    Known {
        method: "resources/templates/list",
        expected: PAGINATED,
        decode: decode_optional::<PaginatedRequestParams>,
    },
    Known {
        method: "resources/read",
        expected: "an object with `uri` (a string)",
        decode: decode::<ReadResourceRequestParams>,
    },
    Known {
        method: "resources/subscribe",
        expected: "an object with `uri` (a string)",
        decode: decode::<SubscribeRequestParams>,
    },
    Known {
        method: "resources/unsubscribe",
        expected: "an object with `uri` (a string)",
        decode: decode::<UnsubscribeRequestParams>,
    },
    Known {
        method: "prompts/list",
        expected: PAGINATED,
        decode: decode_optional::<PaginatedRequestParams>,
    },
    Known {
        method: "prompts/get",
        expected: "an object with `name` (a string) and optionally `arguments` (an object of \
                   strings)",
        decode: decode::<GetPromptRequestParams>,
    },
    Known {
        method: "tasks/get",
        expected: "an object with `taskId` (a string)",
        decode: decode::<GetTaskParams>,
    },
    Known {
        method: "tasks/update",
        expected: "an object with `taskId` (a string) and `inputResponses` (an object of \
                   answers by key)",
        decode: decode::<UpdateTaskParams>,
    },
    Known {
        method: "tasks/cancel",
        expected: "an object with `taskId` (a string)",
        decode: decode::<CancelTaskParams>,
    },
    Known {
        method: "logging/setLevel",
        expected: "an object with `level`: one of debug, info, notice, warning, error, \
                   critical, alert, emergency",
        decode: decode::<SetLevelRequestParams>,
    },
    Known {
        method: "completion/complete",
        expected: "an object with `ref` (a prompt or resource reference) and `argument` \
                   (`name` and `value`)",
        decode: decode::<CompleteRequestParams>,
    },
];

/// The message of the `-32602` a request of `method` with `params` deserves, when `method` is
/// one the server answers (rmcp could not decode its params); `None` for any other method.
pub(crate) fn invalid_params(method: &str, params: Option<&Value>) -> Option<String> {
    let known = find(method)?;
    let expected = known.expected;
    Some(match problem(known, params) {
        Some(problem) => format!("invalid params for `{method}`: {problem}; expected {expected}"),
        // rmcp refused what the type alone accepts (a member outside the params, say).
        None => format!("invalid params for `{method}`: expected {expected}"),
    })
}

/// The message of the `-32602` a request of `method` with `params` deserves, when `method` is
/// one the server answers and `params` do not decode into its params; `None` when they do, or
/// for any other method.
///
/// For a request rmcp read as its method's own request, not as a custom one: a paginated list
/// request whose params do not decode is read as one without params (rmcp flattens them into
/// an optional field, which swallows the error), so only its raw params tell.
pub(crate) fn unfit_params(method: &str, params: Option<&Value>) -> Option<String> {
    let known = find(method)?;
    let problem = problem(known, params)?;
    let expected = known.expected;
    Some(format!(
        "invalid params for `{method}`: {problem}; expected {expected}"
    ))
}

fn find(method: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|known| known.method == method)
}

/// What is wrong with `params` for `known`, if anything.
fn problem(known: &Known, params: Option<&Value>) -> Option<String> {
    match params {
        None | Some(Value::Null) => (known.decode)(Value::Null)
            .err()
            .map(|_| "params are missing".to_owned()),
        Some(params) => (known.decode)(params.clone()).err(),
    }
}

/// Decodes `params` into `T`, or says what is wrong and where (`at /uri: invalid type ...`).
fn decode<T: DeserializeOwned>(params: Value) -> Result<(), String> {
    serde_path_to_error::deserialize::<_, T>(params)
        .map(drop)
        .map_err(|error| {
            let path = error.path().to_string();
            let inner = error.into_inner();
            if path == "." {
                inner.to_string()
            } else {
                format!("at `{path}`: {inner}")
            }
        })
}

/// As [`decode`], with no params accepted.
fn decode_optional<T: DeserializeOwned>(params: Value) -> Result<(), String> {
    if params.is_null() {
        return Ok(());
    }
    decode::<T>(params)
}

/// No params, or an object.
fn decode_optional_object(params: Value) -> Result<(), String> {
    match params {
        Value::Null | Value::Object(_) => Ok(()),
        other => Err(format!("params must be an object, not `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn known_methods_say_what_is_wrong_and_others_are_not_known() {
        let message = invalid_params("tasks/get", Some(&json!({"taskId": 1}))).expect("known");
        assert!(
            message.contains("`tasks/get`") && message.contains("taskId"),
            "{message}"
        );
        let message = invalid_params("resources/read", None).expect("known");
        assert!(message.contains("missing"), "{message}");
        let message = invalid_params("prompts/get", Some(&json!({"name": 1}))).expect("known");
        assert!(message.contains("`prompts/get`"), "{message}");
        assert_eq!(invalid_params("no/such", Some(&json!({}))), None);
    }

    #[test]
    fn list_params_are_unfit_only_with_a_cursor_that_is_no_string() {
        for method in [
            "tools/list",
            "resources/list",
            "resources/templates/list",
            "prompts/list",
        ] {
            let message = unfit_params(method, Some(&json!({"cursor": 1}))).expect("unfit");
            assert!(
                message.contains(&format!("`{method}`"))
                    && message.contains("at `cursor`")
                    && message.contains("a string from a previous page"),
                "{message}"
            );
            assert!(
                unfit_params(method, Some(&json!(["a"]))).is_some(),
                "{method}"
            );
            for params in [
                None,
                Some(json!(null)),
                Some(json!({})),
                Some(json!({"cursor": "offset:1"})),
                Some(json!({"cursor": "offset:1", "_meta": {"progressToken": 1}})),
                Some(json!({"_meta": {"progressToken": "p"}})),
            ] {
                assert_eq!(unfit_params(method, params.as_ref()), None, "{params:?}");
            }
        }
        assert_eq!(
            unfit_params("tasks/list", Some(&json!({"cursor": 1}))),
            None
        );
    }
}

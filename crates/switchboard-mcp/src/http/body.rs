//! Reading a POST's body before rmcp does: bounded in size and time, and checked to be one
//! JSON-RPC message, so bad input gets the JSON-RPC error it would get over stdio.
//!
//! rmcp reads the body itself, but answers a body that is not a message with `415` and plain
//! text, and a body it cannot read (a malformed chunk size) with `500`. Reading it here first
//! lets the endpoint answer:
//!
//! - `400` and `-32700` (parse error, `id: null`) for a body that is not JSON;
//! - `400` and `-32600` (invalid request) for a batch, a scalar, or an object that is not a
//!   JSON-RPC 2.0 message an MCP client sends, with its `id` when one can be read exactly;
//! - `400` for a body whose framing is broken (a bad chunk size), `408` for one that does not
//!   arrive within the body timeout, `413` for one over the size limit; each also closes the
//!   connection, since the rest of the body was not read.
//!
//! A request of a known method whose params do not fit it is a well-formed request, not a bad
//! body: it gets its `-32602` as an ordinary JSON-RPC response, after the checks every request
//! gets ([`super::invalid_params`]).
//!
//! The message is sorted by the same function as a stdio line (`crate::stdio::classify`). The
//! bytes then go on to rmcp unchanged; what this module keeps of the message is what the
//! session layer needs: its id, whether it is an `initialize`, and the `-32602` the edge gives
//! itself when rmcp cannot be handed the request.

use std::time::Duration;

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::{StatusCode, header},
};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ProtocolVersion, RequestId};
use serde_json::Value;

use super::{limit, reject::Refusal};
use crate::stdio::classify::{Classified, InvalidParams, classify};

/// What the session layer needs of a posted message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PostedMessage {
    /// The request's id, when the message is a request.
    pub(crate) request_id: Option<RequestId>,
    /// The same id as JSON, for error answers (`null` when there is none).
    pub(crate) id: Value,
    /// Whether the message is an `initialize` request.
    pub(crate) is_initialize: bool,
    /// A request with params that do not fit its method, which the edge answers itself once
    /// it is admitted, since rmcp cannot be handed it.
    pub(crate) invalid_params: Option<EdgeAnswer>,
}

/// The `-32602` answer to a request the edge answers itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EdgeAnswer {
    /// The JSON-RPC error response.
    pub(crate) reply: Value,
    /// Whether the request's method needs a session (every one but `initialize` and
    /// `server/discover`), as the valid request would.
    pub(crate) needs_session: bool,
    /// The HTTP status it goes with: `200` for `-32602`, `404` for a method the request's
    /// revision removed.
    pub(crate) status: StatusCode,
}

/// The methods protocol 2026-07-28 removed (it has no sessions, no handshake and no
/// subscriptions to single resources): a request of one on that revision is `-32601` (method
/// not found) with `404`, whatever its params, as rmcp answers the well-formed ones.
const REMOVED_IN_2026: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// A refused body: the answer, and whether the rest of the body is still unread.
#[derive(Debug)]
pub(crate) struct BodyRefusal {
    pub(crate) refusal: Refusal,
    pub(crate) body_unread: bool,
}

impl BodyRefusal {
    fn unread(refusal: Refusal) -> Self {
        Self {
            refusal,
            body_unread: true,
        }
    }

    fn read(refusal: Refusal) -> Self {
        Self {
            refusal,
            body_unread: false,
        }
    }
}

/// Reads `request`'s body (at most `max_bytes`, within `timeout`) and, when it is declared
/// JSON, checks that it is one JSON-RPC message. Returns the request with its body in memory
/// and what it holds (`None` when it is not declared JSON: rmcp refuses that itself).
pub(crate) async fn read_message(
    request: Request,
    max_bytes: usize,
    timeout: Duration,
) -> Result<(Request, Option<PostedMessage>), BodyRefusal> {
    let (parts, body) = request.into_parts();
    let bytes = read_bounded(body, max_bytes, timeout).await?;
    let declared_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split(';').next().unwrap_or_default();
            essence.trim().eq_ignore_ascii_case("application/json")
        });
    let stateless = parts
        .headers
        .get(super::session::PROTOCOL_HEADER)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28.as_str());
    let message = if declared_json {
        Some(check(&bytes, stateless).map_err(BodyRefusal::read)?)
    } else {
        None
    };
    Ok((Request::from_parts(parts, Body::from(bytes)), message))
}

async fn read_bounded(
    body: Body,
    max_bytes: usize,
    timeout: Duration,
) -> Result<Bytes, BodyRefusal> {
    let collected = tokio::time::timeout(timeout, Limited::new(body, max_bytes).collect()).await;
    match collected {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => Err(
            BodyRefusal::unread(limit::too_large_refusal(max_bytes, None)),
        ),
        Ok(Err(error)) => {
            tracing::debug!(%error, "refused an MCP request: its body could not be read");
            Err(BodyRefusal::unread(Refusal::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "Bad Request: the request body could not be read ({error}); check its \
                     framing (Content-Length or chunked encoding)"
                ),
            )))
        }
        Err(_) => Err(BodyRefusal::unread(Refusal::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "Request Timeout: the request body did not arrive within {} s",
                timeout.as_secs_f64()
            ),
        ))),
    }
}

/// One JSON-RPC message, or the refusal it deserves; `stateless` when the request names
/// protocol 2026-07-28 or later.
fn check(bytes: &[u8], stateless: bool) -> Result<PostedMessage, Refusal> {
    match classify(bytes) {
        Classified::Message(message) => Ok(posted(&message)),
        Classified::InvalidParams(invalid) => Ok(invalid_params(*invalid, stateless)),
        Classified::Skip => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "Parse error: the request body is empty; send one JSON-RPC message",
        )
        .with_code(super::reject::PARSE_ERROR)),
        Classified::Reply(reply) => {
            let code = reply["error"]["code"]
                .as_i64()
                .unwrap_or(super::reject::INVALID_REQUEST);
            let message = reply["error"]["message"]
                .as_str()
                .unwrap_or("Invalid Request")
                .to_owned();
            Err(Refusal::new(StatusCode::BAD_REQUEST, message)
                .with_code(code)
                .with_id(reply["id"].clone()))
        }
    }
}

fn posted(message: &ClientJsonRpcMessage) -> PostedMessage {
    match message {
        ClientJsonRpcMessage::Request(request) => PostedMessage {
            id: serde_json::to_value(&request.id).unwrap_or_default(),
            request_id: Some(request.id.clone()),
            is_initialize: matches!(request.request, ClientRequest::InitializeRequest(_)),
            invalid_params: None,
        },
        _ => PostedMessage {
            request_id: None,
            id: Value::Null,
            is_initialize: false,
            invalid_params: None,
        },
    }
}

/// A request with params that do not fit its method. rmcp reads most as a custom request,
/// which goes on to it like any request (the session's handler answers it `-32602`:
/// `McpServer::on_custom_request`), so that it meets every check a valid request meets. The
/// edge answers the others itself once the request is admitted: params that are no object
/// (rmcp cannot read the body), a paginated list request (rmcp reads it as the list request
/// without params, and would answer the first page), and `initialize` (rmcp's own handshake
/// reads it, and would answer a custom one as a request without a session). On 2026-07-28 a
/// method that revision removed is not found, whatever its params.
fn invalid_params(invalid: InvalidParams, stateless: bool) -> PostedMessage {
    if stateless && REMOVED_IN_2026.contains(&invalid.method.as_str()) {
        let id = invalid.reply["id"].clone();
        return PostedMessage {
            request_id: serde_json::from_value(id.clone()).ok(),
            is_initialize: false,
            invalid_params: Some(EdgeAnswer {
                reply: serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {
                        "code": super::reject::METHOD_NOT_FOUND,
                        "message": format!(
                            "`{}` does not exist in protocol 2026-07-28 (it has no sessions); \
                             send the request's revision in `_meta` instead",
                            invalid.method
                        ),
                    },
                }),
                needs_session: false,
                status: StatusCode::NOT_FOUND,
            }),
            id,
        };
    }
    match invalid.message {
        Some(message) if invalid.method != "initialize" => posted(&message),
        _ => {
            let id = invalid.reply["id"].clone();
            PostedMessage {
                request_id: serde_json::from_value(id.clone()).ok(),
                id,
                is_initialize: false,
                invalid_params: Some(EdgeAnswer {
                    status: StatusCode::OK,
                    needs_session: !matches!(
                        invalid.method.as_str(),
                        "initialize" | "server/discover"
                    ),
                    reply: invalid.reply,
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check_2025(bytes: &[u8]) -> Result<PostedMessage, Refusal> {
        check(bytes, false)
    }

    #[test]
    fn methods_2026_removed_are_not_found_there_whatever_their_params() {
        // Params that fit none of them (a `ping` with these fits, and rmcp answers it `404`).
        for method in REMOVED_IN_2026.iter().filter(|method| **method != "ping") {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":{{"_meta":{{}}}}}}"#
            );
            let message = check(body.as_bytes(), true).expect("a message");
            let answer = message.invalid_params.expect("answered by the edge");
            assert_eq!(answer.status, StatusCode::NOT_FOUND, "{method}");
            assert_eq!(answer.reply["error"]["code"], json!(-32601), "{method}");
            assert_eq!(answer.reply["id"], json!(7), "{method}");
            let earlier = check(body.as_bytes(), false).expect("a message");
            assert!(
                earlier
                    .invalid_params
                    .is_none_or(|answer| answer.status == StatusCode::OK),
                "{method}"
            );
        }
    }

    #[test]
    fn messages_are_read_and_bad_bodies_get_their_json_rpc_codes() {
        let message = check_2025(br#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#)
            .expect("a message");
        assert!(message.is_initialize);
        assert_eq!(message.id, json!(4));
        let ping = check_2025(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#).expect("a message");
        assert!(!ping.is_initialize);
        assert_eq!(ping.request_id, Some(RequestId::String("a".into())));

        for (body, code) in [
            (&b"{not json"[..], -32700),
            (b"", -32700),
            (b"[]", -32600),
            (br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, -32600),
            (br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, -32600),
            (b"42", -32600),
        ] {
            let refusal = check_2025(body).expect_err("refused");
            assert_eq!(refusal.status, StatusCode::BAD_REQUEST);
            assert_eq!(refusal.code, code, "{}", String::from_utf8_lossy(body));
        }
        let refusal =
            check_2025(br#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#).expect_err("refused");
        assert_eq!(refusal.id, json!("x"));
    }

    #[test]
    fn params_that_do_not_fit_are_a_message_rmcp_or_the_edge_answers() {
        // rmcp reads it (a custom request), and its handler answers it.
        let message =
            check_2025(br#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":1}}"#)
                .expect("a message");
        assert_eq!(message.invalid_params, None);
        assert_eq!(message.request_id, Some(RequestId::Number(1)));
        // rmcp cannot read it, or its handshake would take it: the edge answers.
        for (body, needs_session) in [
            (
                &br#"{"jsonrpc":"2.0","id":2,"method":"ping","params":1}"#[..],
                true,
            ),
            (
                br#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}"#,
                false,
            ),
            (
                br#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":2}}"#,
                true,
            ),
        ] {
            let message = check_2025(body).expect("a message");
            let answer = message.invalid_params.expect("answered by the edge");
            assert_eq!(answer.reply["error"]["code"], json!(-32602));
            assert_eq!(answer.needs_session, needs_session);
            assert_eq!(message.request_id, Some(RequestId::Number(2)));
            assert!(!message.is_initialize);
        }
    }
}

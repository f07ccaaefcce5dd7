//! Every HTTP error answer of the endpoint, as a JSON-RPC error body a client can show.
//!
//! Our own refusals (400, 401, 403, 404, 408, 413, 429, 503) carry the request's `id` when the
//! body was read and had one, else `id: null`, and a message saying what to change; the HTTP
//! status says which check failed. rmcp's refusals further in are rewritten into the same form
//! ([`normalize`]): some are plain text, and some JSON-RPC errors have no `id` member at all.
//! A refusal sent before the request body was read says `Connection: close`, so the unread
//! body cannot be taken for the next request on that connection.

use axum::{
    body::Body,
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};

pub(crate) use crate::stdio::classify::{INVALID_REQUEST, PARSE_ERROR};

/// JSON-RPC 2.0 "Method not found".
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// JSON-RPC 2.0 "Internal error", for a 5xx answer.
pub(crate) const INTERNAL_ERROR: i64 = -32603;

/// The longest rmcp error body [`normalize`] reads to rewrite (they are one line of text).
const MAX_REWRITTEN_BODY: usize = 64 * 1024;

/// A refusal decided before the response is built: small enough to return in a `Result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// What went wrong and what to change.
    pub(crate) message: String,
    /// The JSON-RPC code (`-32600` unless said otherwise).
    pub(crate) code: i64,
    /// The request's id, when it was read.
    pub(crate) id: Value,
    /// Seconds after which trying again may succeed (`Retry-After`).
    pub(crate) retry_after: Option<u64>,
}

impl Refusal {
    /// A refusal with `status` and `message`.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            code: INVALID_REQUEST,
            id: Value::Null,
            retry_after: None,
        }
    }

    /// The same refusal, answering the request with `id`.
    #[must_use]
    pub(crate) fn with_id(mut self, id: Value) -> Self {
        self.id = id;
        self
    }

    /// The same refusal with JSON-RPC code `code`.
    #[must_use]
    pub(crate) fn with_code(mut self, code: i64) -> Self {
        self.code = code;
        self
    }

    /// The same refusal, telling the client to try again after `seconds`.
    #[must_use]
    pub(crate) fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// The response.
    pub(crate) fn into_response(self) -> Response {
        let mut response =
            json_response(self.status, error_body(&self.id, self.code, &self.message));
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// A response with `status` and the JSON-RPC error body `{"jsonrpc", "id": null, "error"}`.
pub(crate) fn refuse(status: StatusCode, message: &str) -> Response {
    Refusal::new(status, message).into_response()
}

/// The JSON-RPC error object `{"jsonrpc": "2.0", "id", "error": {"code", "message"}}` as text.
pub(crate) fn error_body(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// Marks `response` as the connection's last: the request body was not read.
pub(crate) fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// rmcp's answer, with an error status turned into a JSON-RPC error that has an `id` member
/// (`id` when the request had one): plain-text bodies become the error's message, and a JSON
/// error without `id` gets one. Successful answers pass untouched.
pub(crate) async fn normalize(response: Response, id: &Value) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_REWRITTEN_BODY)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Default::default(),
    };
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    let body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(mut object)) if is_json && object.contains_key("error") => {
            if let Some(Value::String(message)) = object
                .get_mut("error")
                .and_then(|error| error.get_mut("message"))
                && let Some(hint) = hint(status, message)
            {
                message.push_str(hint);
            }
            object.entry("id").or_insert_with(|| id.clone());
            object.entry("jsonrpc").or_insert_with(|| json!("2.0"));
            Value::Object(object).to_string()
        }
        _ => {
            let text = String::from_utf8_lossy(&bytes);
            let text = text.trim();
            let mut message = if text.is_empty() {
                status.canonical_reason().unwrap_or("error").to_owned()
            } else {
                text.to_owned()
            };
            message.push_str(hint(status, &message).unwrap_or_default());
            let code = if status.is_server_error() {
                INTERNAL_ERROR
            } else {
                INVALID_REQUEST
            };
            error_body(id, code, &message)
        }
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(body))
}

/// What the client should change, after rmcp's own words (`message`), for the refusals rmcp
/// makes: ours say it in their messages already.
fn hint(status: StatusCode, message: &str) -> Option<&'static str> {
    match status {
        StatusCode::BAD_REQUEST if message.to_ascii_lowercase().contains("session id") => Some(
            ". A 2025-11-25 session sends the `mcp-session-id` header its `initialize` was \
             answered with; without one, send `initialize` first (a 2026-07-28 request, \
             `MCP-Protocol-Version: 2026-07-28`, needs no session)",
        ),
        StatusCode::NOT_ACCEPTABLE => {
            Some(". Send the header `Accept: application/json, text/event-stream`")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(response: Response) -> Value {
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        serde_json::from_slice(&bytes).expect("JSON")
    }

    #[tokio::test]
    async fn refusals_are_json_rpc_errors_with_an_id_member() {
        let response = Refusal::new(StatusCode::TOO_MANY_REQUESTS, "slow down")
            .with_id(json!(7))
            .retry_after(3)
            .into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "3");
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let body = body_of(response).await;
        assert_eq!(body["id"], json!(7));
        assert_eq!(body["error"]["code"], json!(INVALID_REQUEST));
        let body = body_of(refuse(StatusCode::FORBIDDEN, "no")).await;
        assert!(
            body.as_object().is_some_and(|o| o.contains_key("id")),
            "{body}"
        );
        assert_eq!(body["id"], Value::Null);
    }

    #[tokio::test]
    async fn rmcp_errors_become_json_rpc_errors_with_an_id() {
        let plain = Response::builder()
            .status(StatusCode::NOT_ACCEPTABLE)
            .header(header::CONTENT_TYPE, "text/plain")
            .body(Body::from(
                "Not Acceptable: Client must accept text/event-stream",
            ))
            .expect("a response");
        let rewritten = normalize(plain, &json!("r1")).await;
        assert_eq!(rewritten.status(), StatusCode::NOT_ACCEPTABLE);
        let body = body_of(rewritten).await;
        assert_eq!(body["id"], json!("r1"));
        assert_eq!(body["error"]["code"], json!(INVALID_REQUEST));
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Not Acceptable")
                    && m.ends_with(
                        "Send the header `Accept: application/json, text/event-stream`"
                    )),
            "{body}"
        );

        let idless = Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"m"}}"#,
            ))
            .expect("a response");
        let body = body_of(normalize(idless, &Value::Null).await).await;
        assert!(
            body.as_object().is_some_and(|o| o.contains_key("id")),
            "{body}"
        );

        let ok = Response::new(Body::from("x"));
        assert_eq!(normalize(ok, &Value::Null).await.status(), StatusCode::OK);
    }
}

//! The HTTP endpoint's own refusals (400, 401, 403, 404, 413), each with a JSON-RPC error
//! body a client can show.
//!
//! These answers come before any MCP message is read, so they carry `id: null` and the JSON-RPC
//! code `-32600` (invalid request); the HTTP status says which check failed and the message
//! says what to change. rmcp's own refusals further in are plain text.

use axum::{
    body::Body,
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use serde_json::json;

/// JSON-RPC 2.0 "Invalid Request", the code of every refusal here.
pub(crate) const INVALID_REQUEST: i64 = -32600;

/// A refusal decided before the response is built: small enough to return in a `Result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// What went wrong and what to change.
    pub(crate) message: String,
}

impl Refusal {
    /// A refusal with `status` and `message`.
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// The response.
    pub(crate) fn into_response(self) -> Response {
        refuse(self.status, &self.message)
    }
}

/// A response with `status` and the JSON-RPC error body `{"jsonrpc", "id": null, "error"}`.
pub(crate) fn refuse(status: StatusCode, message: &str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": INVALID_REQUEST, "message": message},
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_json_rpc_errors_with_a_null_id() {
        let response = refuse(StatusCode::FORBIDDEN, "no");
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            response.headers().get(header::CONTENT_TYPE),
            Some(&HeaderValue::from_static("application/json"))
        );
    }
}

//! The answer to a well-formed request whose params do not fit its method, when the edge gives
//! it itself: an ordinary JSON-RPC response, after the checks every request gets.
//!
//! `-32602` (invalid params) answers a request, not a broken HTTP exchange. The streamable HTTP
//! transport answers a request with `200` and `application/json` (or an event stream), and
//! keeps error statuses for input it cannot accept; the TypeScript SDK's server checks the
//! session first and then lets its protocol layer answer a request with bad params in the
//! ordinary response, and its client (like others) treats a non-2xx status as a transport
//! failure, never showing the JSON-RPC error. So such a request is admitted exactly as the
//! valid one would be (authentication, its session: an unknown or foreign one is `404`) and
//! then answered `200` with the error as the JSON body. Most go on to rmcp, whose session
//! handler answers them (`McpServer::on_custom_request`); the edge answers here only those
//! rmcp cannot be handed ([`super::body`]).
//!
//! A request without a session whose method needs one gets what the valid request gets from
//! rmcp: `400`, "Session ID is required" (rewritten by [`super::reject::normalize`]).

use axum::{
    body::Body,
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use serde_json::Value;

use super::{body::EdgeAnswer, reject, session::Admission};

/// rmcp's answer to a request that needs a session and names none, word for word.
const SESSION_REQUIRED: &str = "Bad Request: Session ID is required";

/// The response to the request `answer` is for, once admitted as `admission`.
pub(crate) async fn respond(admission: &Admission, answer: &EdgeAnswer) -> Response {
    if answer.needs_session && matches!(admission, Admission::Sessionless) {
        let refusal = Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .body(Body::from(SESSION_REQUIRED))
            .unwrap_or_default();
        return reject::normalize(refusal, &answer.reply["id"]).await;
    }
    json_response(&answer.reply, answer.status)
}

/// `reply` as a JSON body with `status` (`200` for an answer, as the endpoint gives any answer
/// that needs no stream).
fn json_response(reply: &Value, status: StatusCode) -> Response {
    let mut response = Response::new(Body::from(reply.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt as _;
    use serde_json::json;

    use super::*;

    async fn answered(admission: &Admission, needs_session: bool) -> (StatusCode, Value) {
        let answer = EdgeAnswer {
            reply: json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "m"}}),
            needs_session,
            status: StatusCode::OK,
        };
        let response = respond(admission, &answer).await;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        (status, serde_json::from_slice(&bytes).expect("JSON"))
    }

    #[tokio::test]
    async fn admitted_requests_get_the_error_in_a_200_and_sessionless_ones_what_rmcp_says() {
        let (status, body) = answered(&Admission::Stateless, true).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["error"]["code"], json!(-32602));
        let (status, body) = answered(&Admission::Sessionless, false).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["error"]["code"], json!(-32602));
        let (status, body) = answered(&Admission::Sessionless, true).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["id"], json!(4));
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|message| message.starts_with(SESSION_REQUIRED)),
            "{body}"
        );
    }
}

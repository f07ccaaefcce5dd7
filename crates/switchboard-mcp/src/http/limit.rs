//! The request body limit: `413` with a JSON-RPC error body, whether the client declared the
//! size or streamed it.
//!
//! A declared `Content-Length` above the limit is refused before anything is read. A body
//! without one (chunked) is counted while it is read (`super::body`) and refused at the limit.

use axum::{
    http::{HeaderMap, StatusCode, header},
    response::Response,
};

use super::reject::Refusal;

/// The declared body length, if any and readable.
pub(crate) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The `413` answer for a body over `limit` bytes (`declared` when the client said its size).
pub(crate) fn too_large(limit: usize, declared: Option<u64>) -> Response {
    too_large_refusal(limit, declared).into_response()
}

/// The `413` refusal for a body over `limit` bytes (`declared` when the client said its size).
pub(crate) fn too_large_refusal(limit: usize, declared: Option<u64>) -> Refusal {
    let size = declared.map_or_else(
        || "is larger than the limit".to_owned(),
        |length| format!("is {length} bytes"),
    );
    Refusal::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "Payload Too Large: the request body {size}; this server accepts at most {limit} \
             bytes per message (its operator sets this with --max-body-bytes)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_declared_length_is_read_and_the_refusal_names_the_limit() {
        let mut headers = HeaderMap::new();
        assert_eq!(declared_length(&headers), None);
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("42"));
        assert_eq!(declared_length(&headers), Some(42));
        let response = too_large(10, Some(42));
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}

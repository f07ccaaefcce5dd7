//! One `application/json` body instead of an event stream, when a session's request needs no
//! stream.
//!
//! rmcp answers every request of a 2025 session with an event stream (a priming event, then the
//! answer), even when nothing but the answer is ever sent on it. A client may be answered with
//! a plain JSON body instead, and that answer is cheaper for both ends: one write, no event
//! framing, no stream to hold open. Whether a request needs a stream shows only while it runs (a
//! progress report, a log message or an `elicitation/create` comes before its answer), so the
//! stream is read up to its first message: when that message is the answer, it becomes the whole
//! JSON body; when it is anything else, the client gets the stream as it was, from its first
//! byte, and everything after it as it comes. 2026-07-28 requests get the same choice from rmcp
//! itself (`json_response`).

use axum::{
    body::{Body, Bytes},
    http::{HeaderValue, StatusCode, header},
    response::Response,
};
use futures::StreamExt as _;
use serde_json::Value;

/// The longest stream prefix read while looking for the first message (an answer larger than
/// this stays a stream).
const MAX_PEEK_BYTES: usize = 4 * 1024 * 1024;

/// `response`, as one JSON body when it is an event stream whose first message is the answer
/// to the request; unchanged otherwise.
pub(crate) async fn unless_streaming(response: Response) -> Response {
    let is_event_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    if response.status() != StatusCode::OK || !is_event_stream {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut stream = body.into_data_stream();
    let mut read = Vec::new();
    while read.len() <= MAX_PEEK_BYTES {
        let Some(Ok(chunk)) = stream.next().await else {
            break;
        };
        read.extend_from_slice(&chunk);
        match first_message(&read) {
            First::Answer(answer) => {
                parts.headers.remove(header::CACHE_CONTROL);
                parts.headers.remove("x-accel-buffering");
                parts.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                return Response::from_parts(parts, Body::from(answer));
            }
            First::Other => break,
            First::NotYet => {}
        }
    }
    // Not an answer first (or the stream ended or failed early): the stream as it was.
    let prefix = futures::stream::once(async move { Ok::<_, axum::Error>(Bytes::from(read)) });
    Response::from_parts(parts, Body::from_stream(prefix.chain(stream)))
}

/// What the first message of an event stream is, as far as it has arrived.
#[derive(Debug, PartialEq)]
enum First {
    /// The answer to the request (a result or an error), as JSON text.
    Answer(String),
    /// A notification or a request to the client: the stream is needed.
    Other,
    /// No message has arrived whole yet.
    NotYet,
}

/// Reads the complete events in `bytes`, skipping those without data (the priming event,
/// keep-alive comments), up to the first one with a message.
fn first_message(bytes: &[u8]) -> First {
    let Ok(text) = std::str::from_utf8(bytes) else {
        // A multi-byte character split across chunks: wait for the rest.
        return First::NotYet;
    };
    let text = text.replace("\r\n", "\n");
    let mut events = text.split("\n\n").peekable();
    while let Some(event) = events.next() {
        if events.peek().is_none() {
            // The last piece is not terminated yet.
            return First::NotYet;
        }
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| data.strip_prefix(' ').unwrap_or(data))
            .collect();
        let data = data.join("\n");
        if data.trim().is_empty() {
            continue;
        }
        let is_answer = serde_json::from_str::<Value>(&data).is_ok_and(|message| {
            message.get("method").is_none()
                && (message.get("result").is_some() || message.get("error").is_some())
        });
        return if is_answer {
            First::Answer(data)
        } else {
            First::Other
        };
    }
    First::NotYet
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt as _;

    use super::*;

    fn stream_of(chunks: &[&'static str]) -> Response {
        let chunks: Vec<Result<Bytes, axum::Error>> = chunks
            .iter()
            .map(|chunk| Ok(Bytes::from_static(chunk.as_bytes())))
            .collect();
        let mut response = Response::new(Body::from_stream(futures::stream::iter(chunks)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        response
            .headers_mut()
            .insert("mcp-session-id", HeaderValue::from_static("s1"));
        response
    }

    async fn text_of(response: Response) -> String {
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn an_answer_first_becomes_one_json_body_with_the_other_headers_kept() {
        let response = stream_of(&[
            "data: \nid: 0\nretry: 3000\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,",
            "\"result\":{}}\nid: 1\n\n",
        ]);
        let answer = unless_streaming(response).await;
        assert_eq!(answer.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(answer.headers()["mcp-session-id"], "s1");
        assert_eq!(
            text_of(answer).await,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
        );
    }

    #[tokio::test]
    async fn anything_else_first_keeps_the_whole_stream() {
        let chunks = [
            "data: \nid: 0\nretry: 3000\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
        ];
        let response = unless_streaming(stream_of(&chunks)).await;
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        assert_eq!(text_of(response).await, chunks.concat());

        let elicitation =
            ["data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"elicitation/create\"}\n\n"];
        let response = unless_streaming(stream_of(&elicitation)).await;
        assert_eq!(text_of(response).await, elicitation.concat());
    }

    #[test]
    fn events_are_read_only_once_complete() {
        assert_eq!(
            first_message(b"data: {\"id\":1,\"result\":{}}"),
            First::NotYet
        );
        assert_eq!(first_message(b"data: \n\n: keep-alive\n\n"), First::NotYet);
        assert_eq!(
            first_message(b"data: {\"id\":1,\"error\":{}}\r\n\r\n"),
            First::Answer("{\"id\":1,\"error\":{}}".to_owned())
        );
    }
}

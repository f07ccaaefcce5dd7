//! The HTTP endpoint's metrics, and `GET /metrics` when the process asks for it.
//!
//! Recorded through the `metrics` facade (nothing is kept unless the process installed a
//! recorder): refusals by kind, accepted connections, and, set when `/metrics` is scraped, the
//! open connections, live MCP sessions and requests in flight. The exposition itself is the
//! process's: [`HttpConfig::metrics`](super::HttpConfig::metrics) hands the endpoint a function
//! that renders the installed recorder (with whatever it reads at scrape time), and this module
//! only serves its text, outside the MCP endpoint's checks, like the probes.

use std::{fmt, future::Future, pin::Pin, sync::Arc};

use axum::{
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use tokio::sync::Semaphore;

use super::{drain::Drain, session::SessionTracker};

/// Where the metrics are served, when the process asks for it.
pub const METRICS_PATH: &str = "/metrics";

/// Requests and connections refused, by `kind`.
pub const HTTP_REFUSALS_TOTAL: &str = "switchboard_http_refusals_total";

/// Connections accepted.
pub const HTTP_CONNECTIONS_ACCEPTED_TOTAL: &str = "switchboard_http_connections_accepted_total";

/// Connections open now (set at scrape time).
pub const HTTP_CONNECTIONS: &str = "switchboard_http_connections";

/// Requests in flight now: every request but a `GET`, until its response is sent (set at
/// scrape time).
pub const HTTP_REQUESTS_IN_FLIGHT: &str = "switchboard_http_requests_in_flight";

/// MCP sessions alive now, open or idle within their grace window (set at scrape time).
pub const MCP_SESSIONS: &str = "switchboard_mcp_sessions";

/// What a metrics render returns: the Prometheus text exposition.
pub type RenderFuture = Pin<Box<dyn Future<Output = String> + Send>>;

/// The function that renders the process's metrics for `GET /metrics`.
#[derive(Clone)]
pub(crate) struct Render(pub(crate) Arc<dyn Fn() -> RenderFuture + Send + Sync>);

impl fmt::Debug for Render {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Render(..)")
    }
}

/// Describes the endpoint's metrics to the installed recorder (their `# HELP` lines).
pub fn describe_metrics() {
    metrics::describe_counter!(
        HTTP_REFUSALS_TOTAL,
        "HTTP requests and connections refused, by kind."
    );
    metrics::describe_counter!(
        HTTP_CONNECTIONS_ACCEPTED_TOTAL,
        "HTTP connections accepted."
    );
    metrics::describe_gauge!(HTTP_CONNECTIONS, "HTTP connections open.");
    metrics::describe_gauge!(
        HTTP_REQUESTS_IN_FLIGHT,
        "HTTP requests other than GET whose response is not yet sent whole."
    );
    metrics::describe_gauge!(
        MCP_SESSIONS,
        "MCP sessions alive (open, or idle within their grace window)."
    );
}

/// Counts one refusal of `kind`.
pub(crate) fn refused(kind: &'static str) {
    metrics::counter!(HTTP_REFUSALS_TOTAL, "kind" => kind).increment(1);
}

/// The refusal kind of an error status answered at the MCP endpoint.
fn refusal_kind(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::UNAUTHORIZED => "unauthenticated",
        StatusCode::FORBIDDEN => "forbidden_origin",
        StatusCode::NOT_FOUND => "unknown_session",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::NOT_ACCEPTABLE | StatusCode::UNSUPPORTED_MEDIA_TYPE => "unacceptable",
        StatusCode::REQUEST_TIMEOUT => "body_timeout",
        StatusCode::PAYLOAD_TOO_LARGE => "body_too_large",
        StatusCode::TOO_MANY_REQUESTS => "client_session_cap",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        _ => "other",
    }
}

/// Counts the MCP endpoint's error answers (`4xx`, `5xx`) as refusals, by kind.
pub(crate) async fn count_refusals(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if status.is_client_error() || status.is_server_error() {
        refused(refusal_kind(status));
    }
    response
}

/// What `GET /metrics` reads besides the recorder.
#[derive(Clone)]
pub(crate) struct Scrape {
    pub(crate) render: Render,
    pub(crate) sessions: Arc<SessionTracker>,
    pub(crate) drain: Arc<Drain>,
    /// The connection cap's semaphore, and the cap: open = cap - available.
    pub(crate) connections: (Arc<Semaphore>, usize),
}

/// `GET /metrics`: the endpoint's gauges set now, then the process's render.
pub(crate) async fn serve_metrics(State(scrape): State<Scrape>) -> Response {
    let (semaphore, cap) = &scrape.connections;
    let open = cap.saturating_sub(semaphore.available_permits());
    #[allow(
        clippy::cast_precision_loss,
        reason = "counts of connections and sessions fit an f64's mantissa"
    )]
    {
        metrics::gauge!(HTTP_CONNECTIONS).set(open as f64);
        metrics::gauge!(MCP_SESSIONS).set(scrape.sessions.len() as f64);
        metrics::gauge!(HTTP_REQUESTS_IN_FLIGHT).set(scrape.drain.in_flight() as f64);
    }
    let text = (scrape.render.0)().await;
    let mut response = (StatusCode::OK, text).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_status_has_a_kind() {
        assert_eq!(refusal_kind(StatusCode::UNAUTHORIZED), "unauthenticated");
        assert_eq!(refusal_kind(StatusCode::FORBIDDEN), "forbidden_origin");
        assert_eq!(refusal_kind(StatusCode::IM_A_TEAPOT), "other");
    }
}

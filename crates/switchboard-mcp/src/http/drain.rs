//! Draining: the server stops taking new work but lets what it took finish.
//!
//! A middleware in front of the MCP endpoint and the pages (not the probes, nor `/metrics`)
//! counts the requests in flight: every request but a `GET` or `HEAD`, from when it arrives to
//! when its response body has been sent whole (or dropped), so a call whose answer is an event
//! stream counts until that stream ends. `GET`s are reads or standing event streams, which the
//! shutdown ends.
//!
//! Once [`Drain::start`] is called, a new request is answered `503` with `Retry-After` and
//! `Connection: close`, and so is the response of every request still in flight, so that no
//! client reuses a connection the server is about to close. [`Drain::finished`] waits until no
//! request is in flight. A request is counted before the drain flag is read, so the drainer
//! never sees zero while a request it did not refuse is on its way in.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
};

use axum::{
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::Response,
};
use http_body::{Frame, SizeHint};
use tokio::sync::watch;

use super::reject::Refusal;

/// The `Retry-After` of a refusal while draining, in seconds: about how long a load balancer
/// takes to notice `/readyz` and send the client elsewhere.
pub const DRAIN_RETRY_AFTER_SECS: u64 = 5;

/// The drain state of one endpoint.
#[derive(Debug)]
pub(crate) struct Drain {
    draining: AtomicBool,
    in_flight: watch::Sender<usize>,
}

impl Default for Drain {
    fn default() -> Self {
        Self {
            draining: AtomicBool::new(false),
            in_flight: watch::Sender::new(0),
        }
    }
}

impl Drain {
    /// Stops taking new work.
    pub(crate) fn start(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the server drains.
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// How many requests are in flight.
    pub(crate) fn in_flight(&self) -> usize {
        *self.in_flight.borrow()
    }

    /// Waits until no request is in flight.
    pub(crate) async fn finished(&self) {
        let mut in_flight = self.in_flight.subscribe();
        // The sender lives in `self`: the wait ends only when the count is zero.
        let _ = in_flight.wait_for(|count| *count == 0).await;
    }

    /// Counts one request in; dropping the returned guard counts it out.
    fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.send_modify(|count| *count += 1);
        InFlight {
            drain: Arc::clone(self),
        }
    }
}

/// One request in flight.
struct InFlight {
    drain: Arc<Drain>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.drain
            .in_flight
            .send_modify(|count| *count = count.saturating_sub(1));
    }
}

/// Refuses new requests while draining, and counts the others in flight until their response
/// bodies end.
pub(crate) async fn admit(
    State(drain): State<Arc<Drain>>,
    request: Request,
    next: Next,
) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        if drain.is_draining() {
            return refusal();
        }
        return next.run(request).await;
    }
    let in_flight = drain.enter();
    if drain.is_draining() {
        drop(in_flight);
        return refusal_after_reading(request).await;
    }
    let mut response = next.run(request).await;
    if drain.is_draining() {
        closing(&mut response);
    }
    response.map(|body| {
        Body::new(CountedBody {
            inner: body,
            _in_flight: in_flight,
        })
    })
}

/// The refusal of a request with a body, once that body is read (up to
/// [`REFUSED_BODY_LIMIT`] bytes, for up to [`REFUSED_BODY_TIMEOUT`]). Closing a connection with
/// request bytes unread makes the kernel reset it, and the client may then lose the refusal
/// itself; a larger or slower body is left unread.
async fn refusal_after_reading(request: Request) -> Response {
    let body = axum::body::to_bytes(request.into_body(), REFUSED_BODY_LIMIT);
    let _ = tokio::time::timeout(REFUSED_BODY_TIMEOUT, body).await;
    refusal()
}

/// The most of a refused request's body read before answering.
const REFUSED_BODY_LIMIT: usize = 64 * 1024;

/// The longest a refused request's body is waited for.
const REFUSED_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// The answer to a request that arrives while draining.
fn refusal() -> Response {
    super::observe::refused("draining");
    let mut response = Refusal::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: this server is shutting down and takes no new requests; try \
         again, another replica will answer",
    )
    .retry_after(DRAIN_RETRY_AFTER_SECS)
    .into_response();
    closing(&mut response);
    response
}

fn closing(response: &mut Response) {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
}

/// A response body that keeps its request counted in flight until it ends or is dropped.
struct CountedBody {
    inner: Body,
    _in_flight: InFlight,
}

impl http_body::Body for CountedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::{Router, body::to_bytes, routing::post};
    use tower::ServiceExt as _;

    use super::*;

    fn app(drain: &Arc<Drain>, release: Arc<tokio::sync::Notify>) -> Router {
        Router::new()
            .route(
                "/mcp",
                post(move || {
                    let release = Arc::clone(&release);
                    async move {
                        release.notified().await;
                        "done"
                    }
                }),
            )
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(drain),
                admit,
            ))
    }

    fn call() -> Request {
        Request::post("/mcp")
            .body(Body::empty())
            .expect("a request")
    }

    #[tokio::test]
    async fn a_call_in_flight_finishes_and_new_ones_are_refused_while_draining() {
        let drain = Arc::new(Drain::default());
        let release = Arc::new(tokio::sync::Notify::new());
        let app = app(&drain, Arc::clone(&release));
        let running = tokio::spawn(app.clone().oneshot(call()));
        while drain.in_flight() == 0 {
            tokio::task::yield_now().await;
        }
        drain.start();
        let refused = app.clone().oneshot(call()).await.expect("an answer");
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "5");
        assert_eq!(refused.headers()[header::CONNECTION], "close");
        assert_eq!(drain.in_flight(), 1, "the refused request is not counted");

        let finished = drain.finished();
        tokio::pin!(finished);
        assert!(
            tokio::time::timeout(Duration::from_millis(20), &mut finished)
                .await
                .is_err(),
            "a call is in flight"
        );
        release.notify_one();
        let answer = running.await.expect("the task").expect("an answer");
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers()[header::CONNECTION], "close");
        assert_eq!(drain.in_flight(), 1, "counted until its body is sent");
        let body = to_bytes(answer.into_body(), 64).await.expect("a body");
        assert_eq!(&body[..], b"done");
        finished.await;
        assert_eq!(drain.in_flight(), 0);
    }
}

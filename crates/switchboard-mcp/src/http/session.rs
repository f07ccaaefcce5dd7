//! MCP sessions over HTTP (2025-03-26 to 2025-11-25): who owns each one, when it ends, and the
//! session handle of 2026-07-28 requests, which have no session.
//!
//! rmcp's [`LocalSessionManager`] runs the sessions; [`SessionTracker`] decides their life:
//!
//! - **Ownership.** A session belongs to the principal (bearer token, or the operator) whose
//!   `initialize` created it. A request naming a session id that does not exist, has ended, or
//!   belongs to someone else is answered `404` (the spec's answer for an unknown session; the
//!   same answer in all three cases, so a stranger learns nothing). The handler serving a
//!   session was built with its owner's identity, so checking the owner is what makes every
//!   call in a session act as the request's token.
//! - **Grace window.** A session is *open* while any HTTP exchange of it is in flight (a POST
//!   whose answer is still streaming, a `GET` event stream held by the client). When the last
//!   one ends, the grace window starts: a client that reconnects within it keeps its session,
//!   and a sweeper closes sessions that stayed idle longer, every quarter of the window. rmcp's
//!   own idle timeout is switched off, because it would also close sessions whose client sits
//!   quietly on an open event stream.
//! - **DELETE** ends a session (rmcp closes it); an unknown one is `404`, where rmcp alone
//!   would answer `202`.
//! - **2026-07-28** requests (`MCP-Protocol-Version: 2026-07-28` or later) are stateless: rmcp
//!   serves each with a fresh handler. Their calls get a server-minted handle, one per TCP
//!   connection (`mcp-conn-<uuid>`), handed to the handler in the request's `mcp-session-id`
//!   header (where it reads the session from), replacing anything the client put there.

use std::{
    collections::HashMap,
    pin::Pin,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    task::{Context, Poll},
    time::{Duration, Instant},
};

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::{HeaderValue, Method, StatusCode},
    response::Response,
};
use http_body::{Frame, SizeHint};
use rmcp::{
    model::ProtocolVersion,
    transport::streamable_http_server::{SessionManager as _, session::local::LocalSessionManager},
};
use tokio_util::sync::CancellationToken;

use super::{Connection, auth::Principal, reject::Refusal};

/// The header carrying the session id (HTTP header names are case-insensitive).
const SESSION_HEADER: &str = "mcp-session-id";

/// The header naming the request's protocol revision.
const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// The shortest and longest pause between two sweeps.
const SWEEP_BOUNDS: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(30));

/// One tracked session.
#[derive(Debug)]
struct SessionEntry {
    /// [`Principal::key`] of the creator.
    owner: Arc<str>,
    /// HTTP exchanges of this session in flight.
    open: usize,
    /// When `open` last dropped to zero; `None` while open.
    idle_since: Option<Instant>,
}

/// The sessions of one endpoint, with their owners and open exchanges.
#[derive(Debug)]
pub(crate) struct SessionTracker {
    manager: Arc<LocalSessionManager>,
    grace: Duration,
    entries: Mutex<HashMap<Arc<str>, SessionEntry>>,
}

/// What the tracker decided about a request before it goes to rmcp.
#[derive(Debug)]
pub(crate) enum Admission {
    /// No session named: an `initialize` may create one (watch the response).
    Fresh,
    /// A request in a live session of its principal; open until the response body is gone.
    InSession(OpenExchange),
    /// `DELETE` of a live session of its principal.
    Delete(Arc<str>),
    /// A 2026-07-28 request: no session to track.
    Stateless,
}

impl SessionTracker {
    /// Tracks the sessions of `manager`, ending them `grace` after their last exchange.
    pub(crate) fn new(manager: Arc<LocalSessionManager>, grace: Duration) -> Self {
        Self {
            manager,
            grace,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<Arc<str>, SessionEntry>> {
        // Every critical section leaves the map consistent, so a poisoned lock is still usable.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions are tracked now.
    pub(crate) fn len(&self) -> usize {
        self.entries().len()
    }

    /// Decides about `request` from `principal`, or answers `404` for a session that is not
    /// theirs to use. Rewrites the session header of 2026-07-28 requests.
    pub(crate) async fn admit(
        self: &Arc<Self>,
        request: &mut Request,
        principal: &Principal,
        connection: Option<&Connection>,
    ) -> Result<Admission, Refusal> {
        if is_stateless_post(request) {
            let headers = request.headers_mut();
            headers.remove(SESSION_HEADER);
            if let Some(handle) =
                connection.and_then(|connection| HeaderValue::from_str(&connection.handle).ok())
            {
                headers.insert(SESSION_HEADER, handle);
            }
            return Ok(Admission::Stateless);
        }
        let Some(session_id) = request
            .headers()
            .get(SESSION_HEADER)
            .map(|value| Arc::<str>::from(value.to_str().unwrap_or_default()))
        else {
            return Ok(Admission::Fresh);
        };
        let alive = self.manager.has_session(&session_id).await.unwrap_or(false);
        let mut entries = self.entries();
        match entries.get_mut(&session_id) {
            Some(entry) if alive && entry.owner == principal.key => {
                if request.method() == Method::DELETE {
                    return Ok(Admission::Delete(session_id));
                }
                entry.open += 1;
                entry.idle_since = None;
                Ok(Admission::InSession(OpenExchange {
                    tracker: Arc::clone(self),
                    session_id,
                }))
            }
            Some(_) => {
                if !alive {
                    entries.remove(&session_id);
                } else {
                    tracing::warn!(
                        principal = %principal.label,
                        "refused a request naming another principal's MCP session"
                    );
                }
                Err(session_not_found())
            }
            None => Err(session_not_found()),
        }
    }

    /// Records what rmcp's `response` means for the session, and keeps the session open
    /// while the response body streams.
    pub(crate) fn complete(
        self: &Arc<Self>,
        admission: Admission,
        principal: &Principal,
        response: Response,
    ) -> Response {
        match admission {
            Admission::Stateless => response,
            Admission::Delete(session_id) => {
                if response.status().is_success() {
                    self.entries().remove(&session_id);
                    tracing::info!(principal = %principal.label, "an MCP session was deleted");
                }
                response
            }
            Admission::InSession(open) => track_body(response, open),
            Admission::Fresh => {
                let Some(session_id) = response
                    .headers()
                    .get(SESSION_HEADER)
                    .and_then(|value| value.to_str().ok())
                    .map(Arc::<str>::from)
                else {
                    return response;
                };
                self.entries().insert(
                    Arc::clone(&session_id),
                    SessionEntry {
                        owner: Arc::clone(&principal.key),
                        open: 1,
                        idle_since: None,
                    },
                );
                tracing::info!(principal = %principal.label, "an MCP session started");
                let open = OpenExchange {
                    tracker: Arc::clone(self),
                    session_id,
                };
                track_body(response, open)
            }
        }
    }

    /// Closes the sessions idle for longer than the grace window, and forgets the ones rmcp
    /// ended by itself.
    pub(crate) async fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<Arc<str>> = {
            let mut entries = self.entries();
            let expired: Vec<Arc<str>> = entries
                .iter()
                .filter(|(_, entry)| {
                    entry.open == 0
                        && entry
                            .idle_since
                            .is_some_and(|since| now.duration_since(since) >= self.grace)
                })
                .map(|(session_id, _)| Arc::clone(session_id))
                .collect();
            for session_id in &expired {
                entries.remove(session_id);
            }
            expired
        };
        for session_id in expired {
            if let Err(error) = self.manager.close_session(&session_id).await {
                tracing::warn!(%error, "could not close an expired MCP session");
            }
            tracing::info!(
                grace_secs = self.grace.as_secs_f64(),
                "an MCP session expired after its grace window"
            );
        }
        let tracked: Vec<Arc<str>> = self.entries().keys().cloned().collect();
        for session_id in tracked {
            if !self.manager.has_session(&session_id).await.unwrap_or(false) {
                self.entries().remove(&session_id);
            }
        }
    }

    /// Sweeps every quarter of the grace window (within [`SWEEP_BOUNDS`]) until `stop`.
    pub(crate) async fn sweep_until(self: Arc<Self>, stop: CancellationToken) {
        let pause = (self.grace / 4).clamp(SWEEP_BOUNDS.0, SWEEP_BOUNDS.1);
        let mut ticks = tokio::time::interval(pause);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => self.sweep().await,
            }
        }
    }

    fn exchange_ended(&self, session_id: &str) {
        if let Some(entry) = self.entries().get_mut(session_id) {
            entry.open = entry.open.saturating_sub(1);
            if entry.open == 0 {
                entry.idle_since = Some(Instant::now());
            }
        }
    }
}

/// A POST whose protocol revision has no sessions (2026-07-28 and later).
fn is_stateless_post(request: &Request) -> bool {
    request.method() == Method::POST
        && request
            .headers()
            .get(PROTOCOL_HEADER)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28.as_str())
}

fn session_not_found() -> Refusal {
    Refusal::new(
        StatusCode::NOT_FOUND,
        "Not Found: no such MCP session (it was deleted, expired after its grace window, or \
         belongs to another client); start a new one with initialize",
    )
}

/// One HTTP exchange of a session in flight; dropping it ends the exchange.
#[derive(Debug)]
pub(crate) struct OpenExchange {
    tracker: Arc<SessionTracker>,
    session_id: Arc<str>,
}

impl Drop for OpenExchange {
    fn drop(&mut self) {
        self.tracker.exchange_ended(&self.session_id);
    }
}

/// `response` with a body that holds `open` until the body is finished or dropped.
fn track_body(response: Response, open: OpenExchange) -> Response {
    response.map(|inner| Body::new(TrackedBody { inner, _open: open }))
}

/// A response body that keeps its session open while it lives.
struct TrackedBody {
    inner: Body,
    _open: OpenExchange,
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

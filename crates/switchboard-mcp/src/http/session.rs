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
//! - **Caps.** At most `max_sessions` live sessions in all, and `max_sessions_per_principal`
//!   of one principal (its token; without tokens, its peer address). A place is taken when an
//!   `initialize` is admitted, so concurrent ones cannot overshoot. A principal at its cap
//!   loses its longest-idle session to the new one (a client that forgets its sessions only
//!   ever hurts itself); when none of its sessions is idle, the `initialize` is refused `429`.
//!   At the total cap it is refused `503`; one client never ends another's session. Both
//!   refusals carry `Retry-After`.
//! - **Request ids in flight.** rmcp routes a session's answers by JSON-RPC request id, so two
//!   requests in flight with the same id would get each other's answers. A request whose id is
//!   already in flight in its session is refused at once (`400`, `-32600`); the id is free
//!   again when its answer has been sent.
//! - **DELETE** ends a session (rmcp closes it) and is answered `204`; an unknown one is `404`,
//!   where rmcp alone would answer `202` to both.
//! - **2026-07-28** requests (`MCP-Protocol-Version: 2026-07-28` or later) are stateless: rmcp
//!   serves each with a fresh handler. Their calls get a server-minted handle, one per TCP
//!   connection (`mcp-conn-<uuid>`), handed to the handler in the request's `mcp-session-id`
//!   header (where it reads the session from), replacing anything the client put there.

use std::{
    collections::{HashMap, HashSet},
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
    model::{ProtocolVersion, RequestId},
    transport::streamable_http_server::{SessionManager as _, session::local::LocalSessionManager},
};
use tokio_util::sync::CancellationToken;

use super::{Connection, HttpLimits, auth::Principal, body::PostedMessage, reject::Refusal};

/// The header carrying the session id (HTTP header names are case-insensitive).
const SESSION_HEADER: &str = "mcp-session-id";

/// The header naming the request's protocol revision.
pub(crate) const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// The shortest and longest pause between two sweeps.
const SWEEP_BOUNDS: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(30));

/// What a client refused at a session cap is told to wait, in seconds.
const RETRY_AFTER_SECS: u64 = 5;

/// One tracked session.
#[derive(Debug)]
struct SessionEntry {
    /// [`Principal::key`] of the creator.
    owner: Arc<str>,
    /// Whose cap the session counts against.
    quota: Arc<str>,
    /// HTTP exchanges of this session in flight.
    open: usize,
    /// When `open` last dropped to zero; `None` while open.
    idle_since: Option<Instant>,
    /// The JSON-RPC ids of this session's requests whose answers are still being sent.
    requests_in_flight: HashSet<RequestId>,
}

/// The tracked sessions and the places taken under each cap.
#[derive(Debug, Default)]
struct Sessions {
    entries: HashMap<Arc<str>, SessionEntry>,
    /// Places taken per quota: live sessions plus admitted `initialize`s not answered yet.
    taken: HashMap<Arc<str>, usize>,
    /// All places taken.
    taken_total: usize,
}

impl Sessions {
    fn release(&mut self, quota: &str) {
        self.taken_total = self.taken_total.saturating_sub(1);
        if let Some(count) = self.taken.get_mut(quota) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.taken.remove(quota);
            }
        }
    }

    fn take(&mut self, quota: &Arc<str>) {
        self.taken_total += 1;
        *self.taken.entry(Arc::clone(quota)).or_default() += 1;
    }

    /// Forgets a session, freeing its place.
    fn remove(&mut self, session_id: &str) -> Option<SessionEntry> {
        let entry = self.entries.remove(session_id)?;
        self.release(&entry.quota);
        Some(entry)
    }

    /// The longest-idle session counted against `quota`.
    fn longest_idle(&self, quota: &str) -> Option<Arc<str>> {
        self.entries
            .iter()
            .filter(|(_, entry)| &*entry.quota == quota && entry.open == 0)
            .filter_map(|(id, entry)| Some((entry.idle_since?, id)))
            .min_by_key(|(since, _)| *since)
            .map(|(_, id)| Arc::clone(id))
    }
}

/// The sessions of one endpoint, with their owners, open exchanges and caps.
#[derive(Debug)]
pub(crate) struct SessionTracker {
    manager: Arc<LocalSessionManager>,
    grace: Duration,
    max_total: usize,
    max_per_quota: usize,
    sessions: Mutex<Sessions>,
}

/// What the tracker decided about a request before it goes to rmcp.
#[derive(Debug)]
pub(crate) enum Admission {
    /// No session named, and not an `initialize`: rmcp answers it.
    Sessionless,
    /// An `initialize` that may create a session, holding its place under the caps.
    Opening(Place),
    /// A request in a live session of its principal; open until the response body is gone.
    InSession(OpenExchange),
    /// `DELETE` of a live session of its principal.
    Delete(Arc<str>),
    /// A 2026-07-28 request: no session to track.
    Stateless,
}

impl SessionTracker {
    /// Tracks the sessions of `manager`, ending them `grace` after their last exchange, within
    /// the session caps of `limits`.
    pub(crate) fn new(
        manager: Arc<LocalSessionManager>,
        grace: Duration,
        limits: &HttpLimits,
    ) -> Self {
        Self {
            manager,
            grace,
            max_total: limits.max_sessions.max(1),
            max_per_quota: limits.max_sessions_per_principal.max(1),
            sessions: Mutex::default(),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions> {
        // Every critical section leaves the map consistent, so a poisoned lock is still usable.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions are tracked now.
    pub(crate) fn len(&self) -> usize {
        self.sessions().entries.len()
    }

    /// Decides about `request` from `principal` (counted against `quota`), whose posted
    /// message, if any, is `message`; or refuses it: `404` for a session that is not theirs to
    /// use, `429`/`503` at a session cap, `400` for a request id already in flight. Rewrites
    /// the session header of 2026-07-28 requests.
    pub(crate) async fn admit(
        self: &Arc<Self>,
        request: &mut Request,
        principal: &Principal,
        quota: &Arc<str>,
        connection: Option<&Connection>,
        message: Option<&PostedMessage>,
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
            return match message {
                Some(message) if message.is_initialize => self
                    .open_place(principal, quota)
                    .await
                    .map(Admission::Opening),
                _ => Ok(Admission::Sessionless),
            };
        };
        let alive = self.manager.has_session(&session_id).await.unwrap_or(false);
        let mut sessions = self.sessions();
        match sessions.entries.get_mut(&session_id) {
            Some(entry) if alive && entry.owner == principal.key => {
                if request.method() == Method::DELETE {
                    return Ok(Admission::Delete(session_id));
                }
                let request_id = message.and_then(|message| message.request_id.clone());
                if let Some(id) = &request_id
                    && !entry.requests_in_flight.insert(id.clone())
                {
                    return Err(Refusal::new(
                        StatusCode::BAD_REQUEST,
                        "Invalid Request: a request with this id is already in flight in this \
                         session; give every request in flight its own id",
                    )
                    .with_id(
                        message
                            .map(|message| message.id.clone())
                            .unwrap_or_default(),
                    ));
                }
                entry.open += 1;
                entry.idle_since = None;
                Ok(Admission::InSession(OpenExchange {
                    tracker: Arc::clone(self),
                    session_id,
                    request_id,
                }))
            }
            Some(_) => {
                if !alive {
                    sessions.remove(&session_id);
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

    /// A place for a new session of `quota`: free, or made by ending that quota's longest-idle
    /// session; else the refusal.
    async fn open_place(
        self: &Arc<Self>,
        principal: &Principal,
        quota: &Arc<str>,
    ) -> Result<Place, Refusal> {
        let evicted = {
            let mut sessions = self.sessions();
            let at_quota = sessions.taken.get(quota).copied().unwrap_or(0) >= self.max_per_quota;
            let evicted = if at_quota {
                let Some(oldest) = sessions.longest_idle(quota) else {
                    tracing::warn!(
                        principal = %principal.label,
                        cap = self.max_per_quota,
                        "refused an MCP initialize: the principal has its cap of open sessions"
                    );
                    return Err(Refusal::new(
                        StatusCode::TOO_MANY_REQUESTS,
                        format!(
                            "Too Many Requests: this client already has {} open MCP sessions, \
                         the most the server allows; end one (DELETE) or reuse one",
                            self.max_per_quota
                        ),
                    )
                    .retry_after(RETRY_AFTER_SECS));
                };
                sessions.remove(&oldest);
                Some(oldest)
            } else {
                None
            };
            if sessions.taken_total >= self.max_total {
                tracing::warn!(
                    cap = self.max_total,
                    "refused an MCP initialize: the server has its cap of open sessions"
                );
                return Err(Refusal::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "Service Unavailable: the server has {} open MCP sessions, the most it \
                         allows; try again later",
                        self.max_total
                    ),
                )
                .retry_after(RETRY_AFTER_SECS));
            }
            sessions.take(quota);
            evicted
        };
        if let Some(session_id) = evicted {
            tracing::info!(
                principal = %principal.label,
                "ended the principal's longest-idle MCP session to make room for a new one"
            );
            if let Err(error) = self.manager.close_session(&session_id).await {
                tracing::warn!(%error, "could not close an evicted MCP session");
            }
        }
        Ok(Place {
            tracker: Arc::clone(self),
            quota: Some(Arc::clone(quota)),
        })
    }

    /// Records what rmcp's `response` means for the session, and keeps the session open
    /// while the response body streams.
    pub(crate) fn complete(
        self: &Arc<Self>,
        admission: Admission,
        principal: &Principal,
        mut response: Response,
    ) -> Response {
        match admission {
            Admission::Stateless | Admission::Sessionless => response,
            Admission::Delete(session_id) => {
                if response.status().is_success() {
                    self.sessions().remove(&session_id);
                    tracing::info!(principal = %principal.label, "an MCP session was deleted");
                    // rmcp answers 202; the request is complete, and some clients log 202 as
                    // an error.
                    *response.status_mut() = StatusCode::NO_CONTENT;
                    *response.body_mut() = Body::empty();
                }
                response
            }
            Admission::InSession(open) => track_body(response, open),
            Admission::Opening(place) => {
                let Some(session_id) = response
                    .headers()
                    .get(SESSION_HEADER)
                    .and_then(|value| value.to_str().ok())
                    .map(Arc::<str>::from)
                else {
                    return response;
                };
                let quota = place.settle();
                self.sessions().entries.insert(
                    Arc::clone(&session_id),
                    SessionEntry {
                        owner: Arc::clone(&principal.key),
                        quota,
                        open: 1,
                        idle_since: None,
                        requests_in_flight: HashSet::new(),
                    },
                );
                tracing::info!(principal = %principal.label, "an MCP session started");
                let open = OpenExchange {
                    tracker: Arc::clone(self),
                    session_id,
                    request_id: None,
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
            let mut sessions = self.sessions();
            let expired: Vec<Arc<str>> = sessions
                .entries
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
                sessions.remove(session_id);
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
        let tracked: Vec<Arc<str>> = self.sessions().entries.keys().cloned().collect();
        for session_id in tracked {
            if !self.manager.has_session(&session_id).await.unwrap_or(false) {
                self.sessions().remove(&session_id);
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

    fn exchange_ended(&self, session_id: &str, request_id: Option<&RequestId>) {
        if let Some(entry) = self.sessions().entries.get_mut(session_id) {
            if let Some(id) = request_id {
                entry.requests_in_flight.remove(id);
            }
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

/// A place under the session caps, taken for an `initialize`; freed on drop unless a session
/// took it.
#[derive(Debug)]
pub(crate) struct Place {
    tracker: Arc<SessionTracker>,
    /// `None` once a session took the place.
    quota: Option<Arc<str>>,
}

impl Place {
    /// Hands the place to the session just created (it stays taken until the session ends).
    fn settle(mut self) -> Arc<str> {
        self.quota.take().unwrap_or_default()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(quota) = self.quota.take() {
            self.tracker.sessions().release(&quota);
        }
    }
}

/// One HTTP exchange of a session in flight; dropping it ends the exchange.
#[derive(Debug)]
pub(crate) struct OpenExchange {
    tracker: Arc<SessionTracker>,
    session_id: Arc<str>,
    /// The JSON-RPC id of the request being answered, freed when the exchange ends.
    request_id: Option<RequestId>,
}

impl Drop for OpenExchange {
    fn drop(&mut self) {
        self.tracker
            .exchange_ended(&self.session_id, self.request_id.as_ref());
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

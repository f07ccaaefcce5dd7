//! A workflow run's events over Server-Sent Events, at [`RUN_EVENTS_PATH`].
//!
//! A person (session cookie), a program (bearer token) or the operator watches a run of their
//! own organisation as it goes: one SSE event per stored event (`id:` its `seq`, `event:` `run`
//! or `node`, `data:` the event's JSON), from the first or after `Last-Event-ID`, then live,
//! and the stream ends after the run's final event. A run of another organisation answers
//! `404`, as an unknown one does, so that its existence does not leak.
//!
//! A stream holds a connection for as long as the run lasts, so they are capped: at most
//! [`MAX_EVENT_STREAMS`] at once and [`MAX_EVENT_STREAMS_PER_PERSON`] per person; one more is
//! refused with `429`. Every stream ends when the server stops (the token given with
//! [`WebConfig::workflows`](crate::WebConfig::workflows)), so that shutdown does not wait for
//! runs to end.

use std::{
    collections::HashMap,
    convert::Infallible,
    sync::{Arc, Mutex, PoisonError},
};

use axum::{
    extract::{Path, State},
    http::{HeaderMap, StatusCode, header},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use futures::StreamExt as _;
use switchboard_workflows::{EventRecord, RunId, WorkflowEvent};
use switchboard_workflows_engine::{Engine, EngineError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::{
    guard,
    handlers::{AppState, over_https},
};

/// The path of a run's event stream (`{id}`: the run's id).
pub const RUN_EVENTS_PATH: &str = "/workflows/runs/{id}/events";
/// How many event streams are open at once, in total.
pub const MAX_EVENT_STREAMS: usize = 256;
/// How many event streams one person (`org/user`) has open at once.
pub const MAX_EVENT_STREAMS_PER_PERSON: usize = 8;

/// The engine whose runs are watched, and the token that ends every stream.
#[derive(Debug, Clone)]
pub(crate) struct WorkflowsConfig {
    pub(crate) engine: Engine,
    pub(crate) stop: CancellationToken,
}

/// What the event stream handler shares.
#[derive(Clone)]
pub(crate) struct WorkflowsState {
    app: AppState,
    engine: Engine,
    stop: CancellationToken,
    caps: Arc<StreamCaps>,
}

impl WorkflowsState {
    pub(crate) fn new(app: AppState, config: WorkflowsConfig) -> Self {
        Self {
            app,
            engine: config.engine,
            stop: config.stop,
            caps: Arc::new(StreamCaps::new(MAX_EVENT_STREAMS)),
        }
    }
}

/// The open streams, in total and per person.
struct StreamCaps {
    total: Arc<Semaphore>,
    per_person: Mutex<HashMap<String, usize>>,
}

/// One open stream's place under the caps, given back when the stream ends.
struct StreamSlot {
    caps: Arc<StreamCaps>,
    person: String,
    _total: OwnedSemaphorePermit,
}

impl StreamCaps {
    fn new(total: usize) -> Self {
        Self {
            total: Arc::new(Semaphore::new(total)),
            per_person: Mutex::new(HashMap::new()),
        }
    }

    /// A place for one more stream of `person`, or `None` when a cap is reached.
    fn take(self: &Arc<Self>, person: &str) -> Option<StreamSlot> {
        let total = Arc::clone(&self.total).try_acquire_owned().ok()?;
        let mut per_person = self
            .per_person
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let open = per_person.entry(person.to_owned()).or_insert(0);
        if *open >= MAX_EVENT_STREAMS_PER_PERSON {
            return None;
        }
        *open += 1;
        Some(StreamSlot {
            caps: Arc::clone(self),
            person: person.to_owned(),
            _total: total,
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut per_person = self
            .caps
            .per_person
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = per_person.get_mut(&self.person) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                per_person.remove(&self.person);
            }
        }
    }
}

/// A refusal: `status` with `{"error": code, "message": message}`.
fn refuse(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = serde_json::json!({ "error": code, "message": message.into() });
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer realm=\"switchboard\""),
        );
    }
    response
}

/// The SSE event of one stored event.
fn sse_event(record: &EventRecord) -> Option<Event> {
    let kind = match record.event {
        WorkflowEvent::Run { .. } => "run",
        WorkflowEvent::Node { .. } => "node",
    };
    match serde_json::to_string(record) {
        Ok(data) => Some(
            Event::default()
                .id(record.seq.to_string())
                .event(kind)
                .data(data),
        ),
        Err(error) => {
            tracing::error!(%error, run = %record.run, seq = record.seq, "workflow event not serialized");
            None
        }
    }
}

/// `GET /workflows/runs/{id}/events`: the run's events as Server-Sent Events.
pub(crate) async fn run_events(
    State(state): State<WorkflowsState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let config = state.app.config();
    if !config.signs_in() && !guard::host_allowed(&headers, config) {
        return refuse(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "this server does not answer that Host (allow it with --allow-host)",
        );
    }
    if !guard::same_origin(&headers, config, over_https(&headers)) {
        return refuse(
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
            "a run's events may only be read from this server's own pages (or an allowed origin)",
        );
    }
    let Ok(run) = id.parse::<RunId>() else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "invalid_run_id",
            format!("`{id}` is not a run id: a run id is a UUID"),
        );
    };
    let Some((caller, person)) = state.app.caller(&headers) else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "send `Authorization: Bearer <token>`, or sign in at /sign-in first",
        );
    };
    let after = match headers.get("last-event-id") {
        None => 0,
        Some(value) => match value
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            Some(seq) => seq,
            None => {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "invalid_last_event_id",
                    "Last-Event-ID must be the `id` of an event of this stream (a number)",
                );
            }
        },
    };
    let events = match state.engine.events_after(run, after, &caller) {
        Ok(events) => events,
        Err(EngineError::RunNotFound(_)) => {
            return refuse(
                StatusCode::NOT_FOUND,
                "run_not_found",
                format!("no run of your organisation has the id {run}"),
            );
        }
        Err(error @ EngineError::MissingContext { .. }) => {
            return refuse(StatusCode::FORBIDDEN, "missing_context", error.to_string());
        }
        Err(error) => {
            tracing::error!(%error, %run, "workflow events not opened");
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "store_failed",
                "the run's events could not be read; see the server's log",
            );
        }
    };
    let Some(slot) = state.caps.take(&person) else {
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_streams",
            format!(
                "too many event streams are open (at most {MAX_EVENT_STREAMS_PER_PERSON} per \
                 person, {MAX_EVENT_STREAMS} in all); close one and try again"
            ),
        );
    };
    let stop = state.stop.clone();
    let stream = events
        .take_until(async move { stop.cancelled().await })
        .filter_map(move |record| {
            // The slot is given back when the stream is dropped.
            let _held = &slot;
            std::future::ready(sse_event(&record).map(Ok::<_, Infallible>))
        });
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_stream_gives_its_places_back() {
        let caps = Arc::new(StreamCaps::new(MAX_EVENT_STREAMS_PER_PERSON + 1));
        let held: Vec<StreamSlot> = (0..MAX_EVENT_STREAMS_PER_PERSON)
            .map(|_| caps.take("acme/sam").expect("under the cap"))
            .collect();
        assert!(caps.take("acme/sam").is_none(), "the per-person cap");
        let other = caps.take("acme/mark").expect("another person");
        assert!(caps.take("acme/ann").is_none(), "the total cap");
        drop(other);
        drop(held);
        assert!(caps.take("acme/sam").is_some());
        assert!(
            caps.per_person
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty(),
            "nobody holds a stream"
        );
    }
}

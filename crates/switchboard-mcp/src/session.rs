//! What one MCP session keeps between requests: its log level, its own tool list in the
//! registry, its subscriptions, and the token that ends its background work when it ends.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
};

use switchboard_registry::OpenSession;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::{list_changed, logging::SessionLogLevel};

/// The state of one session: its log level, and the end of its background work.
#[derive(Debug)]
pub(crate) struct SessionState {
    /// The level set with `logging/setLevel`; nothing is sent before.
    pub(crate) log_level: Arc<SessionLogLevel>,
    /// Cancelled when the session's handler is dropped (the session ended), which stops its
    /// `tools/list_changed` watcher.
    pub(crate) ended: CancellationToken,
    /// The session's own tool list in the registry, opened by a 2025 session's
    /// `notifications/initialized` (a 2026-07-28 client has none: its list does not vary by
    /// connection). Dropped with the session, which forgets what it revealed.
    pub(crate) open_session: Mutex<Option<OpenSession>>,
    /// The tools and the registry's writes as each `subscriptions/listen` of this session
    /// found them when it was accepted, oldest first. rmcp acknowledges a subscription before
    /// it calls `listen`, so a baseline taken in `listen` would miss a change made in between;
    /// one taken before the acknowledgement cannot.
    pub(crate) subscription_baselines: Mutex<VecDeque<ListenBaseline>>,
    /// The resources this session subscribed to with `resources/subscribe`; dropping a guard
    /// (`resources/unsubscribe`, or the session's end) stops its watch.
    pub(crate) resource_subscriptions: Mutex<HashMap<String, DropGuard>>,
    _end_on_drop: DropGuard,
}

/// What a `subscriptions/listen` compares against.
#[derive(Debug)]
pub(crate) struct ListenBaseline {
    pub(crate) tools: list_changed::Baseline,
    pub(crate) writes: watch::Receiver<u64>,
}

impl SessionState {
    pub(crate) fn new() -> Self {
        let ended = CancellationToken::new();
        Self {
            log_level: Arc::new(SessionLogLevel::silent()),
            _end_on_drop: ended.clone().drop_guard(),
            ended,
            open_session: Mutex::default(),
            subscription_baselines: Mutex::default(),
            resource_subscriptions: Mutex::default(),
        }
    }
}

/// The streamable-HTTP `mcp-session-id` header of a request, if it has a valid one.
pub(crate) fn transport_session(extensions: &rmcp::model::Extensions) -> Option<&str> {
    extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|value| value.to_str().ok())
        .filter(|value| switchboard_core::is_valid_id(value))
}

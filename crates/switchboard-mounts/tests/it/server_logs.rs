//! Which calls a mounted server's log messages go to, seen from `tracing`: a message sent
//! during one organisation's call is an event inside that call's span; one sent while two
//! organisations' calls are in flight goes to neither call, only to `tracing` outside any span.
//!
//! The server is a small rmcp server written here, served over streamable HTTP on a loopback
//! port as the fixture server is, and mounted by `url`. Its tool `chat` logs once and answers;
//! `hold` waits until two calls of it are running, then logs and answers. The test runs on one thread with its own subscriber,
//! which notes, for each event of the mounted servers' log target, the caller span it is in.

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams, ServerCapabilities,
        ServerConfig, Tool,
    },
    service::RequestContext,
    transport::StreamableHttpServerConfig,
};
use serde_json::json;
use switchboard_core::{CallContext, Initiator};
use switchboard_mounts::Mounts;
use tokio::sync::Barrier;
use tracing::{
    Event, Instrument as _, Subscriber,
    field::{Field, Visit},
};
use tracing_subscriber::{
    layer::{Context, Layer},
    prelude::*,
    registry::LookupSpan,
};

use crate::{
    fixture_server::{mcp_route, serve_on_loopback},
    servers::{caller, config, registry},
};

/// The `tracing` target of a mounted server's log messages.
const SERVER_LOG: &str = "switchboard_mounts::server_log";

/// The mounted server: `chat` logs `{"call": N}` and answers; `hold` waits for a second
/// `hold`, then does the same.
#[derive(Clone)]
struct Chatty {
    calls: Arc<AtomicU64>,
    both_running: Arc<Barrier>,
}

impl ServerHandler for Chatty {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(
            json!({"type": "object"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("chat", "Logs once, then answers.", Arc::clone(&schema)),
            Tool::new(
                "hold",
                "Waits for a second call, logs once, answers.",
                schema,
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "hold" {
            self.both_running.wait().await;
        }
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let log = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!({"call": call}));
        context
            .peer
            .notify_logging_message(log)
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        // Then works a while: over streamable HTTP the log may travel on another stream than
        // the answer, and an instant answer could overtake it.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        Ok(CallToolResult::success(vec![ContentBlock::text("done")]).into())
    }
}

/// One event of the mounted servers' log target: the caller span it is inside (`None`:
/// outside every call), and its `mcp.data`.
type Seen = (Option<&'static str>, String);

/// Notes every event of [`SERVER_LOG`].
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Seen>>>);

impl Capture {
    fn seen(&self) -> Vec<Seen> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
{
    fn on_event(&self, event: &Event<'_>, context: Context<'_, S>) {
        if event.metadata().target() != SERVER_LOG {
            return;
        }
        let caller = context.event_scope(event).and_then(|scope| {
            scope
                .from_root()
                .map(|span| span.name())
                .find(|name| name.ends_with("_caller"))
        });
        let mut data = McpData::default();
        event.record(&mut data);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((caller, data.0));
    }
}

/// The `mcp.data` field of an event.
#[derive(Default)]
struct McpData(String);

impl Visit for McpData {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "mcp.data" {
            value.clone_into(&mut self.0);
        }
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

/// bob, a globex admin.
fn globex_admin() -> CallContext {
    CallContext::builder()
        .org("globex")
        .user("bob")
        .roles(["admin"])
        .initiator(Initiator::Human)
        .session("mounts-test-globex")
        .correlation(switchboard_core::mint_id("test"))
        .build()
}

#[tokio::test]
async fn a_log_goes_to_the_call_of_one_organisation_and_never_across_organisations() {
    let capture = Capture::default();
    let _subscriber = tracing_subscriber::registry()
        .with(capture.clone())
        .set_default();
    let chatty = Chatty {
        calls: Arc::default(),
        both_running: Arc::new(Barrier::new(2)),
    };
    let (address, _serving) =
        serve_on_loopback(mcp_route(chatty, StreamableHttpServerConfig::default())).await;
    let registry = registry().await;
    let mounts = Mounts::new(config(&format!(
        "[[server]]\nid = \"chatty\"\nurl = \"http://{address}/mcp\"\ncategory = \"read\"\n"
    )));
    mounts
        .start(&registry, switchboard_mounts::Strictness::Strict)
        .await
        .expect("the server starts");
    let acme = caller(Initiator::Human, false);
    let globex = globex_admin();

    // One call in flight: its log is in its span.
    let alone = registry
        .invoke("chatty_chat", json!({}), &acme)
        .instrument(tracing::info_span!("acme_caller"))
        .await;
    assert!(alone.is_ok(), "{alone:?}");
    assert_eq!(
        capture.seen(),
        [(Some("acme_caller"), r#"{"call":1}"#.to_owned())]
    );

    // Two organisations' calls in flight: the logs go to neither, only outside any call.
    let (first, second) = tokio::time::timeout(
        Duration::from_secs(30),
        futures::future::join(
            registry
                .invoke("chatty_hold", json!({}), &acme)
                .instrument(tracing::info_span!("acme_caller")),
            registry
                .invoke("chatty_hold", json!({}), &globex)
                .instrument(tracing::info_span!("globex_caller")),
        ),
    )
    .await
    .expect("both calls answer");
    assert!(first.is_ok() && second.is_ok(), "{first:?} {second:?}");
    let seen = capture.seen();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for (caller, _) in &seen[1..] {
        assert_eq!(*caller, None, "{seen:?}");
    }

    mounts.close().await;
}

//! A session's own tool list over streamable HTTP: a tool that reveals an unlisted domain to
//! its caller's session (`ToolRegistry::reveal_domain`, as the lazy mounted servers'
//! `mcp_connect` does) changes that 2025-11-25 session's `tools/list`, with
//! `tools/list_changed`, and no other session's; a 2026-07-28 client has no list of its own,
//! so the same call is refused and its list stays the same.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient,
    model::{CallToolRequestParams, CallToolResult, ProtocolVersion},
    service::{NotificationContext, RunningService},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use switchboard_core::{BoxFuture, ToolContext, ToolError};
use switchboard_registry::{Exposure, RuntimeTool, ToolRegistry, WeakToolRegistry};

use crate::common::{
    Nothing, bounded, close_http, connect_http, eventually, listed, registry, runtime_tool,
    serve_http_as_admin,
};

/// Reveals the domain `hidden` to its caller's session.
struct Reveal(WeakToolRegistry);

impl RuntimeTool for Reveal {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let registry = self
                .0
                .upgrade()
                .ok_or_else(|| ToolError::new("gone", "the registry stopped"))?;
            registry
                .reveal_domain(ctx.caller().session_id.as_str(), "hidden")
                .map_err(|error| ToolError::new("not_revealed", error.to_string()))?;
            Ok(json!({"revealed": "hidden"}))
        })
    }
}

#[derive(Clone, Default)]
struct Recorder {
    list_changed: Arc<AtomicUsize>,
}

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, Ordering::SeqCst);
    }
}

type Client = RunningService<RoleClient, Recorder>;

async fn reveal(client: &Client) -> CallToolResult {
    bounded(
        "tools/call",
        client.call_tool(CallToolRequestParams::new("reveal_hidden")),
    )
    .await
    .expect("a result")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect()
}

async fn with_tools() -> ToolRegistry {
    let registry = registry().await;
    registry
        .register(vec![
            runtime_tool(
                "reveal_hidden",
                "revealer",
                "core.users.read",
                Arc::new(Reveal(registry.downgrade())),
                Exposure::Listed,
            ),
            runtime_tool(
                "hidden_lookup",
                "hidden",
                "core.users.read",
                Arc::new(Nothing),
                Exposure::Unlisted,
            ),
        ])
        .await
        .expect("registers");
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_session_lists_what_it_revealed_and_no_other_session_does() {
    let registry = with_tools().await;
    let server = serve_http_as_admin(&registry).await;
    let connect = || async {
        let recorder = Recorder::default();
        (connect_http(&server, recorder.clone()).await, recorder)
    };
    let (first, first_notes) = connect().await;
    let (second, second_notes) = connect().await;
    assert!(!listed(&first).await.contains(&"hidden_lookup".to_owned()));

    let revealed = reveal(&first).await;
    assert_ne!(revealed.is_error, Some(true), "{revealed:?}");
    eventually("tools/list_changed on the first session", || {
        first_notes.list_changed.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(listed(&first).await.contains(&"hidden_lookup".to_owned()));
    assert!(!listed(&second).await.contains(&"hidden_lookup".to_owned()));

    let again = reveal(&first).await;
    assert_eq!(again.is_error, Some(true), "{again:?}");
    assert!(text(&again).contains("already lists"), "{again:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        second_notes.list_changed.load(Ordering::SeqCst),
        0,
        "the other session's list did not change"
    );

    close_http([first, second], server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_client_has_no_list_of_its_own() {
    let registry = with_tools().await;
    let server = serve_http_as_admin(&registry).await;
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = bounded(
        "discovering",
        Recorder::default().serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(server.url()),
            lifecycle,
        ),
    )
    .await
    .expect("the 2026-07-28 client connects");
    let before = listed(&client).await;
    let refused = reveal(&client).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    assert!(text(&refused).contains("2026-07-28"), "{refused:?}");
    assert_eq!(listed(&client).await, before);

    close_http([client], server, registry).await;
}

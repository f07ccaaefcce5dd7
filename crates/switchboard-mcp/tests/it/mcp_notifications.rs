//! What the server tells a client while it works, seen from a real rmcp client: progress
//! (`notifications/progress` for a request with a progress token), logging
//! (`notifications/message` after `logging/setLevel`, fed from `tracing`), and
//! `notifications/tools/list_changed` after run-time registrations and switches; plus the content-block
//! answers of the conformance tools. The tools are the `conformance` domain's. Every wait is
//! bounded by `common::LIMIT`.

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

use std::{
    sync::{Arc, Mutex, Once},
    time::Duration,
};

use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient, RoleServer,
    ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResult, LoggingLevel, LoggingMessageNotificationParam,
        ProgressNotificationParam, ProtocolVersion, ServerNotification, SetLevelRequestParams,
        SubscriptionFilter,
    },
    service::{NotificationContext, RunningService},
};
use serde_json::{Value, json};
use switchboard_core::{CallContext, Progress, ProgressNotifier};
use switchboard_mcp::{Identity, McpServer};
use switchboard_registry::{Exposure, ToolRegistry};
use tracing_subscriber::prelude::*;

use crate::common::{
    Nothing, admin, bounded, close, close_http, connect_handler, connect_http, error_of,
    eventually, listed, registry, runtime_tool, serve_http_as_admin,
};

/// The three messages `test_tool_with_logging` logs.
const LOGGED: [&str; 3] = [
    "Tool execution started",
    "Tool processing data",
    "Tool execution completed",
];

/// A client that records what the server notifies.
#[derive(Debug, Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
    list_changed: Arc<Mutex<usize>>,
}

impl Recorder {
    fn progress(&self) -> Vec<(f64, Option<f64>)> {
        let progress = self.progress.lock().expect("not poisoned");
        progress.iter().map(|p| (p.progress, p.total)).collect()
    }

    fn log_messages(&self) -> Vec<String> {
        let logs = self.logs.lock().expect("not poisoned");
        logs.iter()
            .map(|log| log.data["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    fn list_changed(&self) -> usize {
        *self.list_changed.lock().expect("not poisoned")
    }
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().expect("not poisoned").push(params);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().expect("not poisoned").push(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        *self.list_changed.lock().expect("not poisoned") += 1;
    }
}

type Client = RunningService<RoleClient, Recorder>;
type Server = RunningService<RoleServer, McpServer>;

/// Installs the MCP log layer in this process's subscriber, once.
fn install_log_layer() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing_subscriber::registry()
            .with(switchboard_mcp::log_layer())
            .try_init()
            .expect("no other subscriber in this test binary");
    });
}

async fn connect(registry: &ToolRegistry, identity: Identity) -> (Client, Recorder, Server) {
    let recorder = Recorder::default();
    let (client, server) = connect_handler(registry, identity, recorder.clone()).await;
    (client, recorder, server)
}

async fn call(client: &Client, tool: &str) -> CallToolResult {
    bounded(
        "a tools/call",
        client.call_tool(CallToolRequestParams::new(tool.to_owned())),
    )
    .await
    .expect("a result")
}

async fn set_level(client: &Client, level: LoggingLevel) {
    bounded(
        "logging/setLevel",
        client.set_level(SetLevelRequestParams::new(level)),
    )
    .await
    .expect("the level is accepted");
}

/// Gives a notification that should not come the time to arrive anyway.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

// One thread: the rmcp client hands each notification to a task of its own, and only on one
// thread do those tasks run in the order the notifications arrived.
#[tokio::test(flavor = "current_thread")]
async fn progress_reaches_the_client_in_order() {
    let registry = registry().await;
    let (client, recorder, server) = connect(&registry, admin()).await;

    // The rmcp client puts a progress token on every request.
    let result = call(&client, "test_tool_with_progress").await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    // The server sends every report before the result; the client may handle them later.
    eventually("three progress notifications", || {
        recorder.progress().len() >= 3
    })
    .await;
    assert_eq!(
        recorder.progress(),
        [
            (0.0, Some(100.0)),
            (50.0, Some(100.0)),
            (100.0, Some(100.0))
        ]
    );
    let messages: Vec<Option<String>> = recorder
        .progress
        .lock()
        .expect("not poisoned")
        .iter()
        .map(|p| p.message.clone())
        .collect();
    assert_eq!(
        messages,
        [
            Some("starting".into()),
            Some("halfway".into()),
            Some("done".into())
        ]
    );

    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_goes_over_streamable_http_too() {
    let registry = registry().await;
    let server = serve_http_as_admin(&registry).await;
    let recorder = Recorder::default();
    let client = connect_http(&server, recorder.clone()).await;

    let result = call(&client, "test_tool_with_progress").await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    eventually("three progress notifications", || {
        recorder.progress().len() == 3
    })
    .await;
    assert_eq!(
        recorder.progress(),
        [
            (0.0, Some(100.0)),
            (50.0, Some(100.0)),
            (100.0, Some(100.0))
        ]
    );

    close_http([client], server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_callers_receive_progress_through_their_own_notifier() {
    let registry = registry().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let context = CallContext::builder()
        .org("acme")
        .user("alice")
        .role("admin")
        .session("in-process")
        .correlation("in-process-1")
        .progress(ProgressNotifier::new(move |progress: Progress<'_>| {
            sink.lock().expect("not poisoned").push(progress.done);
        }))
        .build();
    let output = bounded(
        "an in-process call",
        registry.invoke("test_tool_with_progress", json!({}), &context),
    )
    .await
    .expect("the call succeeds");
    assert_eq!(output["content"][0]["type"], "text");
    assert_eq!(*seen.lock().expect("not poisoned"), [0.0, 50.0, 100.0]);
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_follow_the_level_each_session_set() {
    install_log_layer();
    let registry = registry().await;
    let (listening, listening_logs, listening_server) = connect(&registry, admin()).await;
    let (warned, warned_logs, warned_server) = connect(&registry, admin()).await;
    let (silent, silent_logs, silent_server) = connect(&registry, admin()).await;

    // Nothing before `logging/setLevel`.
    call(&listening, "test_tool_with_logging").await;
    settle().await;
    assert_eq!(listening_logs.log_messages(), Vec::<String>::new());

    // `warning` admits no info message.
    set_level(&warned, LoggingLevel::Warning).await;
    call(&warned, "test_tool_with_logging").await;
    settle().await;
    assert_eq!(warned_logs.log_messages(), Vec::<String>::new());

    // `info` admits all three, in order; at the same time, the session at `warning` and the
    // one that set no level get none.
    set_level(&listening, LoggingLevel::Info).await;
    let (heard, unheard, unasked) = tokio::join!(
        call(&listening, "test_tool_with_logging"),
        call(&warned, "test_tool_with_logging"),
        call(&silent, "test_tool_with_logging"),
    );
    for result in [&heard, &unheard, &unasked] {
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    eventually("three log messages", || {
        listening_logs.log_messages().len() >= 3
    })
    .await;
    assert_eq!(listening_logs.log_messages(), LOGGED);
    let first = listening_logs.logs.lock().expect("not poisoned")[0].clone();
    assert_eq!(first.level, LoggingLevel::Info);
    assert_eq!(
        first.logger.as_deref(),
        Some("switchboard_domain_conformance::behaviour_tools")
    );
    settle().await;
    assert_eq!(warned_logs.log_messages(), Vec::<String>::new());
    assert_eq!(silent_logs.log_messages(), Vec::<String>::new());

    close(listening, listening_server).await;
    close(warned, warned_server).await;
    close(silent, silent_server).await;
    registry.shutdown().await;
}

/// The listed run-time tool `name` of the domain `mounted`, needing `permission`.
fn mounted_tool(
    name: &'static str,
    permission: &'static str,
) -> switchboard_registry::RuntimeToolSpec {
    runtime_tool(
        name,
        "mounted",
        permission,
        Arc::new(Nothing),
        Exposure::Listed,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_follows_the_tools_the_client_may_call() {
    let registry = registry().await;
    let staff = Identity::agent("acme", "sam").with_role("staff");
    let (client, recorder, server) = connect(&registry, staff).await;
    let info = client.peer_info().expect("the server introduced itself");
    let tools = info.capabilities.tools.clone().expect("tools capability");
    assert_eq!(tools.list_changed, Some(true));
    // Listed once before the changes, so the lists below cannot come from a stale catalog.
    assert!(!listed(&client).await.contains(&"mounted_lookup".to_owned()));

    // A tool staff may not call changes nothing staff can see.
    bounded(
        "registering",
        registry.register(vec![mounted_tool("mounted_secret", "secret.read")]),
    )
    .await
    .expect("registers");
    settle().await;
    assert_eq!(recorder.list_changed(), 0);

    // One staff may call does.
    bounded(
        "registering",
        registry.register(vec![mounted_tool("mounted_lookup", "core.users.read")]),
    )
    .await
    .expect("registers");
    eventually("tools/list_changed", || recorder.list_changed() == 1).await;
    let names = listed(&client).await;
    assert!(
        names.iter().any(|name| name == "mounted_lookup"),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|name| name == "mounted_secret"),
        "{names:?}"
    );

    // And so does its removal.
    let removed = bounded(
        "unregistering",
        registry.unregister(vec!["mounted_lookup".to_owned()]),
    )
    .await
    .expect("unregisters");
    assert_eq!(removed, 1);
    eventually("a second tools/list_changed", || {
        recorder.list_changed() == 2
    })
    .await;
    assert!(!listed(&client).await.contains(&"mounted_lookup".to_owned()));

    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_tool_leaves_the_list_with_a_list_changed_until_enabled() {
    let registry = registry().await;
    bounded(
        "registering",
        registry.register(vec![mounted_tool("mounted_lookup", "core.users.read")]),
    )
    .await
    .expect("registers");
    let (client, recorder, server) = connect(&registry, admin()).await;
    assert!(listed(&client).await.contains(&"mounted_lookup".to_owned()));
    let operator = CallContext::builder()
        .org("acme")
        .user("alice")
        .role("admin")
        .session("switching")
        .correlation("switching-1")
        .build();

    let changed = bounded(
        "disabling",
        registry.disable("domain:mounted".parse().expect("a selector"), &operator),
    )
    .await
    .expect("the domain has a tool");
    assert_eq!(changed, ["mounted_lookup"]);
    eventually("tools/list_changed", || recorder.list_changed() == 1).await;
    assert!(!listed(&client).await.contains(&"mounted_lookup".to_owned()));
    let refused = bounded(
        "a tools/call",
        client.call_tool(CallToolRequestParams::new("mounted_lookup")),
    )
    .await
    .expect_err("a disabled tool is refused as unknown");
    assert!(
        refused
            .to_string()
            .contains("no tool is named `mounted_lookup`"),
        "{refused}"
    );

    bounded(
        "enabling",
        registry.enable(
            "tool:mounted_lookup".parse().expect("a selector"),
            &operator,
        ),
    )
    .await
    .expect("the tool exists");
    eventually("a second tools/list_changed", || {
        recorder.list_changed() == 2
    })
    .await;
    assert!(listed(&client).await.contains(&"mounted_lookup".to_owned()));
    assert!(
        !call(&client, "mounted_lookup")
            .await
            .is_error
            .unwrap_or(false)
    );

    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2026_07_28_list_changed_arrives_on_a_listen_subscription() {
    let registry = registry().await;
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server = McpServer::new(registry.clone(), admin());
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    // Without `initialize`, the server settles on the lifecycle at the first request after
    // `server/discover`: here, the `subscriptions/listen`.
    let server = tokio::spawn(server.serve(server_io));
    let client = bounded(
        "server/discover",
        ().serve_with_lifecycle(client_io, lifecycle),
    )
    .await
    .expect("the client connects");
    let mut subscription = bounded(
        "subscriptions/listen",
        client.listen(SubscriptionFilter::builder().tools_list_changed().build()),
    )
    .await
    .expect("the subscription is acknowledged");
    let server = bounded("the server starting", server)
        .await
        .expect("the server task")
        .expect("the server accepts");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    bounded(
        "registering",
        registry.register(vec![mounted_tool("mounted_lookup", "core.users.read")]),
    )
    .await
    .expect("registers");
    let notification = bounded("tools/list_changed", subscription.next())
        .await
        .expect("the subscription is open")
        .expect("a notification");
    assert!(
        matches!(
            notification,
            ServerNotification::ToolListChangedNotification(_)
        ),
        "{notification:?}"
    );

    bounded("cancelling the subscription", subscription.cancel())
        .await
        .expect("the cancellation is sent");
    // A round trip, so that the server has handled the cancellation before the client goes
    // away (rmcp lets a request still running at end of input finish for up to 5 s).
    bounded("tools/list", client.list_all_tools())
        .await
        .expect("lists");
    bounded("closing the client", client.cancel())
        .await
        .expect("closes");
    bounded("the server ending", server.waiting())
        .await
        .expect("ends");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_tools_answer_blocks_and_declare_no_output_schema() {
    let registry = registry().await;
    let (client, _recorder, server) = connect(&registry, admin()).await;

    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let tool = |name: &str| {
        serde_json::to_value(
            tools
                .iter()
                .find(|tool| tool.name == name)
                .unwrap_or_else(|| panic!("{name} is listed: the admin may call it")),
        )
        .expect("serialises")
    };
    assert!(tool("test_image_content").get("outputSchema").is_none());
    assert!(
        tool("json_schema_2020_12_tool")
            .get("outputSchema")
            .is_some()
    );
    assert_eq!(
        tool("json_schema_2020_12_tool")["inputSchema"]["$defs"]["address"]["type"],
        "object"
    );

    let image = call(&client, "test_image_content").await;
    assert_eq!(image.structured_content, None);
    let blocks = serde_json::to_value(&image.content).expect("serialises");
    assert_eq!(blocks[0]["type"], "image", "{blocks}");
    assert_eq!(blocks[0]["mimeType"], "image/png", "{blocks}");

    let mixed = call(&client, "test_multiple_content_types").await;
    let blocks = serde_json::to_value(&mixed.content).expect("serialises");
    assert_eq!(
        blocks[2]["resource"]["uri"],
        "test://mixed-content-resource"
    );

    let failed = call(&client, "test_error_handling").await;
    assert_eq!(failed.is_error, Some(true));
    let text = failed
        .content
        .first()
        .and_then(|block| block.as_text())
        .expect("a text block");
    assert!(
        text.text
            .contains("This tool intentionally returns an error for testing"),
        "{}",
        text.text
    );

    // An ordinary tool still answers structuredContent; the schema's `allOf` (a phone or an
    // email) is enforced although the Rust type cannot express it.
    let call_with = |arguments: Value| {
        client.call_tool(
            CallToolRequestParams::new("json_schema_2020_12_tool")
                .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
        )
    };
    let echo = bounded(
        "a tools/call",
        call_with(
            json!({"name": "Ada", "address": {"city": "London"}, "email": "ada@example.org"}),
        ),
    )
    .await
    .expect("a result");
    assert_eq!(
        echo.structured_content,
        Some(json!({"name": "Ada", "address": {"city": "London"}}))
    );
    let refused = bounded("a tools/call", call_with(json!({"name": "Ada"})))
        .await
        .expect("a tool error");
    let error = error_of(&refused);
    assert_eq!(error["kind"], "invalid_input", "{error}");

    close(client, server).await;
    registry.shutdown().await;
}

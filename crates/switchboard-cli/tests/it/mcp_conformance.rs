//! The MCP conformance suite's tools (domain `conformance`) exist only under
//! `switchboard serve --conformance`: `tools`, `call` and a plain `serve` never show them. With
//! the flag, the spawned binary serves them over stdio, and its own `tracing` subscriber
//! forwards a call's log events to the session (`notifications/message`) and its progress
//! reports as `notifications/progress`. Every wait is bounded by `common::LIMIT`.

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

use crate::common::{bounded, exit_of, switchboard};

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ClientHandler, RoleClient, ServiceExt as _,
    model::{
        CallToolRequestParams, LoggingLevel, LoggingMessageNotificationParam,
        ProgressNotificationParam, SetLevelRequestParams,
    },
    service::NotificationContext,
};

/// The identity flags of `call` and `serve`: the acme admin.
const ADMIN: [&str; 6] = ["--org", "acme", "--user", "alice", "--role", "admin"];

/// A client that records progress and log notifications.
#[derive(Debug, Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<f64>>>,
    logs: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .expect("not poisoned")
            .push(params.progress);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let message = params.data["message"].as_str().unwrap_or_default();
        self.logs
            .lock()
            .expect("not poisoned")
            .push(message.to_owned());
    }
}

async fn eventually(what: &str, condition: impl Fn() -> bool) {
    bounded(what, async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_conformance_serves_the_suites_tools_with_progress_and_logs() {
    let mut child = switchboard(&["serve", "--stdio", "--conformance"])
        .args(ADMIN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let stdin = child.stdin.take().expect("piped stdin");
    let recorder = Recorder::default();
    let client = bounded("the handshake", recorder.clone().serve((stdout, stdin)))
        .await
        .expect("the server answers initialize");

    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    for expected in [
        "test_simple_text",
        "test_tool_with_progress",
        "test_tool_with_logging",
        "json_schema_2020_12_tool",
        "test_header_parameter",
        "test_trigger_tool_change",
        "core_get_current_user",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }

    let progress = bounded(
        "tools/call with progress",
        client.call_tool(CallToolRequestParams::new("test_tool_with_progress")),
    )
    .await
    .expect("a result");
    assert_ne!(progress.is_error, Some(true), "{progress:?}");
    eventually("three progress notifications", || {
        recorder.progress.lock().expect("not poisoned").len() >= 3
    })
    .await;
    assert_eq!(
        *recorder.progress.lock().expect("not poisoned"),
        [0.0, 50.0, 100.0]
    );

    bounded(
        "logging/setLevel",
        client.set_level(SetLevelRequestParams::new(LoggingLevel::Debug)),
    )
    .await
    .expect("the level is accepted");
    let logged = bounded(
        "tools/call with logging",
        client.call_tool(CallToolRequestParams::new("test_tool_with_logging")),
    )
    .await
    .expect("a result");
    assert_ne!(logged.is_error, Some(true), "{logged:?}");
    eventually("three log messages", || {
        recorder.logs.lock().expect("not poisoned").len() >= 3
    })
    .await;
    assert_eq!(
        *recorder.logs.lock().expect("not poisoned"),
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ]
    );

    // The run-time hook adds a tool, then removes it.
    for added in [true, false] {
        let toggled = bounded(
            "tools/call test_trigger_tool_change",
            client.call_tool(CallToolRequestParams::new("test_trigger_tool_change")),
        )
        .await
        .expect("a result");
        assert_ne!(toggled.is_error, Some(true), "{toggled:?}");
        let tools = bounded("tools/list", client.list_all_tools())
            .await
            .expect("tools/list");
        assert_eq!(
            tools.iter().any(|tool| tool.name == "test_toggled_tool"),
            added,
            "{tools:?}"
        );
    }

    bounded("closing the client", client.cancel())
        .await
        .expect("the client closes");
    let status = exit_of("the server exiting", &mut child).await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_commands_never_see_the_conformance_tools() {
    let listed = bounded("tools --json", switchboard(&["tools", "--json"]).output())
        .await
        .expect("the binary runs");
    assert!(listed.status.success(), "{listed:?}");
    let tools: serde_json::Value =
        serde_json::from_slice(&listed.stdout).expect("tools --json prints JSON");
    let names: Vec<&str> = tools
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(!names.is_empty());
    assert!(
        names
            .iter()
            .all(|name| !name.starts_with("test_") && !name.starts_with("json_schema")),
        "{names:?}"
    );

    let called = bounded(
        "call test_simple_text",
        switchboard(&["call", "test_simple_text", "--json"])
            .args(ADMIN)
            .output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(called.status.code(), Some(1), "{called:?}");
    let answer: serde_json::Value =
        serde_json::from_slice(&called.stdout).expect("call --json prints JSON");
    assert_eq!(answer["error"]["kind"], "tool_not_found", "{answer}");
}

//! A mounted server's log messages through `switchboard serve --stdio --mounts`, seen by a real
//! MCP client (rmcp): a session that set a level gets the log the server sent during its call,
//! with the server's id in the logger name; a call made before the session set a level gets
//! none, and that log is in Switchboard's own log instead. The mounted server is a small rmcp
//! server written here, served over streamable HTTP on a loopback port and mounted by `url`.
//! Its one tool, `chat`, logs once and answers; it records the levels it is asked for, which
//! shows the configured `log_level` sent at connect.

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

use std::{
    process::Stdio,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams, ServerCapabilities,
        ServerConfig, SetLevelRequestParams, Tool,
    },
    service::{NotificationContext, RequestContext},
};
use serde_json::json;
use tokio::{io::AsyncReadExt as _, sync::mpsc};

use crate::{
    common::{TempFile, bounded},
    mounts_support::{close, serve_on_loopback, serve_stdio_mounting},
};

/// The mounted server: `chat` logs `{"said": "hello", "call": N}` as logger `chatter`, then
/// answers `done`.
#[derive(Clone, Default)]
struct Chatty {
    calls: Arc<AtomicU64>,
    levels_asked: Arc<Mutex<Vec<LoggingLevel>>>,
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
        let schema = json!({"type": "object"});
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "chat",
            "Logs once, then answers.",
            Arc::new(schema.as_object().cloned().unwrap_or_default()),
        )]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let log = LoggingMessageNotificationParam::new(
            LoggingLevel::Info,
            json!({"said": "hello", "call": call}),
        )
        .with_logger("chatter");
        context
            .peer
            .notify_logging_message(log)
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        // Then works a while, as a tool that logs would. Over streamable HTTP the log may
        // travel on another stream than the answer, and a log that arrives after its call has
        // ended reaches no session (by the routing rule), so an instant answer could overtake it.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        Ok(CallToolResult::success(vec![ContentBlock::text("done")]).into())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.levels_asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.level);
        Ok(())
    }
}

/// Our MCP client: every log message it is sent goes to `logs`.
struct LogCollector {
    logs: mpsc::UnboundedSender<LoggingMessageNotificationParam>,
}

impl ClientHandler for LogCollector {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.logs.send(params);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_servers_log_reaches_a_session_that_set_a_level_during_its_call() {
    let chatty = Chatty::default();
    let address = serve_on_loopback(chatty.clone()).await;
    let file = TempFile::new(&format!(
        "[[server]]\nid = \"fixture\"\nurl = \"http://{address}/mcp\"\ncategory = \"read\"\nlog_level = \"debug\"\n"
    ));
    let mut server = serve_stdio_mounting(&file)
        .env("RUST_LOG", "warn,switchboard_mounts::server_log=info")
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stdout = server.stdout.take().expect("piped stdout");
    let stdin = server.stdin.take().expect("piped stdin");
    let mut stderr = server.stderr.take().expect("piped stderr");
    let our_log = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let (logs, mut received) = mpsc::unbounded_channel();
    let client = bounded(
        "the handshake",
        LogCollector { logs }.serve((stdout, stdin)),
    )
    .await
    .expect("the server answers initialize");

    let chat = || CallToolRequestParams::new("fixture_chat");
    // No level set: the session gets no log.
    let first = bounded("the call before setLevel", client.call_tool(chat()))
        .await
        .expect("a result");
    assert_ne!(first.is_error, Some(true), "{first:?}");

    bounded(
        "logging/setLevel",
        client.set_level(SetLevelRequestParams::new(LoggingLevel::Info)),
    )
    .await
    .expect("the level is set");
    let second = bounded("the call after setLevel", client.call_tool(chat()))
        .await
        .expect("a result");
    assert_ne!(second.is_error, Some(true), "{second:?}");

    // The log was queued before the call's result; only our client's handler may lag.
    let log = tokio::time::timeout(Duration::from_secs(10), received.recv())
        .await
        .expect("the mounted server's log within 10s")
        .expect("a log message");
    assert_eq!(log.level, LoggingLevel::Info);
    assert_eq!(log.logger.as_deref(), Some("fixture/chatter"));
    assert_eq!(log.data, json!({"said": "hello", "call": 2}));
    // Nothing else comes: the first call's log was not sent to this session.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(received.try_recv().is_err(), "only the second call's log");

    assert_eq!(
        *chatty
            .levels_asked
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
        [LoggingLevel::Debug],
        "the configured log_level is asked for at connect"
    );

    close(client, server).await;
    let our_log = bounded("Switchboard's own log", our_log)
        .await
        .expect("the reader ends");
    // Both messages are in Switchboard's own log, whether or not a session got them.
    let relayed: Vec<&str> = our_log
        .lines()
        .filter(|line| {
            line.contains("the mounted server logged") && line.contains("fixture/chatter")
        })
        .collect();
    for call in [1, 2] {
        let data = format!(r#"\"call\":{call}"#);
        assert!(
            relayed.iter().any(|line| line.contains(&data)),
            "call {call}: {our_log}"
        );
    }
}

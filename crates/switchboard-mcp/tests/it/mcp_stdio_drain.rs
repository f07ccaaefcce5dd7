//! `serve_io_until`, the stdio server that stops on request (a process's SIGTERM), over a
//! `tokio::io::duplex` pipe: once stopped it reads no further message, answers the call in
//! flight and ends; a call that outlasts the drain's deadline is cancelled (audited so), counted,
//! and the session ends at once. The call in flight is a run-time tool that sleeps.

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};
use switchboard_audit::AuditQuery;
use switchboard_core::{BoxFuture, ToolContext, ToolError};
use switchboard_mcp::{McpServer, StdioEnd, serve_io_until};
use switchboard_registry::{Exposure, RuntimeTool, ToolRegistry};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader},
    sync::mpsc,
};
use tokio_util::sync::CancellationToken;

use crate::{
    common::{admin, bounded, registry, runtime_tool},
    http_support::initialize,
};

const TOOL: &str = "test_sleep";

/// Says it started, sleeps `ms`, then answers `{"slept": ms}`.
struct Sleep {
    started: mpsc::UnboundedSender<()>,
    ms: u64,
}

impl RuntimeTool for Sleep {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let _ = self.started.send(());
            tokio::time::sleep(Duration::from_millis(self.ms)).await;
            Ok(json!({ "slept": self.ms }))
        })
    }
}

async fn with_sleep(ms: u64) -> (ToolRegistry, mpsc::UnboundedReceiver<()>) {
    let registry = registry().await;
    let (started, calls) = mpsc::unbounded_channel();
    registry
        .register(vec![runtime_tool(
            TOOL,
            "sleeper",
            "core.users.read",
            Arc::new(Sleep { started, ms }),
            Exposure::Listed,
        )])
        .await
        .expect("registers");
    (registry, calls)
}

fn call(id: &str) -> String {
    format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": TOOL, "arguments": {}}})
    )
}

/// Serves `registry` until `stop`, with `drain`; sends `initialize`, `initialized` and one call
/// of the sleeping tool, stops once it started, then sends a second call. Returns the answers
/// written (by id) and how the server ended.
async fn stopped_mid_call(
    registry: ToolRegistry,
    mut calls: mpsc::UnboundedReceiver<()>,
    drain: Duration,
) -> (Vec<Value>, StdioEnd) {
    let (client, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let stop = CancellationToken::new();
    let serving = tokio::spawn(serve_io_until(
        McpServer::new(registry, admin()),
        server_read,
        server_write,
        stop.clone(),
        drain,
    ));
    let (client_read, mut writer) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let mut send = async |line: String| {
        bounded("writing", writer.write_all(line.as_bytes()))
            .await
            .expect("the server reads");
    };
    send(format!("{}\n", initialize())).await;
    send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n".to_owned()).await;
    send(call("first")).await;
    bounded("the call starting", calls.recv()).await;
    stop.cancel();
    tokio::time::sleep(Duration::from_millis(100)).await;
    send(call("second")).await;
    let mut answers = Vec::new();
    while let Some(line) = bounded("reading", lines.next_line())
        .await
        .expect("readable")
    {
        let message: Value = serde_json::from_str(&line).expect("JSON");
        if message.get("id").is_some() && message["id"] != json!(1) {
            answers.push(message);
        }
    }
    let ended = bounded("the server ending", serving)
        .await
        .expect("the task ends")
        .expect("the server ends cleanly");
    assert!(
        calls.try_recv().is_err(),
        "the call sent after the stop was never run"
    );
    (answers, ended)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_answers_the_call_in_flight_and_reads_nothing_more() {
    let (registry, calls) = with_sleep(300).await;
    let (answers, ended) = stopped_mid_call(registry, calls, Duration::from_secs(20)).await;
    assert_eq!(ended, StdioEnd::default(), "nothing was cut off");
    assert_eq!(answers.len(), 1, "{answers:#?}");
    assert_eq!(answers[0]["id"], json!("first"));
    assert_eq!(
        answers[0]["result"]["structuredContent"],
        json!({"slept": 300}),
        "{answers:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_outlasts_the_drain_is_cut_off_counted_and_audited_as_cancelled() {
    let (registry, calls) = with_sleep(60_000).await;
    let started = tokio::time::Instant::now();
    let (answers, ended) =
        stopped_mid_call(registry.clone(), calls, Duration::from_millis(200)).await;
    assert_eq!(ended.cut_off, 1);
    assert!(answers.is_empty(), "{answers:#?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the session ended soon after the deadline, not {:?} later",
        started.elapsed()
    );
    registry.audit().flush().await;
    let records = registry
        .audit()
        .query(&AuditQuery::all())
        .await
        .expect("the audit store answers");
    let outcomes: Vec<&str> = records
        .iter()
        .filter(|record| record.tool.as_ref() == TOOL)
        .map(|record| record.outcome.as_str())
        .collect();
    assert_eq!(outcomes, ["cancelled"], "{records:#?}");
}

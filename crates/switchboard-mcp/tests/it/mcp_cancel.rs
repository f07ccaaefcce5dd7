//! Cancellation seen from a real rmcp client: when the client cancels a `tools/call`
//! (`notifications/cancelled`), the server drops the running call, and the registry's one audit
//! record for it says `cancelled`. The tool used here is registered at run time and never
//! finishes on its own. Every wait is bounded by `common::LIMIT`.

use std::{borrow::Cow, sync::Arc, time::Duration};

use rmcp::{
    model::{CallToolRequest, CallToolRequestParams, ClientRequest},
    service::PeerRequestOptions,
};
use serde_json::{Value, json};
use switchboard_audit::AuditQuery;
use switchboard_core::{BoxFuture, Category, ToolContext, ToolDescriptor, ToolError, ToolOrigin};
use switchboard_registry::{RuntimeTool, RuntimeToolSpec};

use crate::common::{admin, bounded, connect_in_memory, disconnect, registry};
use tokio::sync::mpsc;

const TOOL: &str = "test_wait_forever";

/// Says it started, then waits until it is dropped.
struct WaitForever {
    started: mpsc::UnboundedSender<()>,
}

impl RuntimeTool for WaitForever {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let _ = self.started.send(());
            std::future::pending::<()>().await;
            Ok(json!({}))
        })
    }
}

fn wait_forever(started: mpsc::UnboundedSender<()>) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Borrowed(TOOL),
            title: None,
            domain: Cow::Borrowed("test"),
            category: Category::Read,
            permission: Cow::Borrowed("test.wait"),
            description: Cow::Borrowed("Never finishes; for cancellation tests."),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: Some(Duration::from_secs(600)),
            input_schema: Arc::new(json!({"type": "object", "properties": {}})),
            output_schema: None,
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "mcp-cancel-test".to_owned(),
            },
        },
        tool: Arc::new(WaitForever { started }),
        exposure: switchboard_registry::Exposure::Listed,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_dropped_and_audited_as_cancelled() {
    let registry = registry().await;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    bounded(
        "registering",
        registry.register(vec![wait_forever(started_tx)]),
    )
    .await
    .expect("the test tool registers");

    let (client, server) = connect_in_memory(&registry, admin()).await;

    let request =
        ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(TOOL)));
    let handle = bounded(
        "sending the call",
        client.send_cancellable_request(request, PeerRequestOptions::no_options()),
    )
    .await
    .expect("the request is sent");
    bounded("the tool starting", started.recv())
        .await
        .expect("the tool started");
    bounded("cancelling", handle.cancel(Some("test".to_owned())))
        .await
        .expect("the cancellation is sent");

    let outcome = bounded("the cancelled record", async {
        loop {
            let records = registry
                .audit()
                .query(&AuditQuery::all())
                .await
                .expect("the audit store answers");
            if let Some(record) = records.iter().find(|record| record.tool.as_ref() == TOOL) {
                assert_eq!(records.len(), 1, "one record per call: {records:#?}");
                return record.outcome.as_str();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(outcome, "cancelled");

    disconnect(client, server, registry).await;
}

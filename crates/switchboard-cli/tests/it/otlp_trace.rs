//! One trace across real processes: a front `switchboard serve --http` mounts a back one over
//! streamable HTTP, both export their call spans over OTLP/HTTP to the tests' receiver
//! ([`crate::otlp_receiver`]) under their own `OTEL_SERVICE_NAME`, and an rmcp client calls
//! through the front with a `traceparent` in each request's `_meta`:
//!
//! - a mounted tool: the front's call span is a child of the client's span, and the back's
//!   call span (in the other process) a child of the front's;
//! - an exported workflow tool (`roster_swap_shifts`): its call span is a child of the
//!   client's, and each of the run's step calls a child of the workflow's call span.

use std::{net::SocketAddr, process::Stdio};

use rmcp::{
    RoleClient, ServiceExt as _,
    model::{CallToolRequestParams, CallToolResult, RequestMetaObject},
    service::RunningService,
    transport::StreamableHttpClientTransport,
};
use serde_json::json;

use crate::{
    common::{ACME_ADMIN, StateDir, TempFile, bounded, mcp_address, stderr_lines, switchboard},
    otlp_receiver::{ReceivedSpan, Receiver},
};

/// The client's trace and span for the call of the mounted tool.
const MOUNTED_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const MOUNTED_CLIENT_SPAN: &str = "b7ad6b7169203331";
/// The client's trace and span for the call of the workflow tool.
const WORKFLOW_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const WORKFLOW_CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// `switchboard serve --http 127.0.0.1:0` as alice, an acme admin, in `state`, exporting its
/// call spans to `receiver` as `service`, with `extra` flags; killed when dropped. Answers the
/// process and its MCP endpoint's address.
async fn node(
    service: &str,
    receiver: &Receiver,
    state: &StateDir,
    extra: &[&str],
) -> (tokio::process::Child, SocketAddr) {
    let mut args = vec![
        "serve",
        "--http",
        "127.0.0.1:0",
        "--state-dir",
        state.path(),
    ];
    args.extend_from_slice(&ACME_ADMIN);
    args.extend_from_slice(extra);
    let mut child = switchboard(&args)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_SERVICE_NAME", service)
        // Batches go out every 100 ms rather than every 5 s: the test polls the receiver.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stderr = stderr_lines(&mut child);
    let address = loop {
        let line = bounded("the start-up line", stderr.next_line())
            .await
            .expect("stderr is readable")
            .unwrap_or_else(|| panic!("{service} exited before printing its address"));
        if let Some(address) = mcp_address(&line) {
            break address.parse().expect("a socket address");
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    (child, address)
}

async fn client(address: SocketAddr) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{address}/mcp"));
    bounded("an MCP client connects", ().serve(transport))
        .await
        .expect("the MCP handshake")
}

/// A `tools/call` of `tool` with `arguments`, in the client's span `span` of trace `trace`.
async fn call_in_trace(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    arguments: serde_json::Value,
    trace: &str,
    span: &str,
) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool);
    params.arguments = arguments.as_object().cloned();
    let meta: RequestMetaObject =
        serde_json::from_value(json!({ "traceparent": format!("00-{trace}-{span}-01") }))
            .expect("a _meta object");
    params.meta = Some(meta);
    let result = bounded(tool, client.call_tool(params))
        .await
        .expect("a tool result");
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
    result
}

/// The one span named `name` among `spans`, failing the test unless there is exactly one.
fn only<'a>(spans: &'a [ReceivedSpan], name: &str) -> &'a ReceivedSpan {
    let named: Vec<_> = spans.iter().filter(|span| span.name == name).collect();
    assert_eq!(named.len(), 1, "one `{name}` span: {spans:#?}");
    named[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_through_the_front_a_mounted_server_and_a_workflow_is_one_trace() {
    let receiver = Receiver::start().await;
    let (back_state, front_state) = (StateDir::new(), StateDir::new());
    let (_back, back_address) = node("switchboard-back", &receiver, &back_state, &[]).await;
    let mounts = TempFile::new(&format!(
        "[[server]]\nid = \"back\"\nurl = \"http://{back_address}/mcp\"\ncategory = \"read\"\n"
    ));
    let (_front, front_address) = node(
        "switchboard-front",
        &receiver,
        &front_state,
        // A person at the client: an execute workflow runs rather than being refused.
        &["--mounts", mounts.path(), "--initiator", "human"],
    )
    .await;
    let client = client(front_address).await;

    // (a) A mounted tool: the front calls the back's `core_get_current_user`.
    let mounted = call_in_trace(
        &client,
        "back_core_get_current_user",
        json!({}),
        MOUNTED_TRACE,
        MOUNTED_CLIENT_SPAN,
    )
    .await;
    assert!(format!("{mounted:?}").contains("alice"), "{mounted:?}");

    // (b) An exported workflow tool: its run swaps two shifts in four step calls.
    let swapped = call_in_trace(
        &client,
        "roster_swap_shifts",
        json!({"shift_a": "acme-2026-11-23-am", "shift_b": "acme-2026-11-23-pm"}),
        WORKFLOW_TRACE,
        WORKFLOW_CLIENT_SPAN,
    )
    .await;
    assert!(
        format!("{swapped:?}").contains("acme-2026-11-23-pm"),
        "{swapped:?}"
    );

    let spans = receiver
        .until("the spans of both calls, from both nodes", |spans| {
            let count = |name: &str| spans.iter().filter(|span| span.name == name).count();
            count("tools/call core_get_current_user") == 1
                && count("tools/call back_core_get_current_user") == 1
                && count("tools/call roster_swap_shifts") == 1
                && count("tools/call roster_get_shift") == 2
                && count("tools/call roster_assign_shift") == 2
        })
        .await;

    // Every span exported by either node belongs to one of the client's two traces.
    for span in &spans {
        assert!(
            span.trace_id == MOUNTED_TRACE || span.trace_id == WORKFLOW_TRACE,
            "a span outside the client's traces: {span:#?}"
        );
    }
    let services: std::collections::BTreeSet<_> =
        spans.iter().map(|span| span.service.as_str()).collect();
    assert_eq!(
        services,
        ["switchboard-back", "switchboard-front"].into(),
        "{spans:#?}"
    );

    // (a) client → front's call span → back's call span, in the other process.
    let front = only(&spans, "tools/call back_core_get_current_user");
    assert_eq!(front.service, "switchboard-front");
    assert_eq!(front.trace_id, MOUNTED_TRACE);
    assert_eq!(front.parent_span_id.as_deref(), Some(MOUNTED_CLIENT_SPAN));
    assert_eq!(
        front.attribute("gen_ai.tool.name"),
        "back_core_get_current_user"
    );
    assert_eq!(front.attribute("switchboard.outcome"), "ok");
    let back = only(&spans, "tools/call core_get_current_user");
    assert_eq!(back.service, "switchboard-back");
    assert_eq!(back.trace_id, MOUNTED_TRACE);
    assert_eq!(back.parent_span_id.as_deref(), Some(front.span_id.as_str()));
    // The back node took the front's `traceparent` as the call's correlation id.
    assert_eq!(
        back.attribute("switchboard.correlation_id"),
        format!("00-{MOUNTED_TRACE}-{}-01", front.span_id)
    );
    assert_eq!(back.attribute("switchboard.outcome"), "ok");

    // (b) client → the workflow tool's call span → each step's call span.
    let workflow = only(&spans, "tools/call roster_swap_shifts");
    assert_eq!(workflow.service, "switchboard-front");
    assert_eq!(workflow.trace_id, WORKFLOW_TRACE);
    assert_eq!(
        workflow.parent_span_id.as_deref(),
        Some(WORKFLOW_CLIENT_SPAN)
    );
    let steps: Vec<_> = spans
        .iter()
        .filter(|span| {
            span.name == "tools/call roster_get_shift"
                || span.name == "tools/call roster_assign_shift"
        })
        .collect();
    assert_eq!(steps.len(), 4, "{spans:#?}");
    for step in steps {
        assert_eq!(step.service, "switchboard-front", "{step:#?}");
        assert_eq!(step.trace_id, WORKFLOW_TRACE, "{step:#?}");
        assert_eq!(
            step.parent_span_id.as_deref(),
            Some(workflow.span_id.as_str()),
            "a step is a child of the workflow's call: {step:#?}"
        );
        assert_eq!(step.attribute("switchboard.outcome"), "ok", "{step:#?}");
    }

    bounded("closing the client", client.cancel())
        .await
        .expect("closes");
}

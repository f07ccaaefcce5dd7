//! The tracing layer: one `tracing` span per registry call, named and attributed after
//! OpenTelemetry's semantic conventions for MCP and GenAI tool calls where they say something,
//! and under `switchboard.*` for the rest.
//!
//! The span (target [`CALL_TARGET`], name [`CALL_SPAN`], level INFO) carries:
//!
//! | field | value |
//! |---|---|
//! | `otel.name` | `tools/call {tool}` (the MCP conventions' span name) |
//! | `mcp.method.name` | `tools/call` |
//! | `gen_ai.operation.name` | `execute_tool` |
//! | `gen_ai.tool.name` | the tool |
//! | `switchboard.domain`, `switchboard.category` | the tool's domain and category |
//! | `switchboard.org_id`, `switchboard.user_id`, `switchboard.initiator`, `switchboard.agent_type` | the verified caller (`agent_type` only when an agent calls) |
//! | `switchboard.correlation_id` | the call's correlation id (as its audit record has it) |
//! | `switchboard.outcome` | `ok`, or the stable error kind the call ended with |
//! | `error.type` | the error kind, on failure only |
//! | `otel.status_code` | `error` on failure (unset on success, as the conventions ask) |
//! | `switchboard.duration_ms` | how long the call took through the layers after this one and the tool, in milliseconds |
//!
//! **Parent.** Inside a span that already belongs to an OpenTelemetry trace (a workflow's first
//! drive, under the call that started the run; a tool that calls the registry), the call's span
//! is its child. Otherwise, when the caller's `trace_parent` is a valid W3C `traceparent` (a
//! workflow run keeps the one of the call that started it, for its steps when it is driven
//! again later), that span is its parent. Otherwise, when the call's correlation id is a valid
//! `traceparent` (the MCP server takes a request's `_meta.traceparent` as the correlation id),
//! that remote span is its parent, so the call joins the trace of whoever sent it. Otherwise
//! the span starts a trace.

use std::time::Instant;

use opentelemetry::trace::TraceContextExt as _;
use switchboard_core::BoxFuture;
use switchboard_registry::{CallLayer, Finished, LayerCall};
use tracing::{Instrument as _, Span, field::Empty};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::traceparent;

/// The target of the call spans: what a subscriber's filter names to keep them (and only
/// them) for export.
pub const CALL_TARGET: &str = "switchboard::call";

/// The `tracing` name of the call spans (their OpenTelemetry name is `tools/call {tool}`).
pub const CALL_SPAN: &str = "switchboard.call";

/// The tracing layer: one span per call, as the crate's documentation describes. Put it around every call with
/// `RegistryBuilder::layer(Arc::new(TracingLayer))`; first added, it is the outermost, so its
/// duration covers the other layers too.
#[derive(Debug, Default, Clone, Copy)]
pub struct TracingLayer;

impl CallLayer for TracingLayer {
    fn name(&self) -> &str {
        "tracing"
    }

    fn call<'a>(&'a self, call: LayerCall<'a>) -> BoxFuture<'a, Finished> {
        let span = open(&call);
        if span.is_disabled() {
            return Box::pin(call.run());
        }
        Box::pin(async move {
            let started = Instant::now();
            let finished = call.run().instrument(span.clone()).await;
            close(&span, &finished, started);
            finished
        })
    }
}

/// The call's span, with its parent chosen as the module documentation says.
fn open(call: &LayerCall<'_>) -> Span {
    let caller = call.caller();
    let tool = call.tool();
    let span = tracing::info_span!(
        target: CALL_TARGET,
        CALL_SPAN,
        otel.name = %format_args!("tools/call {}", tool.name),
        otel.kind = "internal",
        otel.status_code = Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool.name,
        switchboard.domain = %tool.domain,
        switchboard.category = tool.category.as_str(),
        switchboard.org_id = %caller.org_id,
        switchboard.user_id = %caller.user_id,
        switchboard.initiator = caller.initiator.as_str(),
        switchboard.agent_type = Empty,
        switchboard.correlation_id = %caller.correlation_id,
        switchboard.outcome = Empty,
        error.type = Empty,
        switchboard.duration_ms = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    if let Some(agent_type) = &caller.agent_type {
        span.record("switchboard.agent_type", agent_type.as_str());
    }
    let in_a_trace = Span::current().context().span().span_context().is_valid();
    let remote = || {
        caller
            .trace_parent
            .as_deref()
            .and_then(traceparent::context_of)
            .or_else(|| traceparent::context_of(caller.correlation_id.as_str()))
    };
    if !in_a_trace && let Some(remote) = remote() {
        // Fails only when no `tracing-opentelemetry` layer is installed: nothing to parent.
        let _ = span.set_parent(remote);
    }
    span
}

/// Records how the call ended on its span.
fn close(span: &Span, finished: &Finished, started: Instant) {
    let elapsed_ms = started.elapsed().as_secs_f64() * 1_000.0;
    span.record("switchboard.duration_ms", elapsed_ms);
    match finished.kind() {
        None => {
            span.record("switchboard.outcome", "ok");
        }
        Some(kind) => {
            span.record("switchboard.outcome", kind.as_str());
            span.record("error.type", kind.as_str());
            span.record("otel.status_code", "error");
        }
    }
}

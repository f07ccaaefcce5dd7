//! The tracing layer's spans, as an OpenTelemetry exporter receives them: one per call, with
//! the caller, the tool, the outcome and the duration; parented on the call's `traceparent`
//! correlation id, or on the OpenTelemetry span the call is made in.

use opentelemetry::{
    KeyValue,
    trace::{SpanKind, Status, TraceContextExt as _, TracerProvider as _},
};
use std::sync::{Arc, Mutex};

use opentelemetry_sdk::{
    error::OTelSdkResult,
    trace::{SdkTracerProvider, SpanData, SpanExporter},
};
use serde_json::json;
use switchboard_core::{BoxFuture, CallContext, Initiator};
use switchboard_registry::{CallLayer, Finished, LayerCall, ToolRegistry};
use switchboard_telemetry::{CALL_TARGET, TracingLayer, traceparent};
use tracing::Level;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::{Layer as _, filter::Targets, prelude::*};

/// The specification's example `traceparent` (W3C Trace Context, section 3.2.2.5).
const REMOTE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Refuses every call.
struct Closed;

impl CallLayer for Closed {
    fn name(&self) -> &str {
        "closed"
    }

    fn call<'a>(&'a self, call: LayerCall<'a>) -> BoxFuture<'a, Finished> {
        Box::pin(async move { call.refuse("closed", "closed for the test") })
    }
}

/// The spans a tracer provider exported, kept in memory.
#[derive(Debug, Clone, Default)]
pub(crate) struct Exported(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Exported {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().expect("not poisoned").extend(batch);
        Ok(())
    }
}

/// A tracer provider that keeps what it exports in memory, and a subscriber that exports the
/// call spans through it, installed for the current thread while the guard lives.
pub(crate) fn exporting() -> (
    Exported,
    SdkTracerProvider,
    tracing::subscriber::DefaultGuard,
) {
    let exporter = Exported::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry().with(
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("test"))
            .with_filter(
                Targets::new()
                    .with_target(CALL_TARGET, Level::INFO)
                    .with_target("test", Level::INFO),
            ),
    );
    let guard = tracing::subscriber::set_default(subscriber);
    (exporter, provider, guard)
}

/// acme's staff member sam, as an agent, in a call of `correlation`.
pub(crate) fn sam(correlation: &str) -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("sam")
        .role("staff")
        .session("spans")
        .correlation(correlation)
        .initiator(Initiator::Agent)
        .agent_type("planner")
        .build()
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a opentelemetry::Value> {
    span.attributes
        .iter()
        .find(|KeyValue { key: name, .. }| name.as_str() == key)
        .map(|KeyValue { value, .. }| value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|value| value.as_str().into_owned())
}

pub(crate) fn finished(exporter: &Exported) -> Vec<SpanData> {
    exporter.0.lock().expect("not poisoned").clone()
}

#[tokio::test]
async fn a_call_has_one_span_with_its_caller_tool_outcome_and_duration() {
    let (exporter, _provider, _guard) = exporting();
    let registry = ToolRegistry::builder()
        .layer(TracingLayer)
        .start()
        .await
        .expect("the registry starts");
    registry
        .invoke(
            "core_get_current_user",
            json!({}),
            &sam("mcp-0191e5b4-7c4e-7a1b-9f3e-2b1c0d9e8f7a"),
        )
        .await
        .expect("sam may read the directory");

    let spans = finished(&exporter);
    assert_eq!(spans.len(), 1, "{spans:#?}");
    let span = &spans[0];
    assert_eq!(span.name, "tools/call core_get_current_user");
    assert_eq!(span.span_kind, SpanKind::Internal);
    assert_eq!(span.status, Status::Unset);
    for (key, expected) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", "core_get_current_user"),
        ("switchboard.domain", "core"),
        ("switchboard.category", "read"),
        ("switchboard.org_id", "acme"),
        ("switchboard.user_id", "sam"),
        ("switchboard.initiator", "agent"),
        ("switchboard.agent_type", "planner"),
        (
            "switchboard.correlation_id",
            "mcp-0191e5b4-7c4e-7a1b-9f3e-2b1c0d9e8f7a",
        ),
        ("switchboard.outcome", "ok"),
    ] {
        assert_eq!(text(span, key).as_deref(), Some(expected), "{key}");
    }
    assert_eq!(text(span, "error.type"), None);
    let Some(opentelemetry::Value::F64(duration_ms)) = attribute(span, "switchboard.duration_ms")
    else {
        panic!("no duration: {span:#?}");
    };
    let lasted = span
        .end_time
        .duration_since(span.start_time)
        .expect("ends after it starts");
    assert!(
        *duration_ms > 0.0 && *duration_ms <= lasted.as_secs_f64() * 1_000.0,
        "{duration_ms} ms of {lasted:?}"
    );
    // Not a `traceparent`: the call starts a trace.
    assert_eq!(
        span.parent_span_id,
        opentelemetry::trace::SpanId::INVALID,
        "{span:#?}"
    );
}

#[tokio::test]
async fn a_refused_call_says_its_kind_and_fails_its_span() {
    let (exporter, _provider, _guard) = exporting();
    let registry = ToolRegistry::builder()
        .layer(TracingLayer)
        .layer(Closed)
        .start()
        .await
        .expect("the registry starts");
    let refused = registry
        .invoke("core_get_current_user", json!({}), &sam("refused"))
        .await
        .expect_err("the layer refuses");
    assert_eq!(refused.kind().as_str(), "layer_refused");

    let spans = finished(&exporter);
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(
        text(&spans[0], "switchboard.outcome").as_deref(),
        Some("layer_refused")
    );
    assert_eq!(
        text(&spans[0], "error.type").as_deref(),
        Some("layer_refused")
    );
    assert!(
        matches!(spans[0].status, Status::Error { .. }),
        "{:?}",
        spans[0].status
    );
}

#[tokio::test]
async fn a_traceparent_correlation_id_is_the_parent() {
    let (exporter, _provider, _guard) = exporting();
    let registry = ToolRegistry::builder()
        .layer(TracingLayer)
        .start()
        .await
        .expect("the registry starts");
    registry
        .invoke("core_get_current_user", json!({}), &sam(REMOTE))
        .await
        .expect("sam may read the directory");

    let spans = finished(&exporter);
    assert_eq!(spans.len(), 1, "{spans:#?}");
    let span = &spans[0].span_context;
    assert_eq!(
        span.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(spans[0].parent_span_id.to_string(), "00f067aa0ba902b7");
    assert!(spans[0].parent_span_is_remote);
}

#[tokio::test]
async fn inside_a_traced_span_the_call_is_its_child() {
    let (exporter, _provider, _guard) = exporting();
    let registry = ToolRegistry::builder()
        .layer(TracingLayer)
        .start()
        .await
        .expect("the registry starts");
    let outer = tracing::info_span!(target: "test", "outer");
    let outer_context = outer.context();
    let outer_span = outer_context.span();
    let outer_id = outer_span.span_context().span_id();
    let in_outer = traceparent::of_context(&outer_context).expect("an OpenTelemetry span");
    {
        let _entered = outer.enter();
        assert_eq!(traceparent::current().as_deref(), Some(in_outer.as_str()));
        // The correlation id names another trace: the span the call is made in wins.
        registry
            .invoke("core_get_current_user", json!({}), &sam(REMOTE))
            .await
            .expect("sam may read the directory");
    }
    drop(outer);

    let spans = finished(&exporter);
    let call = spans
        .iter()
        .find(|span| span.name == "tools/call core_get_current_user")
        .expect("the call's span");
    assert_eq!(call.parent_span_id, outer_id);
    assert_eq!(
        call.span_context.trace_id(),
        outer_span.span_context().trace_id()
    );
}

#[tokio::test]
async fn without_an_opentelemetry_layer_nothing_is_traced() {
    let registry = ToolRegistry::builder()
        .layer(TracingLayer)
        .start()
        .await
        .expect("the registry starts");
    registry
        .invoke("core_get_current_user", json!({}), &sam(REMOTE))
        .await
        .expect("the layer changes nothing");
    assert_eq!(traceparent::current(), None);
}

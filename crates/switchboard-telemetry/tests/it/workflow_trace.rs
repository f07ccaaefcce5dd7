//! A workflow run keeps the trace it was started in: the engine stores the starting span's
//! `traceparent` as the run caller's `trace_parent`, and a later drive (here by another
//! engine on the same store, after the first stopped while the run waited) makes its steps'
//! call spans children of that span, outside any span of its own.

use std::{sync::Arc, time::Duration};

use opentelemetry::trace::TraceContextExt as _;
use serde_json::json;
use switchboard_registry::ToolRegistry;
use switchboard_telemetry::{TracingLayer, traceparent};
use switchboard_workflows::{MemoryRunStore, RunState, RunStore};
use switchboard_workflows_engine::{Engine, EngineOptions};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::spans::{exporting, finished, sam};

/// The longest the test waits for a run to reach a state.
const LIMIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_run_driven_again_later_keeps_the_trace_of_the_span_it_started_in() {
    let (exporter, _provider, _guard) = exporting();
    let registry = ToolRegistry::builder()
        .layer(TracingLayer)
        .start()
        .await
        .expect("the registry starts");
    let document = json!({
        "workflow": "wait_then_read",
        "nodes": [
            { "id": "pause", "wait": "1s" },
            { "id": "me", "tool": "core_get_current_user", "params": {} },
        ],
    });
    let definition = Arc::new(
        switchboard_workflows::validate(&document, &registry.list()).expect("a valid workflow"),
    );
    let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
    let engine = |definition: Arc<switchboard_workflows::Definition>| {
        Engine::new(
            registry.clone(),
            Arc::clone(&store),
            EngineOptions {
                loader: Some(Arc::new(move |_| Ok(Arc::clone(&definition)))),
                current_trace: Some(traceparent::current),
                ..EngineOptions::default()
            },
        )
    };
    // Not a `traceparent`: only the stored trace parent can put the steps in the trace.
    let caller = sam("mcp-0191e5b4-7c4e-7a1b-9f3e-2b1c0d9e8f7a");

    // The run starts in a traced span (as an exported workflow's call span) and pauses.
    let request = tracing::info_span!(target: "test", "request");
    let started_in = traceparent::of_context(&request.context()).expect("a traced span");
    let request_context = request.context();
    let request_span = request_context.span();
    let request_span = request_span.span_context();
    let first = engine(Arc::clone(&definition));
    let run = first
        .start(Arc::clone(&definition), json!({}), &caller)
        .instrument(request.clone())
        .await
        .expect("the run starts");
    tokio::time::timeout(LIMIT, async {
        while !matches!(
            first.run(run, &caller).expect("readable").state,
            RunState::Paused { .. }
        ) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the run pauses");
    first.shutdown();
    drop(request);
    let stored = store.run(run).expect("readable").expect("stored");
    assert_eq!(
        stored.caller.trace_parent.as_deref(),
        Some(started_in.as_str())
    );
    let before = finished(&exporter);
    assert!(
        before.iter().all(|span| span.name == "request"),
        "no call yet: {before:#?}"
    );

    // Another engine drives it on once its timer is due, in no span of its own.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = engine(definition);
    second.recover().await.expect("recovers");
    let outcome = tokio::time::timeout(LIMIT, second.wait(run, &caller))
        .await
        .expect("the run ends")
        .expect("readable");
    assert_eq!(outcome.state, RunState::Completed, "{outcome:?}");
    second.shutdown();

    let spans = finished(&exporter);
    let step = spans
        .iter()
        .find(|span| span.name == "tools/call core_get_current_user")
        .unwrap_or_else(|| panic!("the step's span: {spans:#?}"));
    assert_eq!(
        step.span_context.trace_id(),
        request_span.trace_id(),
        "{step:#?}"
    );
    assert_eq!(step.parent_span_id, request_span.span_id(), "{step:#?}");
}

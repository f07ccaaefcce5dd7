//! A mounted tool's category, descriptor and results, from rmcp values built here.

use std::collections::BTreeMap;

use rmcp::model::{ContentBlock, ToolAnnotations};
use serde_json::json;

use super::*;
use crate::config::{ServerConfig, ToolOverride, Transport};

fn tool(annotations: Option<ToolAnnotations>) -> Tool {
    let schema = json!({"type": "object", "properties": {"message": {"type": "string"}}});
    let mut tool = Tool::new(
        "echo",
        "Echoes the message.",
        Arc::new(schema.as_object().cloned().unwrap_or_default()),
    );
    tool.annotations = annotations;
    tool
}

fn hints(read_only: Option<bool>, destructive: Option<bool>) -> Option<ToolAnnotations> {
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = read_only;
    annotations.destructive_hint = destructive;
    Some(annotations)
}

fn server(category: Option<Category>, tools: BTreeMap<String, ToolOverride>) -> ServerConfig {
    ServerConfig {
        id: "everything".into(),
        transport: Transport::Stdio {
            command: "x".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
        start_timeout: Duration::from_secs(1),
        call_timeout: Duration::from_secs(2),
        category,
        permission: "mounts.everything".into(),
        lazy: false,
        description: None,
        tools,
        restart: crate::actor::RestartPolicy::default(),
        verify: crate::verifier::VerifyPolicy::default(),
        log_level: None,
    }
}

#[test]
fn annotations_decide_only_when_nothing_is_configured() {
    assert_eq!(category_of(None, &tool(None)), Category::Execute);
    assert_eq!(
        category_of(None, &tool(hints(Some(true), None))),
        Category::Read
    );
    assert_eq!(
        category_of(None, &tool(hints(None, Some(true)))),
        Category::Restricted
    );
}

#[test]
fn annotations_may_tighten_the_configuration_never_loosen_it() {
    let read_only = tool(hints(Some(true), None));
    assert_eq!(
        category_of(Some(Category::Execute), &read_only),
        Category::Execute
    );
    let destructive = tool(hints(None, Some(true)));
    assert_eq!(
        category_of(Some(Category::Read), &destructive),
        Category::Restricted
    );
    // A server saying "not destructive" cannot undo a configured restricted.
    let harmless = tool(hints(Some(true), Some(false)));
    assert_eq!(
        category_of(Some(Category::Restricted), &harmless),
        Category::Restricted
    );
}

#[test]
fn the_descriptor_prefixes_the_name_and_takes_overrides() {
    let overrides = BTreeMap::from([(
        "echo".to_owned(),
        ToolOverride {
            category: Some(Category::Read),
            permission: Some("mounts.everything.echo".into()),
        },
    )]);
    let described = descriptor(&server(Some(Category::Execute), overrides), &tool(None));
    assert_eq!(described.name, "everything_echo");
    assert_eq!(described.domain, "everything");
    assert_eq!(described.category, Category::Read);
    assert_eq!(described.permission, "mounts.everything.echo");
    assert_eq!(described.timeout, Some(Duration::from_secs(2)));
    assert_eq!(
        described.input_schema["properties"]["message"]["type"],
        "string"
    );
    assert!(
        described.returns_content(),
        "no output schema: content blocks"
    );

    let plain = descriptor(&server(None, BTreeMap::new()), &tool(None));
    assert_eq!(plain.permission, "mounts.everything");
    assert_eq!(plain.category, Category::Execute);
}

#[test]
fn content_passes_through_and_is_error_becomes_a_tool_error() {
    let result = CallToolResult::success(vec![ContentBlock::text("hello")]);
    let output = output_of("s", "echo", result, false).expect("an output");
    assert_eq!(
        output,
        json!({"content": [{"type": "text", "text": "hello"}]})
    );

    let failed = CallToolResult::error(vec![ContentBlock::text("no such file")]);
    let error = output_of("s", "read", failed, false).expect_err("an error");
    assert_eq!(error.code(), MOUNTED_TOOL_ERROR);
    assert_eq!(error.message(), "no such file");
}

#[test]
fn a_structured_tool_answers_its_structured_content() {
    let result = CallToolResult::structured(json!({"sum": 3}));
    assert_eq!(
        output_of("s", "add", result, true).expect("an output"),
        json!({"sum": 3})
    );
    let unstructured = CallToolResult::success(vec![ContentBlock::text("3")]);
    let error = output_of("s", "add", unstructured, true).expect_err("no structuredContent");
    assert!(
        error.message().contains("no structuredContent"),
        "{}",
        error.message()
    );
}

/// An in-memory MCP server with one tool, `work`: it reports progress 1 and 2 of 2 on the
/// request's token, then waits until it is cancelled (noting that it was) or answers after
/// `answer_after`.
mod in_memory {
    use std::sync::Arc;

    use rmcp::{
        ErrorData, RoleServer, ServerHandler, ServiceExt as _,
        model::{CallToolResponse, ProgressNotificationParam, ServerCapabilities, ServerConfig},
        service::RequestContext,
    };
    use tokio::sync::Notify;

    use super::*;

    #[derive(Clone)]
    pub(super) struct Worker {
        pub(super) cancelled: Arc<Notify>,
        pub(super) answer_after: Duration,
        /// The `_meta.traceparent` of each call, in order.
        pub(super) traceparents: Arc<std::sync::Mutex<Vec<Option<String>>>>,
    }

    impl ServerHandler for Worker {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn call_tool(
            &self,
            _request: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            self.traceparents
                .lock()
                .expect("not poisoned")
                .push(context.meta.get_traceparent().map(str::to_owned));
            if let Some(token) = context.meta.get_progress_token() {
                for done in [1.0, 2.0] {
                    let report =
                        ProgressNotificationParam::new(token.clone(), done).with_total(2.0);
                    let _ = context.peer.notify_progress(report).await;
                }
            }
            tokio::select! {
                () = context.ct.cancelled() => {
                    self.cancelled.notify_one();
                    Err(ErrorData::internal_error("cancelled", None))
                }
                () = tokio::time::sleep(self.answer_after) => {
                    Ok(CallToolResult::success(vec![ContentBlock::text("done")]).into())
                }
            }
        }
    }

    /// A client peer connected to `worker`, and the routes its listener delivers to.
    pub(super) async fn connect(
        worker: Worker,
    ) -> (
        rmcp::service::RunningService<rmcp::RoleClient, crate::connection::Listener>,
        CallRoutes,
    ) {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(server) = worker.serve(server_io).await {
                let _ = server.waiting().await;
            }
        });
        let routes = CallRoutes::default();
        let (listener, _changes) = crate::connection::Listener::for_tests();
        let (read, write) = tokio::io::split(client_io);
        let transport = crate::connection::Routing::new(
            rmcp::transport::async_rw::AsyncRwTransport::new_client(read, write),
            "worker",
            routes.clone(),
        );
        let client = listener
            .serve(transport)
            .await
            .expect("the client connects");
        (client, routes)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_a_call_reaches_its_caller() {
    let worker = in_memory::Worker {
        cancelled: std::sync::Arc::default(),
        answer_after: Duration::from_millis(200),
        traceparents: std::sync::Arc::default(),
    };
    let (client, routes) = in_memory::connect(worker).await;
    let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&reports);
    let notifier = ProgressNotifier::new(move |report: switchboard_core::Progress<'_>| {
        seen.lock()
            .expect("not poisoned")
            .push((report.done, report.total));
    });
    let answer = call_once(
        client.peer(),
        CallToolRequestParams::new("work"),
        &routes,
        Some(notifier),
        OrgId::from("acme"),
    )
    .await
    .expect("an answer");
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    assert_eq!(
        answer.content[0].as_text().map(|text| text.text.as_str()),
        Some("done")
    );
    // Notifications and the answer travel on one stream, in order: both reports came first.
    assert_eq!(
        *reports.lock().expect("not poisoned"),
        [(1.0, Some(2.0)), (2.0, Some(2.0))]
    );
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dropped_before_its_answer_is_cancelled_at_the_server() {
    let cancelled = std::sync::Arc::new(tokio::sync::Notify::new());
    let worker = in_memory::Worker {
        cancelled: std::sync::Arc::clone(&cancelled),
        answer_after: Duration::from_secs(60),
        traceparents: std::sync::Arc::default(),
    };
    let (client, routes) = in_memory::connect(worker).await;
    let peer = client.peer().clone();
    let call = tokio::spawn(async move {
        call_once(
            &peer,
            CallToolRequestParams::new("work"),
            &routes,
            None,
            OrgId::from("acme"),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    call.abort();
    let told = tokio::time::timeout(Duration::from_secs(10), cancelled.notified()).await;
    assert!(
        told.is_ok(),
        "the server was not told the call was cancelled"
    );
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_call_in_a_traced_span_carries_its_traceparent() {
    use opentelemetry::trace::TracerProvider as _;
    use tracing::Instrument as _;
    use tracing_subscriber::prelude::*;

    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let _default = tracing::subscriber::set_default(subscriber);
    let worker = in_memory::Worker {
        cancelled: std::sync::Arc::default(),
        answer_after: Duration::ZERO,
        traceparents: std::sync::Arc::default(),
    };
    let traceparents = std::sync::Arc::clone(&worker.traceparents);
    let (client, routes) = in_memory::connect(worker).await;
    let send = || {
        call_once(
            client.peer(),
            CallToolRequestParams::new("work"),
            &routes,
            None,
            OrgId::from("acme"),
        )
    };
    send().await.expect("an answer");
    let span = tracing::info_span!("the caller's call");
    let expected = {
        let _entered = span.enter();
        switchboard_telemetry::traceparent::current().expect("a traced span")
    };
    send().instrument(span).await.expect("an answer");
    assert_eq!(
        *traceparents.lock().expect("not poisoned"),
        [None, Some(expected)]
    );
    let _ = client.cancel().await;
}

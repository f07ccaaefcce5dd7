//! Tools that run as tasks (the tasks extension, SEP-2663), seen from real rmcp clients on both
//! protocol revisions: the conformance domain's `slow_compute` is a task for a client that
//! declared the extension and an ordinary call for one that did not; a task is polled to its
//! result, cancelled, or waits for the answers to its questions (`confirm_delete`,
//! `multi_input`), which `tasks/update` brings one at a time; a tool's error completes its task
//! with an `isError` result and a panic fails it; a tool that runs only as a task is refused
//! (`-32021`) to a client without the extension, and the refusal is audited; over HTTP, another
//! identity is told a task does not exist.

use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
        ClientConfig, ErrorCode, GetTaskParams, GetTaskResult, Implementation, InputResponses,
        ProtocolVersion, TaskPayload, TaskStatus, UpdateTaskParams,
    },
    service::{RunningService, ServiceError},
};
use serde_json::{Value, json};
use switchboard_mcp::McpServer;
use switchboard_registry::ToolRegistry;

use crate::{
    approval_support::records_of,
    common::{Server, admin, bounded, close, registry},
};

/// A client speaking `version` that declares elicitation, and the tasks extension if `tasks`.
#[derive(Debug, Clone)]
pub(crate) struct Tasker {
    version: ProtocolVersion,
    tasks: bool,
}

impl ClientHandler for Tasker {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = if self.tasks {
            ClientCapabilities::builder().enable_tasks().build()
        } else {
            ClientCapabilities::default()
        };
        capabilities.elicitation = ClientCapabilities::builder()
            .enable_elicitation()
            .build()
            .elicitation;
        ClientConfig::new(capabilities, Implementation::new("tasker", "1.0"))
            .with_protocol_version(self.version.clone())
    }
}

pub(crate) type Client = RunningService<RoleClient, Tasker>;

pub(crate) const VERSIONS: [ProtocolVersion; 2] =
    [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28];

/// A client of `version`, declaring the tasks extension when `tasks`, connected in memory to a
/// server acting as the admin: 2026-07-28 discovers, 2025 shakes hands.
pub(crate) async fn connect(
    registry: &ToolRegistry,
    version: &ProtocolVersion,
    tasks: bool,
) -> (Client, Server) {
    let tasker = Tasker {
        version: version.clone(),
        tasks,
    };
    let server = McpServer::new(registry.clone(), admin());
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    if tasker.version >= ProtocolVersion::V_2026_07_28 {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![tasker.version.clone()],
        };
        let server = tokio::spawn(server.serve(server_io));
        let client = bounded(
            "server/discover",
            tasker.serve_with_lifecycle(client_io, lifecycle),
        )
        .await
        .expect("the client connects");
        bounded("tools/list", client.list_all_tools())
            .await
            .expect("tools/list");
        let server = bounded("the server starting", server)
            .await
            .expect("the server task")
            .expect("the server accepts");
        (client, server)
    } else {
        let handshakes =
            Box::pin(async { tokio::join!(server.serve(server_io), tasker.serve(client_io)) });
        let (server, client) = bounded("the handshake", handshakes).await;
        (
            client.expect("the client connects"),
            server.expect("the server accepts"),
        )
    }
}

pub(crate) fn request(tool: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default())
}

async fn call(
    client: &RunningService<RoleClient, impl ClientHandler>,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResponse, ServiceError> {
    call_with(client, request(tool, arguments)).await
}

/// One `tools/call` of `params`, answered as the server answers it (a round's questions are
/// not answered by the client).
pub(crate) async fn call_with(
    client: &RunningService<RoleClient, impl ClientHandler>,
    params: CallToolRequestParams,
) -> Result<CallToolResponse, ServiceError> {
    bounded("a tools/call", client.call_tool_once(params)).await
}

/// Starts `tool` as a task; fails the test if the server answers otherwise.
pub(crate) async fn start_task(
    client: &RunningService<RoleClient, impl ClientHandler>,
    tool: &str,
    arguments: Value,
) -> String {
    match call(client, tool, arguments).await.expect("an answer") {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working, "{created:?}");
            created.task.task_id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

pub(crate) async fn get(
    client: &RunningService<RoleClient, impl ClientHandler>,
    task_id: &str,
) -> GetTaskResult {
    bounded("tasks/get", client.get_task(GetTaskParams::new(task_id)))
        .await
        .expect("tasks/get")
}

/// Polls `tasks/get` until the task's status is one of `statuses`.
pub(crate) async fn reaches(
    client: &RunningService<RoleClient, impl ClientHandler>,
    task_id: &str,
    statuses: &[TaskStatus],
) -> GetTaskResult {
    bounded("the task's status", async {
        loop {
            let task = get(client, task_id).await;
            if statuses.contains(&task.task.task.status) {
                return task;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
}

/// Polls `tasks/get` until the task has ended, completed or failed.
pub(crate) async fn ended(
    client: &RunningService<RoleClient, impl ClientHandler>,
    task_id: &str,
) -> GetTaskResult {
    reaches(
        client,
        task_id,
        &[TaskStatus::Completed, TaskStatus::Failed],
    )
    .await
}

/// The first text of a completed task's result, and whether it is an error.
pub(crate) fn completed_text(task: &GetTaskResult) -> (String, bool) {
    match &task.task.payload {
        TaskPayload::Completed { result } => (
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            result.get("isError") == Some(&json!(true)),
        ),
        other => panic!("expected a completed task, got {other:?}"),
    }
}

/// The keys of a task's pending questions.
pub(crate) fn pending_keys(task: &GetTaskResult) -> Vec<String> {
    match &task.task.payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().cloned().collect(),
        other => panic!("expected input_required, got {other:?}"),
    }
}

pub(crate) fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

pub(crate) async fn update(client: &Client, task_id: &str, key: &str, answer: Value) {
    let mut responses = InputResponses::new();
    responses.insert(key.to_owned(), answer);
    bounded(
        "tasks/update",
        client.update_task(UpdateTaskParams::new(task_id, responses)),
    )
    .await
    .expect("tasks/update is acknowledged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_tool_is_a_task_for_a_tasks_client_and_an_ordinary_call_for_another() {
    let registry = registry().await;
    for version in VERSIONS {
        let (client, server) = connect(&registry, &version, true).await;
        let task_id = start_task(
            &client,
            "slow_compute",
            json!({"seconds": 0.3, "label": "x"}),
        )
        .await;
        let task = reaches(&client, &task_id, &[TaskStatus::Completed]).await;
        assert_eq!(
            completed_text(&task),
            ("computed x in 0.3 s".to_owned(), false),
            "{version:?}"
        );
        // A tool that never runs as a task answers at once, even to a tasks client.
        match call(&client, "greet", json!({"name": "Ada"}))
            .await
            .expect("an answer")
        {
            CallToolResponse::Complete(result) => {
                assert_eq!(
                    result.content[0].as_text().map(|t| t.text.as_str()),
                    Some("Hello, Ada!")
                );
            }
            other => panic!("expected a result, got {other:?}"),
        }
        close(client, server).await;

        let (client, server) = connect(&registry, &version, false).await;
        match call(&client, "slow_compute", json!({"seconds": 0, "label": "y"}))
            .await
            .expect("an answer")
        {
            CallToolResponse::Complete(result) => assert_eq!(
                result.content[0].as_text().map(|t| t.text.as_str()),
                Some("computed y in 0 s"),
                "{version:?}"
            ),
            other => panic!("expected a result without the extension, got {other:?}"),
        }
        close(client, server).await;
    }
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waits_for_its_answers_which_tasks_update_brings_one_at_a_time() {
    let registry = registry().await;
    for version in VERSIONS {
        let (client, server) = connect(&registry, &version, true).await;
        let task_id = start_task(&client, "confirm_delete", json!({"filename": "a.txt"})).await;
        let task = reaches(&client, &task_id, &[TaskStatus::InputRequired]).await;
        let keys = pending_keys(&task);
        assert_eq!(keys, ["confirm"], "{version:?}");
        // An answer to a question never asked changes nothing.
        update(&client, &task_id, "unknown-key", accept(json!({}))).await;
        assert_eq!(pending_keys(&get(&client, &task_id).await), ["confirm"]);
        update(
            &client,
            &task_id,
            "confirm",
            accept(json!({"confirm": true})),
        )
        .await;
        let task = reaches(&client, &task_id, &[TaskStatus::Completed]).await;
        assert_eq!(
            completed_text(&task),
            ("a.txt deleted".to_owned(), false),
            "{version:?}"
        );

        let task_id = start_task(&client, "multi_input", json!({})).await;
        // Boxed: polling inside the bounded wait is a large future (clippy::large_futures).
        let task = bounded(
            "both questions",
            Box::pin(async {
                loop {
                    let task = reaches(&client, &task_id, &[TaskStatus::InputRequired]).await;
                    if pending_keys(&task).len() == 2 {
                        return task;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
            }),
        )
        .await;
        assert_eq!(pending_keys(&task), ["first", "second"]);
        update(&client, &task_id, "first", accept(json!({"name": "Ada"}))).await;
        let task = get(&client, &task_id).await;
        assert_eq!(task.task.task.status, TaskStatus::InputRequired, "{task:?}");
        assert_eq!(pending_keys(&task), ["second"]);
        update(
            &client,
            &task_id,
            "second",
            accept(json!({"name": "Grace"})),
        )
        .await;
        let task = reaches(&client, &task_id, &[TaskStatus::Completed]).await;
        assert_eq!(
            completed_text(&task),
            ("first=Ada; second=Grace".to_owned(), false)
        );
        close(client, server).await;
    }
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_completes_its_task_a_panic_fails_it_and_a_cancel_cancels_it() {
    let registry = registry().await;
    for version in VERSIONS {
        let (client, server) = connect(&registry, &version, true).await;
        let task_id = start_task(&client, "failing_job", json!({})).await;
        let task = ended(&client, &task_id).await;
        let (text, is_error) = completed_text(&task);
        assert!(is_error, "{task:?}");
        assert!(text.contains("the job failed"), "{text}");

        let task_id = start_task(&client, "protocol_error_job", json!({})).await;
        let task = ended(&client, &task_id).await;
        match &task.task.payload {
            TaskPayload::Failed { error } => {
                assert_eq!(
                    error["code"],
                    json!(ErrorCode::INTERNAL_ERROR.0),
                    "{error:?}"
                );
                assert!(
                    error["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("panicked")),
                    "{error:?}"
                );
            }
            other => panic!("expected a failed task, got {other:?} ({version:?})"),
        }

        let task_id = start_task(&client, "slow_compute", json!({"seconds": 60})).await;
        bounded(
            "tasks/cancel",
            client.cancel_task(CancelTaskParams::new(&task_id)),
        )
        .await
        .expect("tasks/cancel");
        let task = reaches(
            &client,
            &task_id,
            &[TaskStatus::Cancelled, TaskStatus::Completed],
        )
        .await;
        assert_eq!(task.task.task.status, TaskStatus::Cancelled, "{task:?}");
        // Cancelling an ended task is acknowledged all the same.
        bounded(
            "tasks/cancel",
            client.cancel_task(CancelTaskParams::new(&task_id)),
        )
        .await
        .expect("tasks/cancel of an ended task");
        close(client, server).await;
    }
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_runs_only_as_a_task_is_refused_to_a_client_without_tasks_and_audited() {
    let registry = registry().await;
    for version in VERSIONS {
        let before = records_of(&registry, "failing_job").await.len();
        let (client, server) = connect(&registry, &version, false).await;
        match call(&client, "failing_job", json!({})).await {
            Err(ServiceError::McpError(error)) => {
                assert_eq!(
                    error.code,
                    ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                    "{error:?}"
                );
                let data = error.data.expect("the capability it needs");
                assert!(
                    data["requiredCapabilities"]["extensions"]
                        .get("io.modelcontextprotocol/tasks")
                        .is_some(),
                    "{data}"
                );
            }
            other => panic!("expected -32021, got {other:?} ({version:?})"),
        }
        assert_eq!(records_of(&registry, "failing_job").await.len(), before + 1);
        close(client, server).await;
    }
    registry.shutdown().await;
}

/// A tasks client of the HTTP `server` sending `token`.
async fn task_client_with(
    server: &switchboard_mcp::HttpServer,
    token: &str,
) -> RunningService<RoleClient, Tasker> {
    use rmcp::transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    };
    let config = StreamableHttpClientTransportConfig::with_uri(server.url()).auth_header(token);
    let transport = StreamableHttpClientTransport::from_config(config);
    let tasker = Tasker {
        version: ProtocolVersion::V_2025_11_25,
        tasks: true,
    };
    bounded("connecting", tasker.serve(transport))
        .await
        .expect("the client connects")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_and_its_questions_belong_to_the_identity_that_started_it() {
    use crate::http_support::{ALICE_TOKEN, GINA_TOKEN, SAM_TOKEN, start, token_config};

    let registry = registry().await;
    let server = start(&registry, token_config()).await;
    let alice = task_client_with(&server, ALICE_TOKEN).await;
    let task_id = start_task(&alice, "confirm_delete", json!({"filename": "b.txt"})).await;
    reaches(&alice, &task_id, &[TaskStatus::InputRequired]).await;
    for token in [SAM_TOKEN, GINA_TOKEN] {
        let other = task_client_with(&server, token).await;
        let never_issued = other
            .get_task(GetTaskParams::new("no-such-task"))
            .await
            .expect_err("an unknown task")
            .to_string();
        let seen = other
            .get_task(GetTaskParams::new(&task_id))
            .await
            .expect_err("someone else's task is unknown")
            .to_string();
        assert_eq!(
            seen.replace(&task_id, "ID"),
            never_issued.replace("no-such-task", "ID")
        );
        let mut responses = InputResponses::new();
        responses.insert("confirm".to_owned(), accept(json!({"confirm": true})));
        other
            .update_task(UpdateTaskParams::new(&task_id, responses))
            .await
            .expect_err("someone else's task cannot be answered");
        other
            .cancel_task(CancelTaskParams::new(&task_id))
            .await
            .expect_err("someone else's task cannot be cancelled");
        other.cancel().await.expect("the client closes");
    }
    let task = get(&alice, &task_id).await;
    assert_eq!(
        pending_keys(&task),
        ["confirm"],
        "still waiting for its owner"
    );
    bounded(
        "tasks/cancel",
        alice.cancel_task(CancelTaskParams::new(&task_id)),
    )
    .await
    .expect("the owner cancels it");
    let task = reaches(
        &alice,
        &task_id,
        &[
            TaskStatus::Cancelled,
            TaskStatus::Completed,
            TaskStatus::Failed,
        ],
    )
    .await;
    assert_eq!(task.task.task.status, TaskStatus::Cancelled, "{task:?}");
    alice.cancel().await.expect("the client closes");
    server.shutdown().await.expect("the server stops");
    registry.shutdown().await;
}

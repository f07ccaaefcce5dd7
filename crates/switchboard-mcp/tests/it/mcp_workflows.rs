//! Workflows exported as tools, seen from a real rmcp client: `roster_swap_shifts` is listed
//! to a manager, a call runs the swap with progress notifications in order, a failing run
//! answers `isError` with what its compensation undid, and an agent's call of an `execute`
//! workflow is refused before any run starts, as any `execute` tool is. A client that declares
//! the tasks extension gets a task, polls it to its result, and cancels a long run with it; over
//! HTTP, another identity is told the task does not exist.
//!
//! `roster_swap_to_ghost` and `roster_slow_read` are exported by this test binary only.

use std::sync::{Arc, Mutex};

use rmcp::{
    ClientHandler, RoleClient,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
        ClientCapabilities, ClientConfig, GetTaskParams, GetTaskResult, Implementation,
        ProgressNotificationParam, TaskPayload, TaskStatus,
    },
    service::{NotificationContext, RunningService},
};
use serde_json::{Value, json};
use switchboard_core::Initiator;
use switchboard_mcp::{Identity, McpServer};
use switchboard_registry::ToolRegistry;
use switchboard_workflows::MemoryRunStore;
use switchboard_workflows_engine::{Engine, EngineOptions};

use crate::common::{Server, bounded, close, connect_server, error_of, eventually, listed};

switchboard_core::workflow!({
    name: "roster_swap_to_ghost",
    domain: "roster",
    description: "Test: gives a shift away, then fails, undoing it.",
    permission: "roster.shifts.assign",
    file: "workflows/swap_to_ghost.yaml",
});

switchboard_core::workflow!({
    name: "roster_slow_read",
    domain: "roster",
    description: "Test: reads a shift, then waits an hour.",
    permission: "roster.shifts.read",
    file: "workflows/slow_read.yaml",
});

const SHIFT_A: &str = "acme-2026-11-23-am"; // sam works it
const SHIFT_B: &str = "acme-2026-11-23-pm"; // mark works it

/// A client that records the progress notifications it receives.
#[derive(Debug, Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl Recorder {
    fn messages(&self) -> Vec<String> {
        let progress = self.progress.lock().expect("not poisoned");
        progress
            .iter()
            .map(|p| p.message.clone().unwrap_or_default())
            .collect()
    }

    fn values(&self) -> Vec<f64> {
        let progress = self.progress.lock().expect("not poisoned");
        progress.iter().map(|p| p.progress).collect()
    }
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().expect("not poisoned").push(params);
    }
}

type Client = RunningService<RoleClient, Recorder>;

/// A registry with every linked tool and the exported workflows registered by an engine.
async fn registry_with_workflows() -> (ToolRegistry, Engine) {
    let registry = bounded("starting the registry", ToolRegistry::start())
        .await
        .expect("the registry starts");
    let engine = Engine::new(
        registry.clone(),
        Arc::new(MemoryRunStore::new()),
        EngineOptions::default(),
    );
    let count = bounded("registering", engine.register_exported())
        .await
        .expect("the exported workflows validate");
    assert!(count >= 3, "{count}");
    (registry, engine)
}

fn manager() -> Identity {
    Identity::agent("acme", "alice")
        .with_role("manager")
        .with_initiator(Initiator::Human)
}

async fn connect(registry: &ToolRegistry, identity: Identity) -> (Client, Recorder, Server) {
    let recorder = Recorder::default();
    let (client, server) =
        connect_server(McpServer::new(registry.clone(), identity), recorder.clone()).await;
    (client, recorder, server)
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    bounded("a tools/call", client.call_tool(params))
        .await
        .expect("a result")
}

async fn assignee(client: &Client, shift: &str) -> Value {
    let result = call(client, "roster_get_shift", json!({"shift_id": shift})).await;
    result.structured_content.expect("a shift")["assignee"].clone()
}

// One thread: the rmcp client hands each notification to a task of its own, and only on one
// thread do those tasks run in the order the notifications arrived.
#[tokio::test(flavor = "current_thread")]
async fn a_manager_swaps_shifts_through_the_exported_workflow_with_progress() {
    let (registry, engine) = registry_with_workflows().await;
    let (client, recorder, server) = connect(&registry, manager()).await;

    assert!(
        listed(&client)
            .await
            .contains(&"roster_swap_shifts".to_owned())
    );

    let result = call(
        &client,
        "roster_swap_shifts",
        json!({"shift_a": SHIFT_A, "shift_b": SHIFT_B}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(
        result.structured_content,
        Some(json!({"swapped": [SHIFT_A, SHIFT_B]}))
    );
    assert_eq!(assignee(&client, SHIFT_A).await, json!("mark"));
    assert_eq!(assignee(&client, SHIFT_B).await, json!("sam"));

    // One report per finished node, counting up; the branch not taken is never reported.
    eventually("six progress notifications", || {
        recorder.values().len() >= 6
    })
    .await;
    assert_eq!(recorder.values(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let messages = recorder.messages();
    let mut sorted = messages.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "assign_a completed",
            "assign_b completed",
            "check completed",
            "done completed",
            "read_a completed",
            "read_b completed",
        ]
    );
    // The mutations come in the workflow's order, and the end last.
    let position = |node: &str| {
        messages
            .iter()
            .position(|message| message == &format!("{node} completed"))
            .expect("reported")
    };
    assert!(position("assign_a") < position("assign_b"), "{messages:?}");
    assert_eq!(position("done"), 5, "{messages:?}");

    close(client, server).await;
    engine.shutdown();
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_workflow_answers_is_error_with_what_its_compensation_undid() {
    let (registry, engine) = registry_with_workflows().await;
    let (client, _recorder, server) = connect(&registry, manager()).await;

    let result = call(
        &client,
        "roster_swap_to_ghost",
        json!({"shift_a": SHIFT_A, "shift_b": SHIFT_B}),
    )
    .await;
    let error = error_of(&result);
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("node `assign_b` failed"), "{error}");
    assert!(message.contains("ghost"), "{error}");
    assert!(message.contains("undone: assign_a"), "{error}");
    // The compensation gave shift A back to Sam.
    assert_eq!(assignee(&client, SHIFT_A).await, json!("sam"));

    close(client, server).await;
    engine.shutdown();
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_call_of_an_execute_workflow_is_refused_as_an_execute_tool_is() {
    let (registry, engine) = registry_with_workflows().await;
    let agent = Identity::agent("acme", "alice").with_role("admin");
    let (client, _recorder, server) = connect(&registry, agent).await;

    let result = call(
        &client,
        "roster_swap_shifts",
        json!({"shift_a": SHIFT_A, "shift_b": SHIFT_B}),
    )
    .await;
    assert_eq!(
        error_of(&result)["kind"],
        json!("category_denied"),
        "{result:?}"
    );
    assert_eq!(
        assignee(&client, SHIFT_A).await,
        json!("sam"),
        "no run started"
    );

    close(client, server).await;
    engine.shutdown();
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_by_the_client_cancels_its_run() {
    let (registry, engine) = registry_with_workflows().await;
    let (client, recorder, server) = connect(&registry, manager()).await;

    let params = CallToolRequestParams::new("roster_slow_read".to_owned()).with_arguments(
        json!({"shift": SHIFT_A})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let call = client.call_tool(params);
    let waited = tokio::time::timeout(std::time::Duration::from_millis(500), call).await;
    assert!(waited.is_err(), "the run waits an hour: {waited:?}");
    assert_eq!(recorder.messages(), ["read completed"]);

    // The dropped request cancels the run.
    let engine_check = engine.clone();
    eventually("the run is cancelled", move || {
        slow_read_state(&engine_check).is_some_and(|state| state.is_terminal())
    })
    .await;

    close(client, server).await;
    engine.shutdown();
    registry.shutdown().await;
}

/// The state of the newest `slow_read` run, as a manager at acme reads it.
fn slow_read_state(engine: &Engine) -> Option<switchboard_workflows::RunState> {
    let caller = switchboard_core::CallContext::builder()
        .org("acme")
        .user("alice")
        .session("check")
        .correlation("check")
        .role("manager")
        .build();
    let runs = engine.runs(&caller, Some("slow_read"), false, 10).ok()?;
    runs.first().map(|run| run.state.clone())
}

/// A client that declares the MCP tasks extension.
#[derive(Debug, Clone, Default)]
struct TaskClient;

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("tasks", "1.0"),
        )
    }
}

/// Starts `tool` as a task; fails the test if the server answers otherwise.
async fn start_task(
    client: &RunningService<RoleClient, TaskClient>,
    tool: &str,
    arguments: Value,
) -> String {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    match bounded("a tools/call", client.call_tool_once(params))
        .await
        .expect("an answer")
    {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Polls `tasks/get` until the task leaves `working`.
async fn settled(client: &RunningService<RoleClient, TaskClient>, task_id: &str) -> GetTaskResult {
    bounded("the task settles", async {
        loop {
            let task = client
                .get_task(GetTaskParams::new(task_id))
                .await
                .expect("tasks/get");
            if task.task.task.status != TaskStatus::Working {
                return task;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_client_gets_a_task_and_polls_it_to_its_result() {
    let (registry, engine) = registry_with_workflows().await;
    let server = McpServer::new(registry.clone(), manager());
    let (client, server) = connect_server(server, TaskClient).await;
    let info = client.peer_info().expect("the server introduced itself");
    assert!(info.capabilities.supports_tasks(), "{info:?}");

    let task_id = start_task(
        &client,
        "roster_swap_shifts",
        json!({"shift_a": SHIFT_A, "shift_b": SHIFT_B}),
    )
    .await;
    let task = settled(&client, &task_id).await;
    match task.task.payload {
        TaskPayload::Completed { result } => assert_eq!(
            result.get("structuredContent"),
            Some(&json!({"swapped": [SHIFT_A, SHIFT_B]})),
            "{result:?}"
        ),
        other => panic!("expected completed, got {other:?}"),
    }
    // A plain tool stays a plain call, even for a tasks client.
    let params = CallToolRequestParams::new("roster_get_shift".to_owned()).with_arguments(
        json!({"shift_id": SHIFT_A})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let plain = bounded("a tools/call", client.call_tool_once(params))
        .await
        .expect("an answer");
    assert!(matches!(plain, CallToolResponse::Complete(_)), "{plain:?}");

    close(client, server).await;
    engine.shutdown();
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cancel_cancels_a_long_run() {
    let (registry, engine) = registry_with_workflows().await;
    let server = McpServer::new(registry.clone(), manager());
    let (client, server) = connect_server(server, TaskClient).await;

    let task_id = start_task(&client, "roster_slow_read", json!({"shift": SHIFT_A})).await;
    // Working, with the last progress report as its status message.
    bounded("the first node is reported", async {
        loop {
            let task = client
                .get_task(GetTaskParams::new(&task_id))
                .await
                .expect("tasks/get");
            assert_eq!(task.task.task.status, TaskStatus::Working);
            if task.task.task.status_message.as_deref() == Some("read completed") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    bounded(
        "tasks/cancel",
        client.cancel_task(CancelTaskParams::new(&task_id)),
    )
    .await
    .expect("cancelled");
    let task = settled(&client, &task_id).await;
    assert_eq!(task.task.task.status, TaskStatus::Cancelled, "{task:?}");

    eventually("the run is cancelled", move || {
        slow_read_state(&engine) == Some(switchboard_workflows::RunState::Cancelled)
    })
    .await;

    close(client, server).await;
    registry.shutdown().await;
}

/// A tasks client of the HTTP `server` sending `token`.
async fn task_client_with(
    server: &switchboard_mcp::HttpServer,
    token: &str,
) -> RunningService<RoleClient, TaskClient> {
    use rmcp::{
        ServiceExt as _,
        transport::{
            StreamableHttpClientTransport,
            streamable_http_client::StreamableHttpClientTransportConfig,
        },
    };
    let config = StreamableHttpClientTransportConfig::with_uri(server.url()).auth_header(token);
    let transport = StreamableHttpClientTransport::from_config(config);
    bounded("connecting", TaskClient.serve(transport))
        .await
        .expect("the client connects")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_seen_and_cancelled_by_the_identity_that_started_it_only() {
    use crate::http_support::{ALICE_TOKEN, GINA_TOKEN, SAM_TOKEN, start, token_config};

    let (registry, engine) = registry_with_workflows().await;
    let server = start(&registry, token_config()).await;
    let alice = task_client_with(&server, ALICE_TOKEN).await;
    let task_id = start_task(&alice, "roster_slow_read", json!({"shift": SHIFT_A})).await;

    // Sam (the same organisation) and Gina (another) are told the task does not exist, as for
    // an id never issued, and cannot cancel it.
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
        other
            .cancel_task(CancelTaskParams::new(&task_id))
            .await
            .expect_err("someone else's task cannot be cancelled");
        other.cancel().await.expect("the client closes");
    }

    let task = alice
        .get_task(GetTaskParams::new(&task_id))
        .await
        .expect("the owner sees it");
    assert_eq!(task.task.task.status, TaskStatus::Working, "{task:?}");
    bounded(
        "tasks/cancel",
        alice.cancel_task(CancelTaskParams::new(&task_id)),
    )
    .await
    .expect("the owner cancels it");
    let task = settled(&alice, &task_id).await;
    assert_eq!(task.task.task.status, TaskStatus::Cancelled, "{task:?}");

    alice.cancel().await.expect("the client closes");
    server.shutdown().await.expect("the server stops");
    engine.shutdown();
    registry.shutdown().await;
}

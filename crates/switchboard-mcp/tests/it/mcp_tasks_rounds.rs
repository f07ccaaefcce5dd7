//! Tools whose task begins at their word (`#[tool(tasks = ..., asks_before_task)]` and
//! `ctx.begin_task()`), seen from real rmcp clients: on 2026-07-28 a tasks client's call asks
//! the questions before the task in `input_required` rounds (no `taskId`), the round that
//! reaches `begin_task` is answered with the task (no `requestState`, no `inputRequests`), and
//! the task ends with what the rounds gathered (the conformance domain's `test_tool_with_task`,
//! the scenario `tasks-mrtr-composition`). A tampered `requestState` on that round is refused;
//! questions after `begin_task` go to the task; a tool that never begins its task answers with
//! an ended one; where no task begins at the tool's word (2025-11-25, a client without the
//! extension), `begin_task` returns at once. Each `tools/call` leaves one audit record.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, InputRequiredResult, InputResponses,
    ProtocolVersion, TaskStatus,
};
use serde_json::{Value, json};
use switchboard_core::{
    BoxFuture, TaskSupport, ToolContext, ToolError,
    ask::{AskOutcome, Elicitation, Keyed, Question, Reply},
};
use switchboard_registry::{Exposure, RuntimeTool, ToolRegistry};

use crate::{
    approval_support::records_of,
    common::{close, registry, runtime_tool},
    mcp_tasks::{
        Client, accept, call_with, completed_text, connect, ended, pending_keys, reaches, request,
        start_task, update,
    },
};

const TOOL: &str = "test_tool_with_task";

/// The first round of `params`, which must ask and carry no task.
async fn first_round(client: &Client, params: &CallToolRequestParams) -> InputRequiredResult {
    let asking = match call_with(client, params.clone()).await.expect("an answer") {
        CallToolResponse::InputRequired(asking) => asking,
        other => panic!("expected input_required, got {other:?}"),
    };
    let wire = serde_json::to_value(&asking).expect("serialises");
    assert_eq!(wire["resultType"], "input_required", "{wire}");
    assert!(
        wire.get("taskId").is_none(),
        "no task before it begins: {wire}"
    );
    asking
}

/// The `requestState` of the first round, which asks.
async fn first_state(client: &Client, params: &CallToolRequestParams) -> String {
    first_round(client, params)
        .await
        .request_state
        .expect("a state")
}

/// `params` again, with `answer` under `key` and the round's `state`.
fn answered(
    params: &CallToolRequestParams,
    key: &str,
    answer: Value,
    state: &str,
) -> CallToolRequestParams {
    let mut responses = InputResponses::new();
    responses.insert(key.to_owned(), answer);
    params
        .clone()
        .with_input_responses(responses)
        .with_request_state(state)
}

/// The id of the task the round `params` was answered with, which must carry neither a
/// `requestState` nor `inputRequests`.
async fn task_round(client: &Client, params: CallToolRequestParams) -> String {
    let created = match call_with(client, params).await.expect("an answer") {
        CallToolResponse::Task(created) => created,
        other => panic!("expected a task, got {other:?}"),
    };
    let wire = serde_json::to_value(&created).expect("serialises");
    assert_eq!(wire["resultType"], "task", "{wire}");
    assert!(wire["taskId"].is_string(), "{wire}");
    assert!(wire.get("requestState").is_none(), "{wire}");
    assert!(wire.get("inputRequests").is_none(), "{wire}");
    created.task.task_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_asks_then_the_round_that_answers_gets_the_task_which_ends_with_the_answer() {
    let registry = registry().await;
    let (client, server) = connect(&registry, &ProtocolVersion::V_2026_07_28, true).await;
    let before = records_of(&registry, TOOL).await.len();

    let params = request(TOOL, json!({}));
    let asking = first_round(&client, &params).await;
    let questions = asking.input_requests.clone().expect("questions");
    assert_eq!(questions.keys().collect::<Vec<_>>(), ["user_name"]);
    let state = asking.request_state.expect("a state");

    let task_id = task_round(
        &client,
        answered(
            &params,
            "user_name",
            accept(json!({"name": "Alice"})),
            &state,
        ),
    )
    .await;
    let task = ended(&client, &task_id).await;
    assert_eq!(completed_text(&task), ("Hello, Alice!".to_owned(), false));

    // One record per tools/call: the round that asked, and the call that ran on in the task.
    let mut records = records_of(&registry, TOOL).await;
    records.sort_by_key(|record| record.id);
    assert_eq!(records.len(), before + 2, "{records:?}");
    let asks = |index: usize| -> Vec<AskOutcome> {
        records[before + index]
            .asks
            .iter()
            .map(|ask| ask.outcome)
            .collect()
    };
    assert_eq!(asks(0), [AskOutcome::Pending]);
    assert_eq!(asks(1), [AskOutcome::Accepted]);
    assert!(
        records[before + 1].outcome.is_ok(),
        "{:?}",
        records[before + 1]
    );
    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_state_on_the_round_that_would_begin_the_task_is_refused() {
    let registry = registry().await;
    let (client, server) = connect(&registry, &ProtocolVersion::V_2026_07_28, true).await;
    let params = request(TOOL, json!({}));
    let state = first_state(&client, &params).await;
    let alice = accept(json!({"name": "Alice"}));

    let tampered = format!("{state}x");
    match call_with(
        &client,
        answered(&params, "user_name", alice.clone(), &tampered),
    )
    .await
    {
        Err(rmcp::service::ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
            assert!(error.message.contains("requestState"), "{error:?}");
        }
        other => panic!("expected -32602, got {other:?}"),
    }
    // The state itself still opens: the refusal was the tampering's.
    let task_id = task_round(&client, answered(&params, "user_name", alice, &state)).await;
    let task = ended(&client, &task_id).await;
    assert_eq!(completed_text(&task), ("Hello, Alice!".to_owned(), false));
    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_question_is_an_answer_and_the_task_begins_all_the_same() {
    let registry = registry().await;
    let (client, server) = connect(&registry, &ProtocolVersion::V_2026_07_28, true).await;
    let params = request(TOOL, json!({}));
    let state = first_state(&client, &params).await;
    let task_id = task_round(
        &client,
        answered(&params, "user_name", json!({"action": "decline"}), &state),
    )
    .await;
    let task = ended(&client, &task_id).await;
    assert_eq!(
        completed_text(&task),
        ("Hello, stranger!".to_owned(), false)
    );
    close(client, server).await;
    registry.shutdown().await;
}

/// Asks `first` before its task and, when it `begins` one, `second` in it; answers the names.
struct AsksAround {
    begins: bool,
}

impl RuntimeTool for AsksAround {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let first = name(ctx, "first").await?;
            if !self.begins {
                return Ok(json!({"first": first}));
            }
            ctx.begin_task().await?;
            let second = name(ctx, "second").await?;
            Ok(json!({"first": first, "second": second}))
        })
    }
}

/// The name the person gives under `key`.
async fn name(ctx: &ToolContext, key: &str) -> Result<String, ToolError> {
    let form = Elicitation::Form {
        message: format!("{key} name?"),
        requested_schema: json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        }),
    };
    match &ctx
        .ask_all(&[Keyed::new(key, Question::Elicit(form))])
        .await?[..]
    {
        [Reply::Elicit(reply)] => Ok(reply
            .content
            .as_ref()
            .and_then(|content| content["name"].as_str())
            .unwrap_or("(none)")
            .to_owned()),
        other => Err(ToolError::new("bad_answer", format!("{other:?}"))),
    }
}

/// `registry` with `asks_around` (begins its task) and `never_begins` (does not), both
/// asking before their task, with task support `support`.
async fn with_asking_tools(registry: &ToolRegistry, support: TaskSupport) {
    let tools = [("asks_around", true), ("never_begins", false)].map(|(tool, begins)| {
        let mut spec = runtime_tool(
            tool,
            "asking",
            "core.users.read",
            Arc::new(AsksAround { begins }),
            Exposure::Listed,
        );
        spec.descriptor.tasks = support;
        spec.descriptor.asks_before_task = true;
        spec
    });
    registry
        .register(tools.into())
        .await
        .expect("the tools register");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_after_the_task_begins_go_to_the_task_and_a_tool_that_never_begins_one_ends_its_task()
 {
    let registry = registry().await;
    with_asking_tools(&registry, TaskSupport::Required).await;
    let (client, server) = connect(&registry, &ProtocolVersion::V_2026_07_28, true).await;

    let params = request("asks_around", json!({}));
    let asking = first_round(&client, &params).await;
    assert_eq!(
        asking
            .input_requests
            .clone()
            .expect("questions")
            .keys()
            .collect::<Vec<_>>(),
        ["first"]
    );
    let state = asking.request_state.expect("a state");
    let task_id = task_round(
        &client,
        answered(&params, "first", accept(json!({"name": "Ada"})), &state),
    )
    .await;
    let task = reaches(&client, &task_id, &[TaskStatus::InputRequired]).await;
    assert_eq!(pending_keys(&task), ["second"]);
    update(
        &client,
        &task_id,
        "second",
        accept(json!({"name": "Grace"})),
    )
    .await;
    let task = ended(&client, &task_id).await;
    let (text, is_error) = completed_text(&task);
    assert!(!is_error, "{task:?}");
    assert!(text.contains("Ada") && text.contains("Grace"), "{text}");

    let params = request("never_begins", json!({}));
    let state = first_state(&client, &params).await;
    let task_id = task_round(
        &client,
        answered(&params, "first", accept(json!({"name": "Ada"})), &state),
    )
    .await;
    let task = ended(&client, &task_id).await;
    let (text, is_error) = completed_text(&task);
    assert!(!is_error && text.contains("Ada"), "{task:?}");
    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_no_task_begins_at_the_tools_word_begin_task_returns_at_once() {
    let registry = registry().await;
    with_asking_tools(&registry, TaskSupport::Optional).await;

    // 2025-11-25: the task begins with the call, and every question goes to it.
    let (client, server) = connect(&registry, &ProtocolVersion::V_2025_11_25, true).await;
    let task_id = start_task(&client, "asks_around", json!({})).await;
    let task = reaches(&client, &task_id, &[TaskStatus::InputRequired]).await;
    assert_eq!(pending_keys(&task), ["first"]);
    update(&client, &task_id, "first", accept(json!({"name": "Ada"}))).await;
    let task = bounded_second_question(&client, &task_id).await;
    assert_eq!(pending_keys(&task), ["second"]);
    update(
        &client,
        &task_id,
        "second",
        accept(json!({"name": "Grace"})),
    )
    .await;
    let task = ended(&client, &task_id).await;
    let (text, is_error) = completed_text(&task);
    assert!(
        !is_error && text.contains("Ada") && text.contains("Grace"),
        "{task:?}"
    );
    close(client, server).await;

    // 2026-07-28 without the extension: an ordinary call in rounds, never a task.
    let (client, server) = connect(&registry, &ProtocolVersion::V_2026_07_28, false).await;
    let params = request("asks_around", json!({}));
    let state = first_state(&client, &params).await;
    let asking = match call_with(
        &client,
        answered(&params, "first", accept(json!({"name": "Ada"})), &state),
    )
    .await
    .expect("an answer")
    {
        CallToolResponse::InputRequired(asking) => asking,
        other => panic!("a second round, got {other:?}"),
    };
    let state = asking.request_state.expect("a new state");
    match call_with(
        &client,
        answered(&params, "second", accept(json!({"name": "Grace"})), &state),
    )
    .await
    .expect("an answer")
    {
        CallToolResponse::Complete(result) => {
            assert_eq!(
                result.structured_content,
                Some(json!({"first": "Ada", "second": "Grace"}))
            );
        }
        other => panic!("a result, got {other:?}"),
    }
    close(client, server).await;
    registry.shutdown().await;
}

/// The task `task_id` once it asks its second question (the first answer has to reach the
/// tool first).
async fn bounded_second_question(client: &Client, task_id: &str) -> rmcp::model::GetTaskResult {
    crate::common::bounded(
        "the second question",
        Box::pin(async {
            loop {
                let task = reaches(client, task_id, &[TaskStatus::InputRequired]).await;
                if pending_keys(&task) == ["second"] {
                    return task;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }),
    )
    .await
}

//! The conformance tools of the tasks extension (SEP-2663, scenarios `tasks-*`): a tool that
//! never runs as a task (`greet`), tools a client that does tasks gets a task for
//! (`slow_compute`, `protocol_error_job`, `confirm_delete`, `multi_input`), and tools that run
//! only as tasks (`failing_job`, `test_tool_with_task`). The questions of a tool in a task
//! reach the client through the task's `inputRequests`, and its answers through
//! `tasks/update`; `test_tool_with_task` asks its question before its task begins.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{NoInput, ToolContent, ToolContext, ToolError, ToolInput, tool};
use validator::Validate;

use crate::round_tools::{accepted, form};

/// The input of `greet`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
pub struct GreetInput {
    /// Who to greet.
    pub name: String,
}

/// Answers `Hello, <name>!` at once; never a task. For the `tasks-*` scenarios.
#[tool(
    name = "greet",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn greet(_ctx: &ToolContext, input: GreetInput) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::text(format!("Hello, {}!", input.name)))
}

/// The input of `slow_compute`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
pub struct SlowComputeInput {
    /// How long to work, in seconds (0 for at once).
    #[validate(range(min = 0.0, max = 300.0))]
    pub seconds: f64,
    /// A label echoed in the result.
    #[serde(default)]
    pub label: Option<String>,
}

/// Works `seconds` seconds, then answers `computed <label> in <seconds> s`. A client that does
/// tasks gets a task to poll (and may cancel); any other waits. For the `tasks-*` scenarios.
#[tool(
    name = "slow_compute",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test",
    timeout_ms = 310_000,
    tasks = optional
)]
pub async fn slow_compute(
    _ctx: &ToolContext,
    input: SlowComputeInput,
) -> Result<ToolContent, ToolError> {
    tokio::time::sleep(Duration::from_secs_f64(input.seconds)).await;
    Ok(ToolContent::text(format!(
        "computed {} in {} s",
        input.label.as_deref().unwrap_or("(no label)"),
        input.seconds
    )))
}

/// Fails with a tool error after about a second; runs only as a task. For the `tasks-*`
/// scenarios: a tool's error completes its task with an `isError` result.
#[tool(
    name = "failing_job",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test",
    tasks = required
)]
pub async fn failing_job(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::new(
        "job_failed",
        "the job failed, as this conformance tool always does",
    ))
}

/// Panics. For the `tasks-*` scenarios: a failure of the server's (a panic, here) fails the
/// task with a JSON-RPC error instead of completing it.
#[tool(
    name = "protocol_error_job",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test",
    tasks = optional
)]
pub async fn protocol_error_job(
    _ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    #[expect(
        clippy::panic,
        reason = "this conformance tool exists to show how a panic ends a task"
    )]
    {
        panic!("protocol_error_job panics, as this conformance tool always does")
    }
}

/// The input of `confirm_delete`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
pub struct ConfirmDeleteInput {
    /// The file to delete (nothing is deleted: this is a conformance tool).
    pub filename: String,
}

/// A confirmation.
#[derive(Debug, Deserialize, JsonSchema)]
struct ConfirmForm {
    confirm: bool,
}

/// Asks the person to confirm deleting `filename`, then answers whether it would be. For the
/// `tasks-*` scenarios: in a task, the question waits in the task's `inputRequests`.
#[tool(
    name = "confirm_delete",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test",
    tasks = optional
)]
pub async fn confirm_delete(
    ctx: &ToolContext,
    input: ConfirmDeleteInput,
) -> Result<ToolContent, ToolError> {
    let message = format!("Delete {}?", input.filename);
    let replies = ctx
        .ask_all(&[form::<ConfirmForm>("confirm", &message)?])
        .await?;
    let confirmed = accepted::<ConfirmForm>(&replies[0])?.is_some_and(|form| form.confirm);
    Ok(ToolContent::text(if confirmed {
        format!("{} deleted", input.filename)
    } else {
        format!("{} kept", input.filename)
    }))
}

/// A name.
#[derive(Debug, Deserialize, JsonSchema)]
struct NameForm {
    name: String,
}

/// Asks two questions at once (keys `first` and `second`), then names both answers. For the
/// `tasks-*` scenarios: the client may answer them one `tasks/update` at a time.
#[tool(
    name = "multi_input",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test",
    tasks = optional
)]
pub async fn multi_input(ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    let replies = ctx
        .ask_all(&[
            form::<NameForm>("first", "First name?")?,
            form::<NameForm>("second", "Second name?")?,
        ])
        .await?;
    let name = |index: usize| -> Result<String, ToolError> {
        Ok(accepted::<NameForm>(&replies[index])?
            .map_or_else(|| "(none)".to_owned(), |form| form.name))
    };
    Ok(ToolContent::text(format!(
        "first={}; second={}",
        name(0)?,
        name(1)?
    )))
}

/// Asks the person's name (key `user_name`) before its task begins, then greets them in the
/// task; runs only as a task. For the scenario `tasks-mrtr-composition`: on 2026-07-28 the
/// question is an `input_required` round of the call, and the round that answers it gets the
/// task.
#[tool(
    name = "test_tool_with_task",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test",
    tasks = required,
    asks_before_task
)]
pub async fn tool_with_task(ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    let replies = ctx
        .ask_all(&[form::<NameForm>("user_name", "What is your name?")?])
        .await?;
    let name =
        accepted::<NameForm>(&replies[0])?.map_or_else(|| "stranger".to_owned(), |form| form.name);
    ctx.begin_task().await?;
    Ok(ToolContent::text(format!("Hello, {name}!")))
}

//! The MCP tasks extension (SEP-2663) for tools whose calls may run as tasks
//! (`ToolDescriptor::tasks`: the workflows domains export, and `#[tool(tasks = ...)]`): a client
//! that declared the extension gets a task for such a call instead of a request held open until
//! the call ends, polls it with `tasks/get`, answers its questions with `tasks/update`, and may
//! cancel it. A tool that requires tasks is refused (`-32021`) to a client that did not declare
//! the extension. A tool that asks before its task (`asks_before_task`) gets its task, on
//! 2026-07-28, only when it says so (`ctx.begin_task()`): the call's rounds come first.
//!
//! The tasks live in rmcp's `TaskManager`, shared by every handler instance of a server (it
//! sits in the shared tool catalog), so `tasks/get` finds a task whichever instance started it.
//! Each task belongs to the identity that started it (its organisation and user): to any other
//! caller of the same server, `tasks/get` and `tasks/cancel` answer that the task does not
//! exist, exactly as for an id never issued, so a task id that leaks gives nothing away.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
        CreateTaskResult, GetTaskResult, ServerCapabilities, TASKS_EXTENSION_ID,
    },
    service::RequestContext,
    task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions},
};
use serde_json::Value;
use switchboard_core::{
    BoxFuture, CallContext, InvokeError, Progress, ProgressNotifier, TaskSupport, ask::ClientLink,
};
use switchboard_registry::ToolRegistry;

use crate::{
    asking::{self, BeginTask, TaskAsker},
    identity::Identity,
    result,
};

/// Who started a task: the organisation and user of its identity.
type Owner = (Option<String>, Option<String>);

fn owner_of(identity: &Identity) -> Owner {
    (identity.org.clone(), identity.user.clone())
}

/// The tasks of a server's long-running calls, each with the identity that started it.
#[derive(Default)]
pub(crate) struct Tasks {
    manager: TaskManager,
    owners: Mutex<HashMap<String, Owner>>,
}

impl Tasks {
    fn owners(&self) -> MutexGuard<'_, HashMap<String, Owner>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks that `identity` started `task_id`; else the error of an id never issued, which
    /// is rmcp's own (`-32602`, "unknown task").
    fn check_owner(&self, task_id: &str, identity: &Identity) -> Result<(), ErrorData> {
        if self.owners().get(task_id) == Some(&owner_of(identity)) {
            Ok(())
        } else {
            Err(ErrorData::invalid_params(
                format!("unknown task: {task_id}"),
                None,
            ))
        }
    }

    /// Records that `identity` owns `task_id`; the owners of tasks the manager forgot (some
    /// time after they ended) are forgotten too.
    fn own(&self, task_id: &str, identity: &Identity) {
        let mut owners = self.owners();
        owners.retain(|id, _| self.manager.get_task(id).is_ok());
        owners.insert(task_id.to_owned(), owner_of(identity));
    }

    /// The task of a call whose tool began it mid-way (`ctx.begin_task()`): the rest of the
    /// call, `call`, runs on in it, and `begun` gets the task's context before the tool goes
    /// on, so that the tool's later questions go to the task. `tasks/get` and `tasks/cancel`
    /// see it as any task ([`start`]).
    pub(crate) fn take_over(
        &self,
        identity: &Identity,
        call: BoxFuture<'static, Result<Value, InvokeError>>,
        begun: BeginTask,
        returns_content: bool,
    ) -> CallToolResponse {
        let task = self.manager.spawn(TaskOptions::new(), move |task_context| {
            // The tool waits for the context in `begin_task`; the call is not polled again
            // before this returns.
            let _ = begun.send(task_context.clone());
            Box::pin(settle(task_context, call, returns_content))
        });
        self.own(&task.task_id, identity);
        CallToolResponse::Task(CreateTaskResult::new(task))
    }

    /// The task of a call that could have begun one at its word and ended without it: a task
    /// that ends at once with the call's `outcome`.
    pub(crate) fn ended(
        &self,
        identity: &Identity,
        outcome: Result<Value, InvokeError>,
        returns_content: bool,
    ) -> CallToolResponse {
        let task = self.manager.spawn(TaskOptions::new(), move |_| {
            Box::pin(std::future::ready(task_outcome(outcome, || {
                returns_content
            })))
        });
        self.own(&task.task_id, identity);
        CallToolResponse::Task(CreateTaskResult::new(task))
    }

    /// `tasks/get` for `identity`.
    pub(crate) fn get(
        &self,
        task_id: &str,
        identity: &Identity,
    ) -> Result<GetTaskResult, ErrorData> {
        self.check_owner(task_id, identity)?;
        self.manager.get_task(task_id).map(GetTaskResult::new)
    }

    /// `tasks/update` for `identity`: answers to the task's questions, by key. Answers to
    /// questions the task did not ask, or asked and had answered, are ignored.
    pub(crate) fn update(
        &self,
        task_id: &str,
        identity: &Identity,
        answers: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), ErrorData> {
        self.check_owner(task_id, identity)?;
        self.manager.update_task(task_id, answers)
    }

    /// `tasks/cancel` for `identity`.
    pub(crate) fn cancel(&self, task_id: &str, identity: &Identity) -> Result<(), ErrorData> {
        self.check_owner(task_id, identity)?;
        self.manager.cancel_task(task_id)
    }
}

/// Declares the tasks extension in `capabilities` when the registry has a tool whose calls may
/// run as tasks.
pub(crate) fn advertise(registry: &ToolRegistry, capabilities: &mut ServerCapabilities) {
    if registry
        .list()
        .iter()
        .any(|descriptor| descriptor.tasks.allows_tasks())
    {
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
    }
}

/// How a call of a tool runs, given what the client declared for the request (its session's
/// capabilities, or the request's own `_meta` on 2026-07-28).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dispatch {
    /// While the request waits.
    Inline,
    /// As a task the client polls.
    Task,
    /// As a task that begins when the tool says so (`asks_before_task`): until then, its
    /// questions are asked in the request's `input_required` rounds (2026-07-28).
    TaskAtBegin,
    /// Refused: the tool runs only as a task, and the client does not do tasks.
    NeedsTasks,
}

/// How a call of `name` runs: as a task when the tool allows one and the client declared the
/// tasks extension (beginning at the tool's word when the tool asks before its task and the
/// request asks in rounds); refused when the tool requires one and the client did not.
pub(crate) fn dispatch(
    registry: &ToolRegistry,
    name: &str,
    context: &RequestContext<RoleServer>,
) -> Dispatch {
    let (support, asks_before_task) = registry
        .find(name)
        .map_or((TaskSupport::Forbidden, false), |descriptor| {
            (descriptor.tasks, descriptor.asks_before_task)
        });
    let client_does_tasks = context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks());
    match (support, client_does_tasks) {
        (TaskSupport::Forbidden, _) => Dispatch::Inline,
        (_, true) if asks_before_task && asking::asks_in_rounds(context) => Dispatch::TaskAtBegin,
        (_, true) => Dispatch::Task,
        (TaskSupport::Optional, false) => Dispatch::Inline,
        (TaskSupport::Required, false) => Dispatch::NeedsTasks,
    }
}

/// The `-32021` error of a call to a tool that runs only as a task, from a client that did not
/// declare the tasks extension: its data names the capability.
pub(crate) fn needs_tasks_error(name: &str) -> ErrorData {
    let mut error = ErrorData::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    );
    error.message = format!(
        "`{name}` runs only as a task: declare the `{TASKS_EXTENSION_ID}` extension in the \
         client capabilities"
    )
    .into();
    error
}

/// Starts the call as a task and answers with it at once. `tasks/get` reports it working (its
/// status message is the call's last progress report), waiting for input while the tool's
/// questions are unanswered ([`TaskAsker`]: the client answers them with `tasks/update`), then
/// its result; `tasks/cancel` drops the call, which cancels a workflow's run (it compensates).
///
/// A tool's own error, or a refusal of the call, completes the task with an `isError` result;
/// a failure of the server's (a panic, an unavailable domain, store or audit) fails it with the
/// JSON-RPC error.
pub(crate) fn start(
    tasks: &Tasks,
    identity: &Identity,
    registry: ToolRegistry,
    request: CallToolRequestParams,
    capabilities: Option<ClientCapabilities>,
    mut call_context: CallContext,
) -> CallToolResponse {
    let name = request.name;
    let params = Value::Object(request.arguments.unwrap_or_default());
    let task = tasks
        .manager
        .spawn(TaskOptions::new(), move |task_context| {
            Box::pin(async move {
                let reporter = task_context.clone();
                call_context.progress = ProgressNotifier::new(move |progress: Progress<'_>| {
                    if let Some(message) = progress.message {
                        reporter.set_status_message(message);
                    }
                });
                call_context.client =
                    ClientLink::new(Arc::new(TaskAsker::new(task_context.clone(), capabilities)));
                let returns_content = registry
                    .find(&name)
                    .is_some_and(|descriptor| descriptor.returns_content());
                let call = registry.invoke(&name, params, &call_context);
                settle(task_context, call, returns_content).await
            })
        });
    tasks.own(&task.task_id, identity);
    CallToolResponse::Task(CreateTaskResult::new(task))
}

/// A task's call run to its end, unless the task is cancelled first: `tasks/cancel` also drops
/// the task's open questions, which ends a tool waiting on one with an error at the same
/// moment, so cancellation is looked at first.
async fn settle(
    task_context: TaskContext,
    call: impl Future<Output = Result<Value, InvokeError>>,
    returns_content: bool,
) -> Result<CallToolResult, TaskExit> {
    tokio::select! {
        biased;
        () = task_context.cancelled() => Err(TaskExit::Cancelled),
        outcome = call => task_outcome(outcome, || returns_content),
    }
}

/// How a task's call ends: its result (an `isError` one for the tool's errors and the call's
/// refusals), or the JSON-RPC error of a server failure.
fn task_outcome(
    outcome: Result<Value, InvokeError>,
    returns_content: impl FnOnce() -> bool,
) -> Result<CallToolResult, TaskExit> {
    match &outcome {
        Err(
            error @ (InvokeError::ToolPanicked { .. }
            | InvokeError::DomainUnavailable { .. }
            | InvokeError::AuditFailed { .. }
            | InvokeError::AuditUnavailable { .. }
            | InvokeError::StoreUnavailable { .. }),
        ) => Err(TaskExit::Error(ErrorData::internal_error(
            error.to_string(),
            Some(result::error_json(error)),
        ))),
        _ => result::call_result(outcome, returns_content).map_err(TaskExit::Error),
    }
}

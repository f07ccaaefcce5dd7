//! The MCP tasks extension for long-running tools (`ToolDescriptor::long_running`, the
//! workflows domains export): a client that declared the extension gets a task for such a call
//! instead of a request held open until the run ends, and polls or cancels it.
//!
//! The tasks live in rmcp's `TaskManager`, shared by every handler instance of a server (it
//! sits in the shared tool catalog), so `tasks/get` finds a task whichever instance started it.
//! Each task belongs to the identity that started it (its organisation and user): to any other
//! caller of the same server, `tasks/get` and `tasks/cancel` answer that the task does not
//! exist, exactly as for an id never issued, so a task id that leaks gives nothing away.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CreateTaskResult, GetTaskResult,
        ServerCapabilities, TASKS_EXTENSION_ID,
    },
    service::RequestContext,
    task_manager::{TaskExit, TaskManager, TaskOptions},
};
use serde_json::Value;
use switchboard_core::{CallContext, Progress, ProgressNotifier};
use switchboard_registry::ToolRegistry;

use crate::{identity::Identity, result};

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

    /// `tasks/get` for `identity`.
    pub(crate) fn get(
        &self,
        task_id: &str,
        identity: &Identity,
    ) -> Result<GetTaskResult, ErrorData> {
        self.check_owner(task_id, identity)?;
        self.manager.get_task(task_id).map(GetTaskResult::new)
    }

    /// `tasks/cancel` for `identity`.
    pub(crate) fn cancel(&self, task_id: &str, identity: &Identity) -> Result<(), ErrorData> {
        self.check_owner(task_id, identity)?;
        self.manager.cancel_task(task_id)
    }
}

/// Declares the tasks extension in `capabilities` when the registry has a long-running tool.
pub(crate) fn advertise(registry: &ToolRegistry, capabilities: &mut ServerCapabilities) {
    if registry
        .list()
        .iter()
        .any(|descriptor| descriptor.long_running)
    {
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
    }
}

/// Whether a call of `name` becomes a task: the tool runs long and the client declared the
/// tasks extension.
pub(crate) fn answers_with_task(
    registry: &ToolRegistry,
    name: &str,
    context: &RequestContext<RoleServer>,
) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
        && registry
            .find(name)
            .is_some_and(|descriptor| descriptor.long_running)
}

/// Starts the call as a task and answers with it at once. `tasks/get` reports it working (its
/// status message is the call's last progress report), then its result; `tasks/cancel` drops
/// the call, which cancels a workflow's run (it compensates).
pub(crate) fn start(
    tasks: &Tasks,
    identity: &Identity,
    registry: ToolRegistry,
    request: CallToolRequestParams,
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
                let call = registry.invoke(&name, params, &call_context);
                tokio::select! {
                    outcome = call => {
                        let returns_content = || {
                            registry
                                .find(&name)
                                .is_some_and(|descriptor| descriptor.returns_content())
                        };
                        result::call_result(outcome, returns_content).map_err(TaskExit::Error)
                    }
                    () = task_context.cancelled() => Err(TaskExit::Cancelled),
                }
            })
        });
    let mut owners = tasks.owners();
    // The manager forgets a task some time after it ends: so do the owners.
    owners.retain(|id, _| tasks.manager.get_task(id).is_ok());
    owners.insert(task.task_id.clone(), owner_of(identity));
    drop(owners);
    CallToolResponse::Task(CreateTaskResult::new(task))
}

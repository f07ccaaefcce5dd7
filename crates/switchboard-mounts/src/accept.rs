//! Accepting what a running server offers now: [`crate::Mounts::accept`], and the run-time tool
//! `mounts_accept_changes` that brings the same act to the approval flow.
//!
//! Accepting is done by the server's actor: it lists the server's tools, pins them as accepted
//! in the lock file ([`crate::pins`]), and admits them again, so quarantined tools are exposed
//! at once. The tool is `restricted`: an agent cannot run it, but may propose it (with
//! `ToolRegistry::propose`, or by calling it under `AgentMutations::Propose`), and a person who
//! holds its permission approves the proposal, which runs it once, as that person.

use std::{borrow::Cow, sync::Arc};

use ractor::ActorRef;
use serde_json::{Value, json};
use switchboard_core::{BoxFuture, Category, ToolContext, ToolDescriptor, ToolError, ToolOrigin};
use switchboard_registry::{Exposure, RuntimeTool, RuntimeToolSpec};

use crate::{
    actor::ServerMsg,
    error::StartError,
    pins::{LockError, PinChanges},
    supervisor::SupervisorMsg,
};

/// The name of the run-time tool that accepts a mounted server's current tools.
pub const MOUNTS_ACCEPT_TOOL: &str = "mounts_accept_changes";

/// The permission `mounts_accept_changes` needs.
pub const MOUNTS_ACCEPT_PERMISSION: &str = "mounts.accept";

/// The code of the error of a `mounts_accept_changes` call that accepted nothing.
pub const MOUNTS_ACCEPT_FAILED: &str = "mounts_accept_failed";

/// Why a server's current tools were not accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcceptError {
    /// No mounted server has this id.
    #[error("no mounted server has the id `{id}`; the servers are: {}", known.join(", "))]
    UnknownServer {
        /// The id asked for.
        id: String,
        /// The ids there are.
        known: Vec<String>,
    },
    /// The server is not serving, so what it offers cannot be seen.
    #[error("mounted server `{id}` is not serving ({reason}); accept its tools once it is up")]
    Unavailable {
        /// The server.
        id: String,
        /// Why.
        reason: String,
    },
    /// Its tools could not be listed.
    #[error("mounted server `{id}`: cannot list its tools: {reason}")]
    ListTools {
        /// The server.
        id: String,
        /// Why.
        reason: String,
    },
    /// It could not be started to see what it offers.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The lock file could not be read or written.
    #[error(transparent)]
    Lock(#[from] LockError),
}

/// Has the actor of server `id` accept what the server offers now.
pub(crate) async fn through(
    supervisor: &ActorRef<SupervisorMsg>,
    id: &str,
) -> Result<PinChanges, AcceptError> {
    let unavailable = |reason: String| AcceptError::Unavailable {
        id: id.to_owned(),
        reason,
    };
    let found = ractor::call!(supervisor, |reply| SupervisorMsg::Actor(
        id.to_owned(),
        reply
    ))
    .map_err(|error| unavailable(error.to_string()))?;
    let actor = found.map_err(|known| AcceptError::UnknownServer {
        id: id.to_owned(),
        known,
    })?;
    ractor::call!(actor, ServerMsg::Accept).map_err(|error| unavailable(error.to_string()))?
}

/// The run-time tool `mounts_accept_changes`, accepting through `supervisor`'s server actors.
pub(crate) fn tool_spec(supervisor: ActorRef<SupervisorMsg>) -> RuntimeToolSpec {
    let input_schema = json!({
        "type": "object",
        "properties": {
            "server": {
                "type": "string",
                "description": "The id of the mounted server whose tools, as it offers them now, become the accepted ones."
            }
        },
        "required": ["server"],
        "additionalProperties": false
    });
    let names = json!({"type": "array", "items": {"type": "string"}});
    let output_schema = json!({
        "type": "object",
        "properties": {
            "server": {"type": "string"},
            "instructions_changed": {"type": "boolean"},
            "added": names,
            "changed": names,
            "removed": names
        },
        "required": ["server", "instructions_changed", "added", "changed", "removed"]
    });
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Borrowed(MOUNTS_ACCEPT_TOOL),
            title: Some(Cow::Borrowed("Accept a mounted server's changed tools")),
            domain: Cow::Borrowed("mounts"),
            category: Category::Restricted,
            permission: Cow::Borrowed(MOUNTS_ACCEPT_PERMISSION),
            description: Cow::Borrowed(
                "Accepts the tools a mounted MCP server offers now as the ones it may expose: \
                 tools quarantined because their definition, the server's instructions or its \
                 set of tools changed since they were accepted are exposed again. Review the \
                 change first (`switchboard mounts accept ID` shows it as a diff).",
            ),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: None,
            input_schema: Arc::new(input_schema),
            output_schema: Some(Arc::new(output_schema)),
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "switchboard-mounts (rug-pull protection)".to_owned(),
            },
        },
        tool: Arc::new(AcceptTool { supervisor }),
        exposure: Exposure::Listed,
    }
}

/// The body of `mounts_accept_changes`.
struct AcceptTool {
    supervisor: ActorRef<SupervisorMsg>,
}

impl RuntimeTool for AcceptTool {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let server = params
                .get("server")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let changes = through(&self.supervisor, server)
                .await
                .map_err(|error| ToolError::new(MOUNTS_ACCEPT_FAILED, error.to_string()))?;
            Ok(json!({
                "server": server,
                "instructions_changed": changes.instructions_changed,
                "added": changes.added,
                "changed": changes.changed,
                "removed": changes.removed,
            }))
        })
    }
}

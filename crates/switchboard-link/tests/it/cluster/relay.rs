//! The `relay` domain the cluster tests link: a read that names the node whose registry
//! holds the domain, and a mutation that writes a line to a file each time it runs (so that a
//! test can count its runs across a kill of the serving process) and then holds for a while.

use std::{io::Write as _, time::Duration};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{NoInput, ToolContext, ToolError, ToolInput, tool};
use validator::Validate;

/// The node that holds the domain, and where the mutation records its runs.
#[derive(Debug, Clone)]
pub(crate) struct RelayState {
    pub(crate) served_by: String,
    pub(crate) runs: Option<std::path::PathBuf>,
}

impl RelayState {
    fn unnamed() -> Self {
        Self {
            served_by: "an unnamed node".to_owned(),
            runs: None,
        }
    }
}

switchboard_core::domain! {
    /// A domain whose state names the node that holds it.
    pub(crate) Relay { name: "relay", state: RelayState = RelayState::unnamed }
}

/// The node whose registry runs the call.
#[tool(domain = Relay, category = read, permission = "relay.read")]
async fn served_by(ctx: &ToolContext<RelayState>, _input: NoInput) -> Result<String, ToolError> {
    Ok(ctx.state().served_by.clone())
}

/// How long the mutation holds after recording its run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
pub(crate) struct StampInput {
    /// Milliseconds.
    #[validate(range(max = 60_000))]
    pub(crate) hold_ms: u64,
}

/// Where a mutation ran and the key it ran under.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Stamped {
    served_by: String,
    key: Option<String>,
}

/// Records a run (a line in the runs file), holds, and says where it ran.
#[tool(domain = Relay, category = execute, permission = "relay.stamp")]
async fn stamp(ctx: &ToolContext<RelayState>, input: StampInput) -> Result<Stamped, ToolError> {
    let state = ctx.state();
    if let Some(runs) = &state.runs {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(runs)
            .map_err(|error| ToolError::new("runs_file", error.to_string()))?;
        writeln!(file, "ran").map_err(|error| ToolError::new("runs_file", error.to_string()))?;
    }
    tokio::time::sleep(Duration::from_millis(input.hold_ms)).await;
    Ok(Stamped {
        served_by: state.served_by.clone(),
        key: ctx.action().map(|action| action.key.to_string()),
    })
}

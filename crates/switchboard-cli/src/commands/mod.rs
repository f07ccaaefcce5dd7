//! The commands, and what they share: preparing the inputs before the runtime boots, and
//! fetching a call's audit records after it ran.
//!
//! Each command module takes the running [`Switchboard`] and its parsed arguments, prints what
//! it has to say, and returns how the run ended; none of them exits the process.

mod ask;
mod call;
pub(crate) mod proposals;
mod schema;
mod serve;
mod tools;

use anyhow::Context as _;
use serde_json::Value;
use switchboard::{AuditQuery, AuditRecord, Switchboard, ToolRegistry};

use crate::{
    app::{Exit, UsageError},
    args::{AskArgs, CallArgs, Command, SchemaArgs, ToolsArgs},
    commands::serve::Transport,
    params,
};

/// A command whose inputs have been checked, ready to run against the runtime.
#[derive(Debug)]
pub(crate) enum Ready {
    /// `tools`.
    Tools(ToolsArgs),
    /// `schema`.
    Schema(SchemaArgs),
    /// `call`, with its params parsed.
    Call(CallArgs, Value),
    /// `ask`.
    Ask(AskArgs),
    /// `serve`, with its transport configured (identity or token file, HTTP options).
    Serve(Transport),
    /// `proposals`, `approve` or `reject`.
    Decide(proposals::Decision),
}

impl Ready {
    /// Checks what can be checked without the runtime: that `PARAMS_JSON` is JSON, and that
    /// `serve` knows who its clients act as (identity flags or a valid token file) and may
    /// listen where it was asked to.
    pub(crate) fn prepare(command: Command) -> Result<Self, UsageError> {
        Ok(match command {
            Command::Tools(args) => Ready::Tools(args),
            Command::Schema(args) => Ready::Schema(args),
            Command::Call(args) => {
                let params = params::read(&args.params)?;
                Ready::Call(args, params)
            }
            Command::Ask(args) => Ready::Ask(args),
            Command::Serve(args) => Ready::Serve(Transport::prepare(args)?),
            Command::Proposals(args) => Ready::Decide(proposals::Decision::List(args)),
            Command::Approve(args) => Ready::Decide(proposals::Decision::Approve(args)),
            Command::Reject(args) => Ready::Decide(proposals::Decision::Reject(args)),
        })
    }

    /// Runs the command.
    pub(crate) async fn run(self, switchboard: &Switchboard) -> anyhow::Result<Exit> {
        match self {
            Ready::Tools(args) => tools::run(&switchboard.registry, &args),
            Ready::Schema(args) => schema::run(&switchboard.registry, &args),
            Ready::Call(args, params) => call::run(&switchboard.registry, args, params).await,
            Ready::Ask(args) => ask::run(switchboard, args).await,
            Ready::Serve(transport) => serve::run(&switchboard.registry, transport).await,
            Ready::Decide(decision) => proposals::run(&switchboard.registry, decision).await,
        }
    }
}

/// The audit records of one correlation id, oldest first (the store answers newest first).
async fn audit_of(
    registry: &ToolRegistry,
    correlation_id: &str,
) -> anyhow::Result<Vec<AuditRecord>> {
    let mut records = registry
        .audit()
        .query(&AuditQuery::correlation(correlation_id))
        .await
        .with_context(|| {
            format!("could not read the audit records of correlation {correlation_id}")
        })?;
    records.reverse();
    Ok(records)
}

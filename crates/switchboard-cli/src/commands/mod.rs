//! The commands, and what they share: preparing the inputs before the runtime boots, and
//! fetching a call's audit records after it ran.
//!
//! Each command module takes the running [`Switchboard`] and its parsed arguments, prints what
//! it has to say, and returns how the run ended; none of them exits the process.

mod ask;
pub(crate) mod audit;
mod call;
pub(crate) mod mounts;
pub(crate) mod navigate;
mod pages;
mod prompts;
pub(crate) mod proposals;
mod schema;
mod serve;
mod tools;
mod workflow;

pub(crate) use tools::{health as tools_health, placement as tools_placement};

use anyhow::Context as _;
use serde_json::Value;

use switchboard::{AuditQuery, AuditRecord, Switchboard, ToolRegistry};

use crate::{
    app::{Exit, UsageError},
    approvals_setup::ApprovalsSetup,
    args::{
        AskArgs, CallArgs, Command, MountsAcceptArgs, MountsAction, MountsArgs, PromptArgs,
        PromptsArgs, SchemaArgs, ToolsArgs, WorkflowArgs,
    },
    audit_setup::AuditSetup,
    commands::serve::Serving,
    config_file::ServeFile,
    mounts_setup::MountsSetup,
    params,
    workflows_setup::{Workflows, WorkflowsChoice},
};

/// A command whose inputs have been checked, ready to run against the runtime.
#[derive(Debug)]
pub(crate) enum Ready {
    /// `tools`.
    Tools(ToolsArgs),
    /// `schema`.
    Schema(SchemaArgs),
    /// `prompts`.
    Prompts(PromptsArgs),
    /// `prompt`.
    Prompt(PromptArgs),
    /// `call`, with its params parsed.
    Call(CallArgs, Value),
    /// `ask`.
    Ask(AskArgs),
    /// `navigate`.
    Navigate(navigate::NavigateArgs),
    /// `act`, with its params parsed.
    Act(navigate::ActArgs, Value),
    /// `serve`, with its transport configured (identity or token file, HTTP options), and
    /// whether `--conformance` was given.
    Serve(Serving, bool),
    /// `proposals`, `approve` or `reject`, and where the proposals are kept.
    Decide(proposals::Decision, proposals::Kept),
    /// `mounts`.
    Mounts(MountsArgs),
    /// `workflow`, with the approvals store in use (named in the commands a paused run prints).
    Workflow(WorkflowArgs, crate::config_file::StoreChoice),
}

/// What a checked command line runs against.
pub(crate) enum Prepared {
    /// A command that needs the runtime.
    Runtime(Ready),
    /// `audit`: reads a store (or finds none), no runtime.
    Audit(audit::AuditArgs, audit::Source),
    /// `mounts accept`: starts one mounted server itself, no runtime.
    MountsAccept(MountsAcceptArgs),
}

impl Ready {
    /// Checks what can be checked without the runtime: that `PARAMS_JSON` is JSON, that the
    /// ids given with flags are ids, and that `serve` knows who its clients act as (identity
    /// flags or a valid token file) and may listen where it was asked to. `kept` is where the
    /// proposals `proposals`, `approve` and `reject` act on are kept.
    pub(crate) fn prepare(
        command: Command,
        setup: &AuditSetup,
        approvals: &ApprovalsSetup,
        kept: proposals::Kept,
        serve_file: &ServeFile,
    ) -> Result<Prepared, UsageError> {
        Ok(Prepared::Runtime(match command {
            Command::Tools(args) => Ready::Tools(args),
            Command::Schema(args) => Ready::Schema(args),
            Command::Prompts(args) => Ready::Prompts(args),
            Command::Prompt(args) => {
                args.identity.check_ids()?;
                Ready::Prompt(args)
            }
            Command::Call(args) => {
                args.identity.check_ids()?;
                let params = params::read(&args.params)?;
                Ready::Call(args, params)
            }
            Command::Ask(args) => {
                args.identity.check_ids()?;
                Ready::Ask(args)
            }
            Command::Navigate(args) => {
                args.identity.check_ids()?;
                Ready::Navigate(args)
            }
            Command::Act(args) => {
                args.identity.check_ids()?;
                let params = navigate::action_params(&args)?;
                Ready::Act(args, params)
            }
            Command::Serve(args) => {
                let conformance = args.conformance;
                let stores = serve::KeptStores {
                    audit: setup.store.clone(),
                    approvals: approvals.store.clone(),
                    remote_roster: None,
                };
                Ready::Serve(Serving::prepare(args, serve_file, stores)?, conformance)
            }
            Command::Proposals(args) => {
                args.identity.check_ids()?;
                Ready::Decide(proposals::Decision::List(args), kept)
            }
            Command::Approve(args) => {
                args.identity.check_ids()?;
                Ready::Decide(proposals::Decision::Approve(args), kept)
            }
            Command::Reject(args) => {
                args.identity.check_ids()?;
                Ready::Decide(proposals::Decision::Reject(args), kept)
            }
            Command::Mounts(MountsArgs {
                action: Some(MountsAction::Accept(args)),
                ..
            }) => return Ok(Prepared::MountsAccept(args)),
            Command::Mounts(args) => Ready::Mounts(args),
            Command::Workflow(args) => Ready::Workflow(args, approvals.store.clone()),
            Command::Audit(args) => {
                let (args, store) = audit::prepare(args, setup)?;
                return Ok(Prepared::Audit(args, store));
            }
            Command::LinkKey(_) => {
                return Err(UsageError::new(
                    "link-key needs no runtime: it is handled before the commands are prepared",
                ));
            }
        }))
    }

    /// `serve` with the config file's links (see `Serving::with_link`); any other command as
    /// it is.
    pub(crate) fn with_link(self, link: &crate::link_setup::LinkSetup) -> Self {
        match self {
            Ready::Serve(serving, conformance) => {
                Ready::Serve(serving.with_link(link), conformance)
            }
            ready => ready,
        }
    }

    /// Runs the command, with the mounted servers `--mounts` started, if any.
    pub(crate) async fn run(
        self,
        switchboard: &Switchboard,
        mounts: Option<&MountsSetup>,
        workflows: &Workflows,
    ) -> anyhow::Result<Exit> {
        match self {
            Ready::Tools(args) => tools::run(&switchboard.registry, &args),
            Ready::Schema(args) => schema::run(&switchboard.registry, &args),
            Ready::Prompts(args) => prompts::list(&switchboard.registry, &args),
            Ready::Prompt(args) => prompts::render(&switchboard.registry, args).await,
            Ready::Call(args, params) => call::run(&switchboard.registry, args, params).await,
            Ready::Ask(args) => ask::run(switchboard, args).await,
            Ready::Navigate(args) => navigate::navigate(&switchboard.registry, args).await,
            Ready::Act(args, params) => navigate::act(&switchboard.registry, args, params).await,
            // Boxed: serving holds the server (and its navigator) for the whole run, a large
            // future that the other commands should not carry (clippy::large_futures).
            Ready::Serve(serving, _) => {
                let instructions = match mounts {
                    Some(mounts) => mounts.instructions().await,
                    None => None,
                };
                Box::pin(serve::run(
                    &switchboard.registry,
                    serving,
                    instructions,
                    mounts,
                    workflows,
                ))
                .await
            }
            Ready::Decide(decision, kept) => {
                proposals::run(&switchboard.registry, decision, &kept).await
            }
            Ready::Mounts(args) => mounts::run(mounts, &args).await,
            Ready::Workflow(args, approvals) => {
                Box::pin(workflow::run(
                    &switchboard.registry,
                    workflows,
                    args,
                    &approvals,
                ))
                .await
            }
        }
    }

    /// Where the process's workflow engine keeps runs, and how it holds their leases: what a
    /// `workflow` command or `serve` chose, else memory (the runs of an exported workflow
    /// called by `call` end with the process).
    pub(crate) fn workflow_store(&self) -> Result<WorkflowsChoice, UsageError> {
        match self {
            Ready::Serve(serving, _) => Ok(serving.workflows_choice()),
            Ready::Workflow(args, _) => match args.action.store_args() {
                Some(store) => store.choice(),
                None => Ok(WorkflowsChoice::memory()),
            },
            _ => Ok(WorkflowsChoice::memory()),
        }
    }

    /// Whether the command shows the mounted servers itself (`mounts`), so that a server that
    /// does not start is not reported a second time on standard error.
    pub(crate) fn shows_mounts(&self) -> bool {
        matches!(self, Ready::Mounts(_))
    }

    /// Whether the registry keeps the MCP conformance suite's tools: only for
    /// `serve --conformance`.
    pub(crate) fn wants_conformance_tools(&self) -> bool {
        matches!(self, Ready::Serve(_, true))
    }
}

/// Opens the thread a call names (`--thread`) for its user, as the MCP server does on a
/// thread's first use. The CLI keeps no threads between runs: each process starts with none,
/// so the flag scopes the call (derived idempotency keys, proposals) and ownership is as
/// strong as the `--user` flag that asserts it.
fn open_thread(registry: &ToolRegistry, context: &switchboard::CallContext) {
    if let (Some(org_id), Some(user_id), Some(thread_id)) =
        (&context.org_id, &context.user_id, &context.thread_id)
    {
        registry
            .threads()
            .open_if_absent(org_id, thread_id, user_id);
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

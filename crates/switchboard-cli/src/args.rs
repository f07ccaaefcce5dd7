//! The command line as clap parses it: the commands and their flags.
//!
//! These names are a contract: scripts, tests and `docs/cli.md` rely on them, so a flag is
//! never renamed. Identity flags live in [`crate::identity`], because turning them into a call
//! context (and minting the ids nobody gave) is its own job. Nothing here touches the runtime.
//!
//! Each command takes the flags it uses and no others, so its `--help` lists only what
//! changes what it does: the permission matrix and the stores ([`RegistryArgs`]) belong to the
//! commands that call tools, the audit store alone to `audit`, and none of them to `tools` or
//! `schema`. Which store each command uses when none is named is [`crate::store_defaults`]'s. They follow the command's name (`switchboard call --audit sqlite:PATH ...`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::{
    approvals_setup::ApprovalsArgs,
    audit_setup::{AuditStoreArgs, AuditWriterArgs},
    commands::audit::AuditArgs,
    commands::navigate::{ActArgs, NavigateArgs},
    commands::proposals::{ApproveArgs, ProposalsArgs, RejectArgs},
    identity::IdentityArgs,
    workflows_setup::StateDirArgs,
};

mod catalog;
mod mounts;
mod serve;
mod workflow;
mod workflow_answer;

pub(crate) use catalog::{PromptArgs, PromptsArgs, SchemaArgs, SchemaFormat, ToolsArgs};
pub(crate) use mounts::{MountArgs, MountsAcceptArgs, MountsAction, MountsArgs};
pub(crate) use serve::ServeArgs;
pub(crate) use workflow::{
    WorkflowAction, WorkflowArgs, WorkflowListArgs, WorkflowRunArgs, WorkflowRunIdArgs,
    WorkflowShowArgs, WorkflowValidateArgs,
};
pub(crate) use workflow_answer::WorkflowAnswerArgs;

/// Text shown after `--help`: where identity comes from, and the exit codes.
const AFTER_HELP: &str = "\
Identity (for `call`, `ask`, `navigate`, `act` and `serve`) comes from --org, --user, --role, --initiator or
from the environment: SWITCHBOARD_ORG, SWITCHBOARD_USER, SWITCHBOARD_ROLE (comma-separated)
and SWITCHBOARD_INITIATOR. The organisation and the user are never guessed: leave them out and
the call is refused with `missing_context` (and `serve` refuses to start). Session and
correlation ids are minted (`cli-<uuid>`) unless given. `serve` defaults to --initiator agent.

The permission matrix and the stores (--permissions, --audit, --approvals, --config and the
others) follow the name of a command that uses them; `switchboard call --help` lists them.

Exit codes: 0 success; 1 the call was refused or failed (or `schema` named no tool, or\n`workflow validate` found problems);
2 usage error (bad flags, PARAMS_JSON that is not JSON, an unreadable permission file,
`serve` without --org or --user, an unreadable or invalid --tokens or --oauth file, `serve --http`
on a non-loopback address without --tokens or --oauth, a `serve --domains` name that is not a
linked domain, an invalid --config file, an --audit or --approvals store that cannot be opened,
an unreadable, malformed or short `serve` requestState key);
3 the runtime itself failed; 4 a workflow run paused (`workflow run` and `resume`
print what it waits for). Under --json, usage errors and runtime failures are printed as
{\"error\": {\"kind\": \"usage_error\" or \"internal_error\", \"message\"}} on standard output.";

/// Switchboard: list, describe and call the audited tools linked into this binary, or ask for
/// them in words.
#[derive(Debug, Parser)]
#[command(name = "switchboard", version, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List every tool: name, domain, category, permission and description.
    Tools(ToolsArgs),
    /// Print one tool's definition, as an MCP server or the Anthropic API expects it.
    Schema(SchemaArgs),
    /// Call a tool by name with JSON params, and print its result and audit record.
    Call(CallArgs),
    /// List every prompt: name, description and arguments (`*` marks a required one).
    Prompts(PromptsArgs),
    /// Render a prompt by name with `--arg NAME=VALUE` arguments, and print its messages.
    Prompt(PromptArgs),
    /// Route an utterance through the orchestrator, call the tool it reaches, and print the
    /// route, the result and the audit record.
    Ask(AskArgs),
    /// Open a page at a URL (`/` lists them) and print it with the actions offered to you
    /// there, as markdown (or JSON with its version and audit records).
    Navigate(NavigateArgs),
    /// Run an action a page offers, and print its result and the page it leads to.
    Act(ActArgs),
    /// Serve every tool the identity may call to an MCP client, over stdio or streamable HTTP.
    Serve(ServeArgs),
    /// List the audit records `serve` keeps in the state directory (or another store's), or
    /// export them.
    Audit(AuditArgs),
    /// List the proposals of your organisation that `serve` keeps in the state directory (or
    /// another store's).
    Proposals(ProposalsArgs),
    /// Approve a pending proposal: its tool runs once, as you.
    Approve(ApproveArgs),
    /// Reject a pending proposal, with feedback for its proposer.
    Reject(RejectArgs),
    /// Start the MCP servers a mounts file lists, and show each one's state, process id,
    /// restarts, tools, quarantined tools and last error; then close them. `mounts accept ID`
    /// reviews and accepts a server's changed tools.
    Mounts(MountsArgs),
    /// Workflows of tool calls (docs/workflows.md): `validate` a definition file, `run` it,
    /// `list`, `show`, `cancel` and `resume` runs (kept in the state directory by default).
    Workflow(WorkflowArgs),
    /// The keys that sign the identity statements of calls to domains on other nodes:
    /// `link-key new PATH` writes a fresh Ed25519 key and its public key (PATH.pub).
    LinkKey(LinkKeyArgs),
}

/// `switchboard link-key new PATH`.
#[derive(Debug, Args)]
pub(crate) struct LinkKeyArgs {
    /// What to do.
    #[command(subcommand)]
    pub(crate) action: LinkKeyAction,
}

/// The `link-key` commands.
#[derive(Debug, Subcommand)]
pub(crate) enum LinkKeyAction {
    /// Write a fresh Ed25519 signing key to PATH (PKCS#8 PEM, mode 0600) and its public key
    /// to PATH.pub (SPKI PEM); refuses to overwrite either.
    New {
        /// Where the private key goes; the public key goes to PATH.pub.
        #[arg(value_name = "PATH")]
        path: PathBuf,
    },
}

impl Command {
    /// Whether `--json` was given, so that a failure before the command runs is reported as
    /// JSON too.
    pub(crate) fn wants_json(&self) -> bool {
        match self {
            Command::Tools(args) => args.json,
            Command::Call(args) => args.json,
            Command::Prompts(args) => args.json,
            Command::Prompt(args) => args.json,
            Command::Ask(args) => args.json,
            Command::Navigate(args) => args.json,
            Command::Act(args) => args.json,
            Command::Audit(args) => args.json,
            Command::Proposals(args) => args.json,
            Command::Approve(args) => args.json,
            Command::Reject(args) => args.json,
            Command::Mounts(args) => args.json,
            Command::Workflow(args) => args.action.json(),
            Command::Schema(_) | Command::Serve(_) | Command::LinkKey(_) => false,
        }
    }

    /// The permission matrix and store flags as this command took them: `audit` takes only the
    /// audit store and the config file, and `tools` and `schema`, which call no tool, run on
    /// the defaults.
    pub(crate) fn registry_args(&self) -> RegistryArgs {
        match self {
            Command::Call(args) => args.registry.clone(),
            Command::Prompt(args) => args.registry.clone(),
            Command::Ask(args) => args.registry.clone(),
            Command::Navigate(args) => args.registry.clone(),
            Command::Act(args) => args.registry.clone(),
            Command::Serve(args) => args.registry.clone(),
            Command::Proposals(args) => args.registry.clone(),
            Command::Approve(args) => args.registry.clone(),
            Command::Reject(args) => args.registry.clone(),
            Command::Audit(args) => RegistryArgs {
                audit: args.store.clone(),
                ..RegistryArgs::default()
            },
            Command::Workflow(args) => args.action.registry_args(),
            // `tools` reads the config file for its remote domains.
            Command::Tools(args) => RegistryArgs {
                audit: AuditStoreArgs {
                    config: args.config.clone(),
                    ..AuditStoreArgs::default()
                },
                ..RegistryArgs::default()
            },
            Command::Schema(_) | Command::Mounts(_) | Command::Prompts(_) | Command::LinkKey(_) => {
                RegistryArgs::default()
            }
        }
    }

    /// The mounted MCP servers this command asked for: `serve`, `call`, `ask`, `tools` and
    /// `workflow run | resume | cancel` take
    /// `--mounts`; the others mount nothing.
    pub(crate) fn mount_args(&self) -> MountArgs {
        match self {
            Command::Tools(args) => args.mounts.clone(),
            Command::Call(args) => args.mounts.clone(),
            Command::Ask(args) => args.mounts.clone(),
            Command::Serve(args) => args.mounts.clone(),
            // `mounts accept` has no FILE: it starts its one server itself.
            Command::Mounts(args) => MountArgs {
                mounts: args.file.clone(),
                mounts_strict: false,
                strict_remote: false,
            },
            Command::Workflow(args) => match &args.action {
                WorkflowAction::Run(args) => args.mounts.clone(),
                WorkflowAction::Resume(args) => args.run.mounts.clone(),
                WorkflowAction::Answer(args) => args.run.mounts.clone(),
                WorkflowAction::Cancel(args) => args.mounts.clone(),
                _ => MountArgs::default(),
            },
            // Pages are the linked domains'; a mounted server has none.
            Command::Schema(_)
            | Command::Prompts(_)
            | Command::Prompt(_)
            | Command::Navigate(_)
            | Command::Act(_)
            | Command::Audit(_)
            | Command::Proposals(_)
            | Command::Approve(_)
            | Command::Reject(_)
            | Command::LinkKey(_) => MountArgs::default(),
        }
    }
}

/// The flags of every command that calls tools through the registry: the permission matrix,
/// and where audit records, proposals and idempotency keys are kept.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Permissions")]
pub(crate) struct RegistryArgs {
    /// Use this TOML role → permission matrix instead of the built-in one
    /// (format: `[roles]` then `role = ["pattern", ...]`).
    #[arg(long, value_name = "FILE")]
    pub(crate) permissions: Option<PathBuf>,

    /// Where audit records go, and the config file.
    #[command(flatten)]
    pub(crate) audit: AuditStoreArgs,

    /// How audit records are acknowledged and kept.
    #[command(flatten)]
    pub(crate) audit_writer: AuditWriterArgs,

    /// Where proposals and idempotency keys are kept, and what an agent's mutation does.
    #[command(flatten)]
    pub(crate) approvals: ApprovalsArgs,
}

/// `switchboard call TOOL [PARAMS_JSON] [IDENTITY] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool's name (see `switchboard tools`).
    #[arg(value_name = "TOOL")]
    pub(crate) tool: String,

    /// The params, as one JSON value (usually an object); `-` reads them from standard input.
    /// Never put `org_id` here: the organisation comes from --org.
    #[arg(value_name = "PARAMS_JSON", default_value = "{}")]
    pub(crate) params: String,

    /// Print one JSON object: `{"result", "audit"}` or `{"error", "audit"}`.
    #[arg(long)]
    pub(crate) json: bool,

    /// Who calls.
    #[command(flatten)]
    pub(crate) identity: IdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,

    /// Where an agent's proposals are kept.
    #[command(flatten)]
    pub(crate) state: StateDirArgs,

    /// Mounted MCP servers, whose tools can be called too.
    #[command(flatten)]
    pub(crate) mounts: MountArgs,
}

/// `switchboard ask "UTTERANCE" [IDENTITY] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct AskArgs {
    /// What you want, in words a declared intent matches (for example "who am I?").
    #[arg(value_name = "UTTERANCE")]
    pub(crate) utterance: String,

    /// Print one JSON object: `{"result", "route", "audit"}` or `{"error", "audit"}`.
    #[arg(long)]
    pub(crate) json: bool,

    /// Who asks.
    #[command(flatten)]
    pub(crate) identity: IdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,

    /// Where an agent's proposals are kept.
    #[command(flatten)]
    pub(crate) state: StateDirArgs,

    /// Mounted MCP servers, whose tools can be reached too.
    #[command(flatten)]
    pub(crate) mounts: MountArgs,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}

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

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::{
    approvals_setup::ApprovalsArgs,
    audit_setup::{AuditStoreArgs, AuditWriterArgs},
    commands::audit::AuditArgs,
    commands::navigate::{ActArgs, NavigateArgs},
    commands::proposals::{ApproveArgs, ProposalsArgs, RejectArgs},
    identity::{IdentityArgs, ServeIdentityArgs},
    workflows_setup::{StateDirArgs, WorkflowStoreArgs},
};
use switchboard_workflows::GraphFormat;

mod catalog;
mod workflow_answer;

pub(crate) use catalog::{PromptArgs, PromptsArgs, SchemaArgs, SchemaFormat, ToolsArgs};
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
on a non-loopback address without --tokens or --oauth, an invalid --config file, an --audit or --approvals
store that cannot be opened, an unreadable, malformed or short `serve` requestState key);
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
            Command::Schema(_) | Command::Serve(_) => false,
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
            Command::Tools(_) | Command::Schema(_) | Command::Mounts(_) | Command::Prompts(_) => {
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
            | Command::Reject(_) => MountArgs::default(),
        }
    }
}

/// The external MCP servers to mount behind the registry (docs/mounts.md).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Mounted MCP servers")]
pub(crate) struct MountArgs {
    /// Start the MCP servers this TOML file lists and add their tools (`{id}_{tool}`), checked
    /// and audited like every tool. A server that fails to start is reported and skipped.
    #[arg(long, value_name = "FILE")]
    pub(crate) mounts: Option<PathBuf>,

    /// Refuse to run unless every server of --mounts starts.
    #[arg(long, requires = "mounts")]
    pub(crate) mounts_strict: bool,
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

/// `switchboard mounts FILE [--json]`, or `switchboard mounts accept ID --mounts FILE`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct MountsArgs {
    /// Review and accept a server's changed tools.
    #[command(subcommand)]
    pub(crate) action: Option<MountsAction>,

    /// The mounts file (see docs/mounts.md).
    #[arg(value_name = "FILE", required = true)]
    pub(crate) file: Option<PathBuf>,

    /// Print a JSON array, one object per server.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `switchboard workflow ACTION`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowArgs {
    /// What to do with workflows.
    #[command(subcommand)]
    pub(crate) action: WorkflowAction,
}

/// The workflow commands.
#[derive(Debug, Subcommand)]
pub(crate) enum WorkflowAction {
    /// Check a definition file (YAML or JSON) and the sub-workflow files it names against the
    /// linked tools: print `ok: NAME, N nodes`, or every problem, one per line with its path.
    Validate(WorkflowValidateArgs),
    /// Start a run of a definition file and follow it until it ends or pauses. Exit code 0:
    /// completed; 1: failed or cancelled; 4: paused (it prints what the run waits for and the
    /// commands that continue it).
    Run(WorkflowRunArgs),
    /// List your organisation's runs, newest first.
    List(WorkflowListArgs),
    /// Draw a run (its stored definition, with each node's state) or a definition file.
    Show(WorkflowShowArgs),
    /// Cancel a run: the compensations of its completed steps run first.
    Cancel(WorkflowRunIdArgs),
    /// Continue a paused run, or one whose process stopped, in the foreground until it ends
    /// or pauses (same exit codes as `run`).
    Resume(WorkflowResumeArgs),
    /// Answer a question a run's step asked (a form, a completion); once the step has every
    /// answer, the run goes on in the foreground, as `resume` does.
    Answer(Box<WorkflowAnswerArgs>),
}

impl WorkflowAction {
    /// Whether `--json` was given.
    pub(crate) fn json(&self) -> bool {
        match self {
            WorkflowAction::Validate(args) => args.json,
            WorkflowAction::Run(args) => args.json,
            WorkflowAction::List(args) => args.json,
            WorkflowAction::Show(args) => args.json,
            WorkflowAction::Cancel(args) => args.json,
            WorkflowAction::Resume(args) => args.run.json,
            WorkflowAction::Answer(args) => args.run.json,
        }
    }

    /// The identity, registry and store flags of the actions that read or write runs;
    /// `validate` reads none.
    fn session(&self) -> Option<&WorkflowSessionArgs> {
        match self {
            WorkflowAction::Validate(_) => None,
            WorkflowAction::Run(args) => Some(&args.session),
            WorkflowAction::List(args) => Some(&args.session),
            WorkflowAction::Show(args) => Some(&args.session),
            WorkflowAction::Cancel(args) => Some(&args.session),
            WorkflowAction::Resume(args) => Some(&args.run.session),
            WorkflowAction::Answer(args) => Some(&args.run.session),
        }
    }

    /// The permission matrix and stores of the actions that run steps; `validate` runs none.
    pub(crate) fn registry_args(&self) -> RegistryArgs {
        self.session()
            .map(|session| session.registry.clone())
            .unwrap_or_default()
    }

    /// The workflow store flags, for the actions that read or write runs.
    pub(crate) fn store_args(&self) -> Option<&WorkflowStoreArgs> {
        self.session().map(|session| &session.store)
    }
}

/// Who acts (every step is a call as this identity), with which permission matrix and
/// stores, on which runs: what every workflow action that reads or writes runs takes.
#[derive(Debug, Args)]
pub(crate) struct WorkflowSessionArgs {
    #[command(flatten)]
    pub(crate) identity: IdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,

    /// Where runs are kept.
    #[command(flatten)]
    pub(crate) store: WorkflowStoreArgs,
}

/// `switchboard workflow run FILE [--input JSON | --input-file PATH] [--watch] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowRunArgs {
    /// The definition file (`.yaml`, `.yml` or `.json`).
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,

    /// The run's input, one JSON value (checked against the workflow's `input` schema).
    #[arg(long, value_name = "JSON", conflicts_with = "input_file")]
    pub(crate) input: Option<String>,

    /// Read the run's input from this JSON file (`-`: standard input).
    #[arg(long, value_name = "PATH")]
    pub(crate) input_file: Option<PathBuf>,

    /// Show the run's events as they happen, on standard error: live lines on a terminal, one
    /// line per event elsewhere. The result still goes to standard output.
    #[arg(long)]
    pub(crate) watch: bool,

    /// Print one JSON object: `{"run", "workflow", "state", "output", "steps", "waiting"?}`.
    #[arg(long)]
    pub(crate) json: bool,

    /// Who acts, with which permissions and stores, on which runs.
    #[command(flatten)]
    pub(crate) session: WorkflowSessionArgs,

    /// Mounted MCP servers, whose tools steps may call.
    #[command(flatten)]
    pub(crate) mounts: MountArgs,
}

/// `switchboard workflow list [--workflow NAME] [--unfinished] [--limit N] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowListArgs {
    /// Only this workflow's runs.
    #[arg(long, value_name = "NAME")]
    pub(crate) workflow: Option<String>,

    /// Only runs not yet completed, failed or cancelled.
    #[arg(long)]
    pub(crate) unfinished: bool,

    /// The most runs to list.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub(crate) limit: usize,

    /// Print `{"runs": [...]}`, each run as stored.
    #[arg(long)]
    pub(crate) json: bool,

    /// Who acts, with which permissions and stores, on which runs.
    #[command(flatten)]
    pub(crate) session: WorkflowSessionArgs,
}

/// `switchboard workflow show RUN|FILE [--format text|dot|mermaid] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowShowArgs {
    /// A run id (from `workflow run` or `workflow list`), or a definition file.
    #[arg(value_name = "RUN|FILE")]
    pub(crate) target: String,

    /// How to draw it: `text` (an indented tree), `dot` (Graphviz) or `mermaid`.
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub(crate) format: GraphFormat,

    /// Print JSON: a run as `{"run", "steps", "events"}`, a file as its definition document.
    #[arg(long)]
    pub(crate) json: bool,

    /// Who acts, with which permissions and stores, on which runs.
    #[command(flatten)]
    pub(crate) session: WorkflowSessionArgs,
}

/// `switchboard workflow cancel RUN [--json]`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowRunIdArgs {
    /// The run's id.
    #[arg(value_name = "RUN")]
    pub(crate) run: String,

    /// Print the result as JSON, as `workflow run --json` does.
    #[arg(long)]
    pub(crate) json: bool,

    /// Show the run's events on standard error while it goes on.
    #[arg(long)]
    pub(crate) watch: bool,

    /// Who acts, with which permissions and stores, on which runs.
    #[command(flatten)]
    pub(crate) session: WorkflowSessionArgs,

    /// Mounted MCP servers, whose tools steps may call.
    #[command(flatten)]
    pub(crate) mounts: MountArgs,
}

/// `switchboard workflow resume RUN [--watch] [--json]`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowResumeArgs {
    #[command(flatten)]
    pub(crate) run: WorkflowRunIdArgs,
}

/// `switchboard workflow validate FILE [--json]`.
#[derive(Debug, Args)]
pub(crate) struct WorkflowValidateArgs {
    /// The definition file (`.yaml`, `.yml` or `.json`).
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,

    /// Print one JSON object: `{"valid": true, "workflow", "nodes"}` or
    /// `{"valid": false, "problems": [{"path", "message", "file"?, "line"?, "column"?}]}`.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What `switchboard mounts` does besides showing the servers.
#[derive(Debug, Subcommand)]
pub(crate) enum MountsAction {
    /// Start one mounted server, show how its tools changed since they were accepted (a diff
    /// of each changed tool, new and removed tools, changed instructions), and, once you
    /// confirm, accept them as they are now: its quarantined tools are exposed again.
    Accept(MountsAcceptArgs),
}

/// `switchboard mounts accept ID --mounts FILE [--yes]`.
#[derive(Debug, Args)]
pub(crate) struct MountsAcceptArgs {
    /// The server's id in the mounts file.
    #[arg(value_name = "ID")]
    pub(crate) id: String,

    /// The mounts file; the accepted tools are pinned in the lock file beside it (`.lock`).
    #[arg(long, value_name = "FILE")]
    pub(crate) mounts: PathBuf,

    /// Accept without asking (otherwise asked on a terminal, and refused without one).
    #[arg(long)]
    pub(crate) yes: bool,
}

/// The values of `serve --navigation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum NavigationArg {
    /// The plain tools only.
    Off,
    /// `navigate` and `execute_action` only.
    Only,
    /// The plain tools, and `navigate` and `execute_action` beside them.
    Beside,
}

impl From<NavigationArg> for switchboard_mcp::NavigationMode {
    fn from(arg: NavigationArg) -> Self {
        match arg {
            NavigationArg::Off => Self::Off,
            NavigationArg::Only => Self::Only,
            NavigationArg::Beside => Self::Beside,
        }
    }
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

/// Where `serve` listens when `--http` is given without an address.
pub(crate) const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8080";

/// `switchboard serve (--stdio | --http [ADDR]) [IDENTITY]`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
pub(crate) struct ServeArgs {
    /// Speak MCP on standard input and output (for clients that spawn this process). Logs go
    /// to standard error.
    #[arg(long)]
    pub(crate) stdio: bool,

    /// Serve MCP over streamable HTTP at `http://ADDR/mcp`, and the navigation pages for people
    /// at every other path (`http://ADDR/` in a browser), until SIGTERM or Ctrl-C, then drain
    /// (--drain-timeout). `GET /healthz` and `GET /readyz` answer a platform's probes (see
    /// docs/deploy.md). Without --tokens every client acts as the identity flags, so ADDR must
    /// be a loopback address.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = DEFAULT_HTTP_ADDR
    )]
    pub(crate) http: Option<SocketAddr>,

    /// Also serve the reference tools of the official MCP conformance suite (`test_*`, domain
    /// `conformance`), for running that suite. Never for real clients; no other command has
    /// them.
    #[arg(long)]
    pub(crate) conformance: bool,

    /// Seal the approval states MCP clients echo back (`requestState`) with the key in FILE:
    /// 64 or more hex digits, such as `openssl rand -hex 32 > FILE`. SWITCHBOARD_STATE_KEY may
    /// hold the key itself instead. Without either, a key is generated for this process, and
    /// what it sealed is refused after a restart or by another replica.
    #[arg(long, value_name = "FILE")]
    pub(crate) state_key_file: Option<PathBuf>,

    /// The tools switched off (and back on) at start.
    #[command(flatten)]
    pub(crate) switches: crate::switches_setup::SwitchArgs,

    /// Offer navigation: the `navigate` and `execute_action` tools, which open pages at URLs
    /// and run the actions offered there, and the pages as MCP resources.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = NavigationArg::Off)]
    pub(crate) navigation: NavigationArg,

    /// Where workflow runs are kept (default: `sqlite:STATE_DIR/workflows.db`). At start, the
    /// server continues the unfinished runs it finds there.
    #[command(flatten)]
    pub(crate) workflow_store: WorkflowStoreArgs,

    /// Warn (once per run) about a running workflow run with no progress for this long:
    /// `15m`, `1h 30m`, `90s`.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "15m",
        help_heading = "Workflow store"
    )]
    pub(crate) stuck_after: jiff::SignedDuration,

    /// Who every MCP call acts as (on stdio, and on HTTP without --tokens).
    #[command(flatten)]
    pub(crate) identity: ServeIdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,

    /// Mounted MCP servers, whose tools are served too.
    #[command(flatten)]
    pub(crate) mounts: MountArgs,

    /// Authentication, DNS-rebinding protection, limits and sessions of `--http`.
    #[command(flatten)]
    pub(crate) http_options: ServeHttpArgs,

    /// Draining on SIGTERM, and the log format.
    #[command(flatten)]
    pub(crate) operate: crate::operate::OperateArgs,
}

/// The flags of `serve --http` only (see `docs/mcp.md`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "HTTP")]
pub(crate) struct ServeHttpArgs {
    /// Require `Authorization: Bearer <token>`: FILE (TOML) maps the SHA-256 of each token to
    /// the identity it acts as (org, user, roles, initiator). The identity flags are then not
    /// used. Hash a token with `printf %s "$TOKEN" | sha256sum`.
    #[arg(long, value_name = "FILE", conflicts_with = "stdio")]
    pub(crate) tokens: Option<PathBuf>,

    /// Require an OAuth 2.1 access token of the issuer FILE (TOML) names, its claims mapped to
    /// the identity (docs/mcp.md, "OAuth"); also `oauth` in the config file's `[serve]` table.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["stdio", "tokens"])]
    pub(crate) oauth: Option<PathBuf>,

    /// Also accept requests from web pages at this origin (`scheme://host[:port]`); repeatable.
    /// By default only the loopback origins of the bound port are accepted.
    #[arg(long = "allow-origin", value_name = "URL", conflicts_with = "stdio")]
    pub(crate) allow_origins: Vec<switchboard_mcp::AllowedOrigin>,

    /// Also answer to this `Host` header (host or host:port), for a server reached by a name or
    /// through a proxy; repeatable. By default: localhost, 127.0.0.1, ::1 and the bound address.
    #[arg(long = "allow-host", value_name = "HOST", conflicts_with = "stdio")]
    pub(crate) allow_hosts: Vec<switchboard_mcp::AllowedHost>,

    /// Refuse request bodies larger than this with 413 (at least 1024).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = DEFAULT_MAX_BODY_BYTES,
        value_parser = clap::value_parser!(u64).range(1024..)
    )]
    pub(crate) max_body_bytes: u64,

    /// Keep an MCP session this many seconds after its last request ended, so a client can
    /// reconnect to it; idle sessions are then swept.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = DEFAULT_SESSION_GRACE_SECS,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) session_grace: u64,

    /// Live MCP sessions allowed in all; a new `initialize` beyond it is refused with 503.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_mcp::DEFAULT_MAX_SESSIONS as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_sessions: u64,

    /// Live MCP sessions allowed per client (token; without tokens, peer address); a new
    /// `initialize` beyond it ends that client's longest-idle session, or is refused with 429.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_mcp::DEFAULT_MAX_SESSIONS_PER_PRINCIPAL as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_sessions_per_client: u64,

    /// Open connections allowed in all (lowered to fit the open-file limit); further ones wait
    /// until one closes.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_mcp::DEFAULT_MAX_CONNECTIONS as u64,
        value_parser = clap::value_parser!(u64).range(2..)
    )]
    pub(crate) max_connections: u64,

    /// Open connections allowed from one address (at most half of --max-connections); further
    /// ones are answered 503 and closed.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_mcp::DEFAULT_MAX_CONNECTIONS_PER_PEER as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_connections_per_peer: u64,

    /// Close a connection that has not sent a complete request head this many seconds after it
    /// opened or its previous response ended (slow senders and idle keep-alive connections).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = switchboard_mcp::DEFAULT_REQUEST_HEAD_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) request_head_timeout: u64,

    /// Answer 408 to a request whose body has not fully arrived after this many seconds.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = switchboard_mcp::DEFAULT_BODY_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) body_timeout: u64,
}

/// `--max-body-bytes` when not given: 4 MiB.
const DEFAULT_MAX_BODY_BYTES: u64 = 4 * 1024 * 1024;

/// `--session-grace` when not given: 10 minutes.
const DEFAULT_SESSION_GRACE_SECS: u64 = 600;

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn http_only_flags_need_http_and_their_defaults_do_not() {
        let parse = |args: &[&str]| Cli::try_parse_from(args.iter().copied());
        let stdio = parse(&["switchboard", "serve", "--stdio"]).expect("defaults are fine");
        let Command::Serve(serve) = stdio.command else {
            panic!("a serve command");
        };
        assert_eq!(serve.http_options.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
        assert_eq!(serve.http_options.session_grace, DEFAULT_SESSION_GRACE_SECS);
        for flags in [
            &["--tokens", "t.toml"][..],
            &["--oauth", "o.toml"],
            &["--allow-origin", "http://localhost:6274"],
            &["--allow-host", "mcp.example.com"],
        ] {
            let mut args = vec!["switchboard", "serve", "--stdio"];
            args.extend_from_slice(flags);
            assert!(parse(&args).is_err(), "{flags:?} without --http");
        }
        assert!(
            parse(&[
                "switchboard",
                "serve",
                "--http",
                "--allow-origin",
                "localhost:6274"
            ])
            .is_err(),
            "an origin needs a scheme"
        );
        assert!(parse(&["switchboard", "serve", "--http", "--max-body-bytes", "10"]).is_err());
        assert!(parse(&["switchboard", "serve", "--http", "--session-grace", "0"]).is_err());
    }
}

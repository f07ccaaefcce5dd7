//! The arguments of `switchboard workflow ACTION` (docs/workflows.md): every workflow action's
//! flags in one place, apart from the other commands', since they share the run's identity,
//! stores and output flags ([`WorkflowSessionArgs`], [`WorkflowRunIdArgs`]).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use switchboard_workflows::GraphFormat;

use super::{MountArgs, RegistryArgs, WorkflowAnswerArgs};
use crate::{identity::IdentityArgs, workflows_setup::WorkflowStoreArgs};

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

//! `switchboard proposals`, `switchboard approve ID` and `switchboard reject ID --feedback TEXT`:
//! the human side of approvals.
//!
//! Each runs as the identity given (a human, by default), through the registry's
//! `proposals` / `approve` / `reject`, so the same rules hold as in process: only a human of
//! the proposal's organisation holding the target tool's permission decides, an agent never,
//! and a decision is final. They act on the proposals `serve` keeps: by default those of the
//! state directory (`--state-dir`, `approvals.db`), else the file `--approvals sqlite:PATH` names,
//! so they decide what another process (a `serve`, an agent's `call`) proposed; with
//! `--approvals memory` a new process starts with none (docs/cli.md). A store file that does
//! not exist yet is never created: the command reads an empty store in its place and says that
//! nothing is kept there yet ([`Kept::NotYet`]).
//!
//! The text forms print what the store holds (ids, tool names, users, summaries, messages):
//! every such field goes through [`escape_controls`], so none can add a line or repaint the
//! terminal.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use switchboard::{InvokeError, Proposal, ProposalId, ToolRegistry};

use crate::{
    app::Exit, args::RegistryArgs, config_file::StoreChoice, escape::escape_controls, hints,
    identity::IdentityArgs, output, render, workflows_setup::StateDirArgs,
};

/// Where the proposals a `proposals`, `approve` or `reject` acts on are kept, as the command
/// tells its user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kept {
    /// In memory: none at start, gone at exit.
    Memory,
    /// In this SQLite file.
    File(PathBuf),
    /// In a PostgreSQL database (always there: the store creates its tables).
    Database,
    /// In this SQLite file, which does not exist yet: nothing was ever kept there. The command
    /// reads an empty store in memory in its place rather than create the file.
    NotYet(PathBuf),
}

impl Kept {
    /// Where `store` keeps proposals, looking for its file.
    pub(crate) fn of(store: &StoreChoice) -> Self {
        match store {
            StoreChoice::Memory => Kept::Memory,
            StoreChoice::Sqlite(path) if path.exists() => Kept::File(path.clone()),
            StoreChoice::Sqlite(path) => Kept::NotYet(path.clone()),
            StoreChoice::Postgres(_) => Kept::Database,
        }
    }

    /// "nothing is kept in PATH yet", with the path escaped.
    fn nothing_kept_yet(path: &std::path::Path) -> String {
        format!(
            "nothing is kept in {} yet",
            escape_controls(&path.display().to_string())
        )
    }
}

/// `proposals`.
#[derive(Debug, Args)]
pub(crate) struct ProposalsArgs {
    /// Print JSON (`{"proposals": [...]}` or `{"error": ...}`) instead of text.
    #[arg(long)]
    pub(crate) json: bool,

    #[command(flatten)]
    pub(crate) identity: IdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,

    /// Where `serve` keeps the proposals.
    #[command(flatten)]
    pub(crate) state: StateDirArgs,
}

/// `approve`.
#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The proposal to approve.
    #[arg(value_name = "ID")]
    pub(crate) id: String,

    /// Print JSON (`{"approved": ...}` or `{"error": ...}`) instead of text.
    #[arg(long)]
    pub(crate) json: bool,

    #[command(flatten)]
    pub(crate) identity: IdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,

    /// Where `serve` keeps the proposals.
    #[command(flatten)]
    pub(crate) state: StateDirArgs,
}

/// `reject`.
#[derive(Debug, Args)]
pub(crate) struct RejectArgs {
    /// The proposal to reject.
    #[arg(value_name = "ID")]
    pub(crate) id: String,

    /// Why, for the proposer.
    #[arg(long, value_name = "TEXT")]
    pub(crate) feedback: String,

    /// Print JSON (`{"rejected": ...}` or `{"error": ...}`) instead of text.
    #[arg(long)]
    pub(crate) json: bool,

    #[command(flatten)]
    pub(crate) identity: IdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,

    /// Where `serve` keeps the proposals.
    #[command(flatten)]
    pub(crate) state: StateDirArgs,
}

/// Which of the three commands.
#[derive(Debug)]
pub(crate) enum Decision {
    /// `proposals`.
    List(ProposalsArgs),
    /// `approve ID`.
    Approve(ApproveArgs),
    /// `reject ID --feedback TEXT`.
    Reject(RejectArgs),
}

/// Runs the command and prints its result; `kept` says where the proposals are kept (it
/// changes what an empty list and a refusal say).
pub(crate) async fn run(
    registry: &ToolRegistry,
    decision: Decision,
    kept: &Kept,
) -> anyhow::Result<Exit> {
    match decision {
        Decision::List(args) => {
            let context = args.identity.into_identity().context;
            let listed = registry.proposals(&context).await;
            report(registry, args.json, kept, listed, |proposals| {
                (
                    json!({ "proposals": proposals }),
                    list_text(proposals, kept),
                )
            })
        }
        Decision::Approve(args) => {
            let context = args.identity.into_identity().context;
            let approved = registry
                .approve(&ProposalId::from(args.id.trim()), &context)
                .await;
            report(registry, args.json, kept, approved, |approved| {
                (
                    json!({ "approved": approved }),
                    format!(
                        "approved {}: `{}` ran, result {}\n",
                        escape_controls(approved.proposal.id.as_str()),
                        escape_controls(&approved.proposal.tool),
                        // JSON: serde escapes the control characters of its strings.
                        approved.output
                    ),
                )
            })
        }
        Decision::Reject(args) => {
            let context = args.identity.into_identity().context;
            let rejected = registry
                .reject(&ProposalId::from(args.id.trim()), &args.feedback, &context)
                .await;
            report(registry, args.json, kept, rejected, |proposal| {
                (
                    json!({ "rejected": proposal }),
                    format!(
                        "rejected {}: nothing ran\n",
                        escape_controls(proposal.id.as_str())
                    ),
                )
            })
        }
    }
}

fn report<T>(
    registry: &ToolRegistry,
    json: bool,
    kept: &Kept,
    result: Result<T, InvokeError>,
    render: impl FnOnce(&T) -> (serde_json::Value, String),
) -> anyhow::Result<Exit> {
    match result {
        Ok(value) => {
            let (as_json, as_text) = render(&value);
            if json {
                output::write_stdout(&output::to_json(&as_json)?);
            } else {
                output::write_stdout(&as_text);
            }
            Ok(Exit::Success)
        }
        Err(error) => {
            if json {
                output::write_stdout(&output::to_json(&json!({ "error": error }))?);
            } else {
                let hints = match (&error, kept) {
                    (InvokeError::ProposalNotFound { .. }, Kept::NotYet(path)) => vec![format!(
                        "{}: name the --state-dir DIR of the `serve` that keeps the proposal \
                         (or --approvals sqlite:PATH)",
                        Kept::nothing_kept_yet(path)
                    )],
                    _ => hints::for_invoke(&error, registry.permissions()),
                };
                output::write_stderr(&render::decision_refusal(&error, &hints));
            }
            Ok(Exit::Refused)
        }
    }
}

fn list_text(proposals: &[Proposal], kept: &Kept) -> String {
    if proposals.is_empty() {
        return match kept {
            Kept::File(_) | Kept::Database => "no proposals\n".to_owned(),
            Kept::NotYet(path) => format!(
                "no proposals: {} (`serve` keeps an agent's proposals in its state directory's \
                 approvals.db: name the same --state-dir DIR, or --approvals sqlite:PATH)\n",
                Kept::nothing_kept_yet(path)
            ),
            Kept::Memory => "no proposals (the proposal store is in memory, empty in every new \
                             process: leave out `--approvals memory` to read the state \
                             directory's approvals.db, where `serve` keeps them)\n"
                .to_owned(),
        };
    }
    let mut text = String::new();
    for proposal in proposals {
        text.push_str(&format!(
            "{}  {}  {}  by {}  expires {}  {}\n",
            escape_controls(proposal.id.as_str()),
            proposal.status.as_str(),
            escape_controls(&proposal.tool),
            escape_controls(proposal.proposer.user_id.as_str()),
            proposal.expires_at,
            escape_controls(&proposal.summary)
        ));
    }
    text
}

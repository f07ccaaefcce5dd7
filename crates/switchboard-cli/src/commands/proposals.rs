//! `switchboard proposals`, `switchboard approve ID` and `switchboard reject ID --feedback TEXT`:
//! the human side of approvals.
//!
//! Each runs as the identity given (a human, by default), through the registry's
//! `proposals` / `approve` / `reject`, so the same rules hold as in process: only a human of
//! the proposal's organisation holding the target tool's permission decides, an agent never,
//! and a decision is final. With `--approvals sqlite:PATH` the proposals live in that file, so
//! these commands decide what another process (a `serve`, an agent's `call`) proposed; with the
//! default in-memory store a new process starts with none (docs/cli.md).
//!
//! The text forms print what the store holds (ids, tool names, users, summaries, messages):
//! every such field goes through [`escape_controls`], so none can add a line or repaint the
//! terminal.

use clap::Args;
use serde_json::json;
use switchboard::{InvokeError, Proposal, ProposalId, ToolRegistry};

use crate::{
    app::Exit, args::RegistryArgs, escape::escape_controls, hints, identity::IdentityArgs, output,
    render,
};

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

/// Runs the command and prints its result; `persistent` says whether proposals outlive the
/// process (it changes only what an empty list says).
pub(crate) async fn run(
    registry: &ToolRegistry,
    decision: Decision,
    persistent: bool,
) -> anyhow::Result<Exit> {
    match decision {
        Decision::List(args) => {
            let context = args.identity.into_identity().context;
            let listed = registry.proposals(&context).await;
            report(registry, args.json, listed, |proposals| {
                (
                    json!({ "proposals": proposals }),
                    list_text(proposals, persistent),
                )
            })
        }
        Decision::Approve(args) => {
            let context = args.identity.into_identity().context;
            let approved = registry
                .approve(&ProposalId::from(args.id.trim()), &context)
                .await;
            report(registry, args.json, approved, |approved| {
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
            report(registry, args.json, rejected, |proposal| {
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
                let hints = hints::for_invoke(&error, registry.permissions());
                output::write_stderr(&render::decision_refusal(&error, &hints));
            }
            Ok(Exit::Refused)
        }
    }
}

fn list_text(proposals: &[Proposal], persistent: bool) -> String {
    if proposals.is_empty() && persistent {
        return "no proposals\n".to_owned();
    }
    if proposals.is_empty() {
        return "no proposals (the proposal store is in memory: a new process starts empty; \
                keep them with --approvals sqlite:PATH)\n"
            .to_owned();
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

//! The arguments of `switchboard workflow answer`: the answer to a question a run's step asked
//! its client (a form, a completion).

use clap::{ArgGroup, Args};

use super::WorkflowRunIdArgs;

/// `switchboard workflow answer RUN [--key KEY] (--accept JSON | --decline | --cancel |
/// --completion TEXT)`.
#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("reply")
        .required(true)
        .args(["accept", "decline", "cancel", "completion"])
))]
pub(crate) struct WorkflowAnswerArgs {
    /// The run, and who answers (a person or an agent of its organisation).
    #[command(flatten)]
    pub(crate) run: WorkflowRunIdArgs,

    /// The question's key (`ask-1`, as the paused run prints it), or `NODE#ITERATION:KEY` when
    /// several steps wait under one key; needed only when the run waits for several.
    #[arg(long, value_name = "KEY")]
    pub(crate) key: Option<String>,

    /// Accept a form with this content (a JSON object the form's schema accepts; `{}` for a
    /// page to open, which carries none).
    #[arg(long, value_name = "JSON")]
    pub(crate) accept: Option<String>,

    /// Decline the question: the tool reads the refusal and decides what to do.
    #[arg(long)]
    pub(crate) decline: bool,

    /// Dismiss the question without choosing.
    #[arg(long)]
    pub(crate) cancel: bool,

    /// Answer a completion request with this text, as the model named by --model.
    #[arg(long, value_name = "TEXT")]
    pub(crate) completion: Option<String>,

    /// The model a --completion answer names.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "person",
        requires = "completion"
    )]
    pub(crate) model: String,
}

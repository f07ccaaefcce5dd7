//! What the engine's calls can fail with.

use switchboard_workflows::{RunId, RunStoreError};

/// Why a run was not started.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The caller's context lacks fields every run needs to act as its caller.
    #[error(
        "the call context is missing {}: a run acts as its caller, so it needs a complete context",
        .fields.join(", ")
    )]
    MissingContext {
        /// The missing fields.
        fields: Vec<&'static str>,
    },
    /// The input does not satisfy the workflow's `input_schema`.
    #[error("the input does not fit workflow `{workflow}`: {}", .errors.join("; "))]
    InvalidInput {
        /// The workflow.
        workflow: String,
        /// Every problem found, each with its JSON Pointer.
        errors: Vec<String>,
    },
    /// The workflow's `input_schema` is not a JSON Schema.
    #[error("workflow `{workflow}` declares an input schema that does not compile: {reason}")]
    InvalidSchema {
        /// The workflow.
        workflow: String,
        /// What the schema compiler said.
        reason: String,
    },
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] RunStoreError),
}

/// Why a call on a run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The caller's context is incomplete.
    #[error("the call context is missing {}", .fields.join(", "))]
    MissingContext {
        /// The missing fields.
        fields: Vec<&'static str>,
    },
    /// No run of the caller's organisation has this id.
    #[error("no run of your organisation has the id {0}")]
    RunNotFound(RunId),
    /// The run is over: it accepts no cancel nor resume.
    #[error("run {run} is {state}: it is over and accepts no {action}")]
    Finished {
        /// The run.
        run: RunId,
        /// Its final state's name.
        state: &'static str,
        /// What was asked (`cancel`, `resume`).
        action: &'static str,
    },
    /// The run waits for no answer: none of its steps asked its client anything that is still
    /// unanswered.
    #[error(
        "run {run} is not waiting for an answer (it is {state}): only a run paused on a step's \
         question takes one; `workflow show {run}` shows what it waits for"
    )]
    NotWaitingForInput {
        /// The run.
        run: RunId,
        /// Where it stands, in words.
        state: String,
    },
    /// The answer names no question the run waits for, or names none while it waits for
    /// several.
    #[error(
        "run {run} waits for no question {}: it waits for {}; name one of them",
        .key.as_deref().map_or_else(|| "unnamed".to_owned(), |key| format!("`{key}`")),
        .pending.join(", ")
    )]
    UnknownQuestion {
        /// The key the answer named, if any.
        key: Option<String>,
        /// The run.
        run: RunId,
        /// The keys of the questions it waits for (`node#iteration/key` when several steps
        /// wait).
        pending: Vec<String>,
    },
    /// The answer does not fit its question.
    #[error("the answer to question `{key}` of run {run} does not fit it: {reason}")]
    BadAnswer {
        /// The run.
        run: RunId,
        /// The question.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// The run kept moving while the answer was written (an engine was driving it): nothing
    /// was written.
    #[error(
        "run {run} kept changing while the answer was written: nothing was written; answer again"
    )]
    Busy {
        /// The run.
        run: RunId,
    },
    /// The run was not started.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] RunStoreError),
}

/// A failure inside a run's drive that is no step's fault: the store failed, or the engine
/// asked a state machine for an illegal move. The run is left as its last checkpoint says,
/// for `resume` or `recover` to continue.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Fault {
    #[error(transparent)]
    Store(#[from] RunStoreError),
    #[error(transparent)]
    Run(#[from] switchboard_workflows::IllegalRunTransition),
    #[error(transparent)]
    Node(#[from] switchboard_workflows::IllegalNodeTransition),
    #[error("the definition of run {run} cannot be loaded: {reason}")]
    Definition { run: RunId, reason: String },
}

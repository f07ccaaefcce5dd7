//! Errors of the orchestrator: at boot (bad intents) and per `ask` (no route, or the call
//! failed).

use serde::{Serialize, Serializer, ser::SerializeMap};
use switchboard_core::{ErrorKind, InvokeError};
use switchboard_registry::Proposal;

use crate::{intent::ClosestIntent, route::Route};

/// Why the orchestrator cannot start or rebuild its routes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OrchestratorError {
    /// An intent does not parse.
    #[error("`{tool}` declares the intent \"{intent}\", which is invalid: {reason}")]
    InvalidIntent {
        /// The tool.
        tool: String,
        /// The intent.
        intent: String,
        /// Why.
        reason: String,
    },
    /// An intent captures a parameter the tool's input does not have.
    #[error(
        "`{tool}` declares the intent \"{intent}\" with `{{{param}}}`, but its input has no field `{param}` (fields: {known})"
    )]
    UnknownIntentParam {
        /// The tool.
        tool: String,
        /// The intent.
        intent: String,
        /// The placeholder.
        param: String,
        /// The fields the input has.
        known: String,
    },
    /// A fixed value (`=> field=value`) names a field the input does not have, or does not
    /// fit the field's type.
    #[error(
        "`{tool}` declares the intent \"{intent}\" with the fixed value `{param}={value}`, which \
         does not fit its input: {reason}"
    )]
    InvalidFixedValue {
        /// The tool.
        tool: String,
        /// The intent.
        intent: String,
        /// The field the value is for.
        param: String,
        /// The value, as written.
        value: String,
        /// Why it does not fit.
        reason: String,
    },
    /// Two tools declare the same intent.
    #[error("{0}")]
    ConflictingIntents(String),
    /// The orchestrator actor could not start.
    #[error("could not start the orchestrator actor: {0}")]
    Spawn(String),
}

/// Why an `ask` did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// No intent matches and no fallback routed the utterance.
    #[error("no tool matches \"{utterance}\"{}", closest_hint(.closest, *.clear_best))]
    NoRoute {
        /// The utterance.
        utterance: String,
        /// Intents of the tools the utterance is most likely about, best first.
        closest: Vec<ClosestIntent>,
        /// Whether the first of `closest` is clearly the best ("did you mean").
        clear_best: bool,
    },
    /// The utterance was routed, and the call failed.
    #[error("{error}")]
    Invoke {
        /// Where it was routed.
        route: Route,
        /// How the call failed.
        error: InvokeError,
    },
    /// The utterance was routed to a mutation an agent may not make alone: it is stored as a
    /// proposal; once a human decides, `Orchestrator::resume` continues it.
    #[error(
        "awaiting approval: `{}` is stored as proposal `{}` ({}); a human with its permission \
         approves or rejects it, then resume with the proposal id",
        .route.tool, .proposal.id, .proposal.summary
    )]
    AwaitingApproval {
        /// Where it was routed.
        route: Route,
        /// The stored proposal.
        proposal: Box<Proposal>,
    },
}

fn closest_hint(closest: &[ClosestIntent], clear_best: bool) -> String {
    match closest {
        [] => "; list the tools to see what exists".to_owned(),
        [best, ..] if clear_best => format!("; did you mean: {}?", best.example),
        _ => {
            let examples: Vec<String> = closest
                .iter()
                .map(|c| format!("\"{}\" ({})", c.example, c.tool))
                .collect();
            format!("; try one of: {}", examples.join(", "))
        }
    }
}

impl AskError {
    /// The stable kind: `no_route`, or the failed call's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AskError::NoRoute { .. } => ErrorKind::NoRoute,
            AskError::Invoke { error, .. } => error.kind(),
            AskError::AwaitingApproval { .. } => ErrorKind::ApprovalRequired,
        }
    }

    /// The route taken, if there was one.
    pub fn route(&self) -> Option<&Route> {
        match self {
            AskError::NoRoute { .. } => None,
            AskError::Invoke { route, .. } | AskError::AwaitingApproval { route, .. } => {
                Some(route)
            }
        }
    }
}

/// Serializes as `{"kind": …, "message": …, …details}`, like `InvokeError`.
impl Serialize for AskError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AskError::Invoke { error, .. } => error.serialize(serializer),
            AskError::NoRoute {
                utterance,
                closest,
                clear_best,
            } => {
                let mut map = serializer.serialize_map(Some(5))?;
                map.serialize_entry("kind", &self.kind())?;
                map.serialize_entry("message", &self.to_string())?;
                map.serialize_entry("utterance", utterance)?;
                map.serialize_entry("closest", closest)?;
                let did_you_mean = closest.first().filter(|_| *clear_best);
                map.serialize_entry("did_you_mean", &did_you_mean.map(|best| &best.example))?;
                map.end()
            }
            AskError::AwaitingApproval { route, proposal } => {
                let mut map = serializer.serialize_map(Some(6))?;
                map.serialize_entry("kind", &self.kind())?;
                map.serialize_entry("message", &self.to_string())?;
                map.serialize_entry("tool", &route.tool)?;
                map.serialize_entry("proposal_id", &proposal.id)?;
                map.serialize_entry("summary", &proposal.summary)?;
                map.serialize_entry("expires_at", &proposal.expires_at)?;
                map.end()
            }
        }
    }
}

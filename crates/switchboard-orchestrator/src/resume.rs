//! Interrupt and resume: a request that needs a human's approval, and its continuation.
//!
//! When an agent's utterance routes to an execute or restricted tool, [`Orchestrator::ask`]
//! does not call it (the registry would refuse an agent) but stores it as a proposal through
//! `ToolRegistry::propose` (with every check up to the mutation context) and answers
//! [`AskError::AwaitingApproval`] with the proposal. A human then calls
//! [`Orchestrator::resume`] with the proposal id and a [`ResumeDecision`]: approving runs the
//! tool once, as that human; rejecting closes the proposal with feedback. The state that
//! continues the request is the stored proposal, not anything the client holds, so it can be
//! neither forged nor replayed: a second resume finds the proposal decided.

use serde::Serialize;
use serde_json::Value;
use switchboard_core::{CallContext, Initiator, ProposalId};
use switchboard_registry::Proposal;

use crate::{error::AskError, orchestrator::Orchestrator, route::Route};

/// What the human decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeDecision {
    /// Run the proposed call.
    Approve,
    /// Do not run it.
    Reject {
        /// Why, for the proposer.
        feedback: String,
    },
}

/// How a resumed request ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "resumed", rename_all = "snake_case")]
pub enum Resumed {
    /// Approved: the tool ran once; here is what it returned.
    Completed {
        /// The proposal, now approved.
        proposal: Box<Proposal>,
        /// The tool's output.
        result: Value,
    },
    /// Rejected: nothing ran.
    Rejected {
        /// The proposal, now rejected.
        proposal: Box<Proposal>,
    },
}

impl Orchestrator {
    /// Whether `route` must wait for a human: an agent asking for a mutation.
    pub(crate) fn needs_approval(&self, route: &Route, context: &CallContext) -> bool {
        // An agent's mutation, or any mutation the client's model chose, waits for a person.
        (context.initiator == Initiator::Agent || route.tier >= crate::model_route::MODEL_TIER)
            && self
                .shared_registry()
                .find(&route.tool)
                .is_some_and(|tool| tool.category.mutates())
    }

    /// Stores the routed call as a proposal and answers "awaiting approval".
    pub(crate) async fn interrupt<T>(
        &self,
        route: Route,
        context: &CallContext,
    ) -> Result<T, AskError> {
        match self
            .shared_registry()
            .propose(&route.tool, route.params.clone(), context, None)
            .await
        {
            Ok(proposal) => {
                tracing::info!(proposal_id = %proposal.id, tool = %route.tool, "awaiting approval");
                Err(AskError::AwaitingApproval {
                    route,
                    proposal: Box::new(proposal),
                })
            }
            Err(error) => Err(AskError::Invoke { route, error }),
        }
    }

    /// Continues a request that was awaiting approval, with a human's decision. `context` is
    /// the deciding human's: an agent is refused (`approval_denied`), and so is a human
    /// without the tool's permission.
    pub async fn resume(
        &self,
        proposal_id: &ProposalId,
        decision: ResumeDecision,
        context: &CallContext,
    ) -> Result<Resumed, AskError> {
        let registry = self.shared_registry();
        let as_route = |proposal: Option<Proposal>| Route {
            tool: proposal.map(|p| p.tool.to_string()).unwrap_or_default(),
            tier: 1,
            cost: 0.0,
            intent: None,
            params: Value::Null,
        };
        match decision {
            ResumeDecision::Approve => match registry.approve(proposal_id, context).await {
                Ok(approved) => Ok(Resumed::Completed {
                    proposal: Box::new(approved.proposal),
                    result: approved.output,
                }),
                Err(error) => Err(AskError::Invoke {
                    route: as_route(registry.proposal(proposal_id, context).await.ok()),
                    error,
                }),
            },
            ResumeDecision::Reject { feedback } => {
                match registry.reject(proposal_id, &feedback, context).await {
                    Ok(proposal) => Ok(Resumed::Rejected {
                        proposal: Box::new(proposal),
                    }),
                    Err(error) => Err(AskError::Invoke {
                        route: as_route(registry.proposal(proposal_id, context).await.ok()),
                        error,
                    }),
                }
            }
        }
    }
}

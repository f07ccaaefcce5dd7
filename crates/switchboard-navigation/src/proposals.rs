//! The built-in proposal pages: `/proposals` and `/proposals/{proposal_id}`.
//!
//! An agent's change becomes a proposal, and the URL it gets back is the proposal's page. A
//! person opens that URL and approves or rejects it there, which closes the human-in-the-loop
//! circle on the same surface. Proposals belong to the registry, not to a domain, so these
//! pages are the navigator's own: they read through [`ToolRegistry::proposals`] and
//! [`ToolRegistry::proposal`], and their two actions are [`ToolRegistry::approve`] and
//! [`ToolRegistry::reject`], which check the decider (a person of the proposal's organisation
//! holding the tool's permission) and audit the decision and the run. The registry answers the
//! two reads without an audit record, so a refusal they cause is returned as one no record
//! covers yet ([`Refused::unaudited`]), which the navigator then records.

use std::fmt::Write as _;

use serde_json::{Value, json};
use switchboard_core::{
    CallContext, Caller, Category, FieldError, Initiator, InvokeError, ProposalId,
};
use switchboard_registry::{Proposal, ProposalStatus, ToolRegistry};

use crate::{
    error::{NavError, Refused},
    navigator::unavailable,
    url::truncated,
    version::version_of,
    view::{ActionMode, ActionView, PageView, ParamView, first_sentence},
};

/// The route of the list of proposals.
pub const PROPOSALS_ROUTE: &str = "/proposals";
/// The route of one proposal.
pub const PROPOSAL_ROUTE: &str = "/proposals/{proposal_id}";

/// Which built-in page a URL's segments name, if any.
pub(crate) enum BuiltIn {
    /// `/proposals`.
    List,
    /// `/proposals/{proposal_id}`.
    One(ProposalId),
}

impl BuiltIn {
    pub(crate) fn matching(segments: &[String]) -> Option<Self> {
        match segments {
            [first] if first == "proposals" => Some(BuiltIn::List),
            [first, id] if first == "proposals" => Some(BuiltIn::One(ProposalId::new(id.as_str()))),
            _ => None,
        }
    }
}

/// The list of the organisation's pending proposals.
pub(crate) async fn list(
    registry: &ToolRegistry,
    url: &str,
    context: &CallContext,
) -> Result<PageView, Refused> {
    let proposals = registry
        .proposals(context)
        .await
        .map_err(Refused::unaudited)?;
    let pending: Vec<&Proposal> = proposals
        .iter()
        .filter(|proposal| proposal.status == ProposalStatus::Pending)
        .collect();
    let mut content = String::new();
    if pending.is_empty() {
        content.push_str("No proposal is waiting for a decision.\n");
    } else {
        content.push_str("Waiting for a decision, newest first:\n\n");
        for proposal in &pending {
            let _ = writeln!(
                content,
                "- [{id}](/proposals/{id}): {summary} (expires {expires})",
                id = proposal.id,
                summary = proposal.summary,
                expires = proposal.expires_at,
            );
        }
    }
    let data = json!({ "pending": pending });
    Ok(PageView {
        url: url.to_owned(),
        route: PROPOSALS_ROUTE,
        title: "Proposals",
        content,
        version: version_of(&data),
        data,
        actions: Vec::new(),
    })
}

/// One proposal, with `approve` and `reject` for a person who may decide it.
pub(crate) async fn one(
    registry: &ToolRegistry,
    url: &str,
    id: &ProposalId,
    context: &CallContext,
    caller: &Caller,
) -> Result<PageView, Refused> {
    let proposal = registry
        .proposal(id, context)
        .await
        .map_err(|error| Refused::unaudited(not_found(url, error)))?;
    let data = serde_json::to_value(&proposal).unwrap_or(Value::Null);
    Ok(PageView {
        url: url.to_owned(),
        route: PROPOSAL_ROUTE,
        title: "Proposal",
        content: render(&proposal),
        version: version_of(&data),
        data,
        actions: offered(registry, &proposal, caller),
    })
}

/// Runs `approve` or `reject` on the proposal at `url`; returns the action run, the tool, the
/// outcome's result and the proposal as it is now.
pub(crate) async fn decide(
    registry: &ToolRegistry,
    url: &str,
    id: &ProposalId,
    action: &str,
    params: &Value,
    context: &CallContext,
    caller: &Caller,
) -> Result<(&'static str, String, Value, Proposal), Refused> {
    let proposal = registry
        .proposal(id, context)
        .await
        .map_err(|error| Refused::unaudited(not_found(url, error)))?;
    let offered = offered(registry, &proposal, caller);
    let Some(chosen) = offered
        .iter()
        .find(|view| view.name == action)
        .map(|view| view.name)
    else {
        let refusal = unavailable(&proposal.tool, action, url, &offered);
        return Err(registry
            .record_refusal(&proposal.tool, params, context, refusal)
            .await
            .into());
    };
    if chosen == "approve" {
        let approved = registry.approve(id, context).await?;
        Ok((
            chosen,
            proposal.tool.to_string(),
            approved.output,
            approved.proposal,
        ))
    } else {
        let feedback = params
            .get("feedback")
            .and_then(Value::as_str)
            .filter(|feedback| !feedback.trim().is_empty());
        let Some(feedback) = feedback else {
            let refusal = InvokeError::InvalidInput {
                tool: proposal.tool.to_string(),
                errors: vec![FieldError::new(
                    "/feedback",
                    "say why the proposal is rejected: the proposer reads it",
                )],
            };
            return Err(registry
                .record_refusal(&proposal.tool, params, context, refusal)
                .await
                .into());
        };
        let rejected = registry.reject(id, feedback, context).await?;
        let json = serde_json::to_value(&rejected).unwrap_or(Value::Null);
        Ok((chosen, proposal.tool.to_string(), json, rejected))
    }
}

/// A proposal that is not the caller's organisation's is not found, exactly like one that
/// does not exist.
fn not_found(url: &str, error: InvokeError) -> NavError {
    match error.kind() {
        switchboard_core::ErrorKind::ProposalNotFound => NavError::NotFound {
            url: truncated(url),
            what: "the proposal".to_owned(),
        },
        _ => NavError::Invoke(error),
    }
}

/// `approve` and `reject`, for a person holding the tool's permission, while it is pending.
fn offered(registry: &ToolRegistry, proposal: &Proposal, caller: &Caller) -> Vec<ActionView> {
    let Some(tool) = registry.find(&proposal.tool) else {
        return Vec::new();
    };
    let may_decide = proposal.status == ProposalStatus::Pending
        && caller.initiator == Initiator::Human
        && registry
            .permissions()
            .allows(&caller.roles, &tool.permission);
    if !may_decide {
        return Vec::new();
    }
    let approve_mode = if tool.category == Category::Restricted {
        ActionMode::Confirm
    } else {
        ActionMode::Run
    };
    vec![
        ActionView {
            name: "approve",
            tool: proposal.tool.to_string(),
            description: format!(
                "Approve it: runs `{}` once, as you. {}",
                proposal.tool,
                first_sentence(&tool.description)
            ),
            category: tool.category,
            mode: approve_mode,
            params: Vec::new(),
        },
        ActionView {
            name: "reject",
            tool: proposal.tool.to_string(),
            description: "Reject it, saying why; nothing runs.".to_owned(),
            category: tool.category,
            mode: ActionMode::Run,
            params: vec![ParamView {
                name: "feedback".to_owned(),
                json_type: "string".to_owned(),
                required: true,
                description: "Why it is rejected, for the proposer.".to_owned(),
            }],
        },
    ]
}

fn render(proposal: &Proposal) -> String {
    let status = match &proposal.status {
        ProposalStatus::Pending => format!("waiting for a decision until {}", proposal.expires_at),
        ProposalStatus::Approved { by, at, outcome } => format!(
            "approved by `{by}` at {at}; the run: {}",
            outcome.as_deref().unwrap_or("in progress")
        ),
        ProposalStatus::Rejected { by, at, feedback } => {
            format!("rejected by `{by}` at {at}: {feedback}")
        }
        ProposalStatus::Expired { at } => format!("expired at {at}, undecided"),
        ProposalStatus::Withdrawn { by, at, reason } => {
            format!("withdrawn by `{by}` at {at}, undecided: {reason}")
        }
    };
    format!(
        "- **Proposal:** {id}\n- **What it would do:** {summary}\n- **Runs:** `{tool}` with `{params}`\n\
         - **Proposed by:** `{user}` ({initiator}) at {created}\n- **Status:** {status}\n\n\
         [All proposals](/proposals)\n",
        id = proposal.id,
        summary = proposal.summary,
        tool = proposal.tool,
        params = proposal.params,
        user = proposal.proposer.user_id,
        initiator = match proposal.proposer.initiator {
            Initiator::Human => "a person",
            Initiator::Agent => "an agent",
        },
        created = proposal.created_at,
    )
}

//! Mutations happen once: the mutation-context checks, idempotency keys, and proposals.
//!
//! After a mutating call (execute, restricted) has passed every earlier check, it needs the
//! scope ids its tool's policy declares ([`check_scope_ids`]) and an idempotency key: the
//! caller's, or one derived from tool, org, thread (else the request's correlation id) and the
//! params' canonical digest ([`derive_key`]). [`claim`] then claims the key in the `IdempotencyStore`:
//! the first caller runs the tool, racers wait for its result, later retries get it back
//! (a `replayed` audit record, the same action id), and the same key with other params is
//! `idempotency_conflict`. The call that holds the key runs its tool in a task of its own
//! ([`run_held`]), so a caller that gives up cannot leave a key half-done: the tool finishes
//! and its result is stored.
//!
//! A call admitted as a proposal is stored by [`store_proposal`] instead of running.

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use switchboard_approvals::{
    Claim, Fingerprint, IdempotencyScope, IdempotencyStore, Proposal, ProposalStatus, Proposer,
    new_action_id,
};
use switchboard_audit::{ActionEvent, AuditAction, Digest};
use switchboard_core::{
    ActionId, ActionKey, CallContext, Caller, IdempotencyKey, InvokeError, ProposalId,
};
use tracing::Instrument;

use crate::{
    audit::AuditDraft,
    invoke::{Admission, Mode, run_in_domain},
    job::Job,
    registry::Shared,
    table::RegisteredTool,
};

/// What a linked call's idempotency key starts with on the registry that serves its domain,
/// before the key the sending registry holds.
pub(crate) const LINKED_KEY_PREFIX: &str = "link.";

/// Refuses a mutating call whose context lacks a scope id its tool's policy requires.
fn check_scope_ids(tool: &RegisteredTool, caller: &Caller) -> Result<(), InvokeError> {
    let Some(policy) = tool.policy else {
        return Ok(());
    };
    let missing: Vec<&'static str> = policy
        .requires
        .iter()
        .filter(|field| !field.present_in(caller))
        .map(|field| field.as_str())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(InvokeError::MutationScopeMissing {
            tool: tool.name.to_string(),
            fields: missing,
        })
    }
}

/// The key a mutation is known by when its caller gave none: a digest of the tool, the org,
/// the thread and the params' canonical digest. The same call retried in the same thread gets
/// the same key; the same params in another thread are another action. Without a thread (a
/// direct API or CLI call) the request's correlation id stands in for it: a retry of the same
/// request is recognised, a new request is a new action.
pub(crate) fn derive_key(tool: &str, caller: &Caller, params: &Digest) -> IdempotencyKey {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"switchboard.idempotency.v1\0");
    hasher.update(tool.as_bytes());
    hasher.update(b"\0");
    hasher.update(caller.org_id.as_str().as_bytes());
    hasher.update(b"\0");
    match &caller.thread_id {
        Some(thread_id) => {
            hasher.update(b"thread:");
            hasher.update(thread_id.as_str().as_bytes());
        }
        None => {
            hasher.update(b"request:");
            hasher.update(caller.correlation_id.as_str().as_bytes());
        }
    }
    hasher.update(b"\0");
    hasher.update(&params.0);
    let hex = hasher.finalize().to_hex();
    IdempotencyKey::new(format!("derived-{}", &hex[..32]))
}

fn key_of(
    shared: &Shared,
    tool: &RegisteredTool,
    caller: &Caller,
    context: &CallContext,
    params: &Digest,
) -> Result<IdempotencyKey, InvokeError> {
    if let Some(key) = &context.idempotency_key {
        return Ok(key.clone());
    }
    if shared.config.require_idempotency_key {
        return Err(InvokeError::IdempotencyKeyRequired {
            tool: tool.name.to_string(),
        });
    }
    Ok(derive_key(&tool.name, caller, params))
}

/// Where a mutating call stands once [`claim`] has looked at it.
pub(crate) enum Claimed<J: Job> {
    /// The call was stored as a proposal instead of running.
    Proposed(Box<Proposal>),
    /// The key already has a result (or had one while this call waited): the retry's answer.
    Replayed(Result<J::Output, InvokeError>),
    /// This call holds the key: [`run_held`] runs the job and stores its result.
    Held(Held<J>),
}

/// A job whose call holds its idempotency key.
pub(crate) struct Held<J> {
    job: J,
    key: HeldKey,
    action_id: ActionId,
}

/// The mutation context of a mutating call past its gate: the scope ids its tool's policy
/// requires, then either the proposal it becomes, or its idempotency key and a claim on it.
/// Links the call's record to the action (proposed, replayed, executed or approved).
#[allow(
    clippy::too_many_arguments,
    reason = "the call path's state, passed down without an intermediate struct"
)]
pub(crate) async fn claim<J: Job>(
    shared: &Shared,
    tool: &RegisteredTool,
    caller: &Caller,
    context: &CallContext,
    admission: Admission,
    mode: Mode<'_>,
    job: J,
    draft: &mut AuditDraft<'_>,
) -> Result<Claimed<J>, InvokeError> {
    check_scope_ids(tool, caller)?;
    if admission == Admission::Propose {
        let params = job.proposal_params(tool)?;
        let proposal = store_proposal(
            shared,
            tool,
            caller,
            context.idempotency_key.as_ref(),
            params,
            summary_of(mode),
            draft,
        )?;
        return Ok(Claimed::Proposed(Box::new(proposal)));
    }
    // The input's digest, taken once for the audit record, keys the call too.
    let params = draft
        .input()
        .clone()
        .map_err(|error| crate::job::unkeyable(tool, &error))?;
    let (key, preset_action) = match mode {
        Mode::Approval { proposal } => (
            IdempotencyKey::new(proposal.as_str()),
            Some(ActionId::new(proposal.as_str())),
        ),
        // The sender's key, prefixed: a store both registries share keeps the sender's own
        // claim apart from this one.
        Mode::Linked {
            action: Some(action),
        } => (
            IdempotencyKey::new(format!("{LINKED_KEY_PREFIX}{}", action.key.as_str())),
            Some(action.action_id.clone()),
        ),
        Mode::Direct | Mode::Propose { .. } | Mode::Linked { action: None } => {
            (key_of(shared, tool, caller, context, &params)?, None)
        }
    };
    let scope = IdempotencyScope::new(caller.org_id.clone(), key);
    let fingerprint = Fingerprint::new(Arc::clone(&tool.name), params);
    loop {
        let stored = match shared
            .idempotency
            .claim(&scope, &fingerprint, Timestamp::now())
        {
            Claim::Run => break,
            Claim::Done(stored) => stored,
            Claim::Running(waiter) => match waiter.wait().await {
                Some(stored) => stored,
                // The first caller gave the key back without a result: claim it again.
                None => continue,
            },
            Claim::Conflict => {
                return Err(InvokeError::IdempotencyConflict {
                    tool: tool.name.to_string(),
                    key: scope.key,
                    first_run: None,
                });
            }
        };
        draft.set_action(AuditAction::new(
            stored.action_id.clone(),
            ActionEvent::Replayed,
        ));
        // A typed retry of an action whose first result is JSON only: it ran, and must not
        // run again; say so rather than call it a conflict.
        let replayed = J::replayed(&stored).unwrap_or_else(|| {
            Err(InvokeError::IdempotencyConflict {
                tool: tool.name.to_string(),
                key: scope.key.clone(),
                first_run: Some(stored.action_id.clone()),
            })
        });
        return Ok(Claimed::Replayed(replayed));
    }
    let action_id = preset_action.unwrap_or_else(new_action_id);
    let event = match mode {
        Mode::Approval { .. } => ActionEvent::Approved,
        Mode::Direct | Mode::Propose { .. } | Mode::Linked { .. } => ActionEvent::Executed,
    };
    draft.set_action(AuditAction::new(action_id.clone(), event));
    let key = HeldKey {
        store: Arc::clone(&shared.idempotency),
        scope: Some(scope),
    };
    Ok(Claimed::Held(Held {
        job,
        key,
        action_id,
    }))
}

/// Runs a held job in its domain and stores its result under its key.
///
/// The run is a task of its own, which owns what it needs; the caller awaits its handle. A
/// caller that stops waiting drops only the handle: the tool finishes and its result is stored,
/// so the key is never left half-done.
pub(crate) async fn run_held<J: Job>(
    tool: &Arc<RegisteredTool>,
    caller: Caller,
    held: Held<J>,
) -> Result<J::Output, InvokeError> {
    let Held {
        job,
        mut key,
        action_id,
    } = held;
    let owned_tool = Arc::clone(tool);
    // A tool that asked its client in an `input_required` result ran to that question only:
    // the client's next call, with the answers, runs it under the same key.
    let link = caller.client.clone();
    let action = key.scope.as_ref().map(|scope| ActionKey {
        org_id: scope.org_id.clone(),
        key: scope.key.clone(),
        action_id: action_id.clone(),
    });
    let linked = tool.domain.local().is_none();
    let run = async move {
        let result = run_in_domain(&owned_tool, caller, action, job).await;
        if let Some(scope) = key.scope.take() {
            match &result {
                // Nothing ran (the domain was down): the key is free for a retry.
                Err(InvokeError::DomainUnavailable { .. }) => key.store.release(&scope),
                // The tool waits for its client's answers, which come with the next call.
                Err(_) if link.awaits_input() => key.store.release(&scope),
                // A linked call that the remote refused before running, or whose outcome is
                // unknown: the registry that serves the domain holds the truth under its own
                // key, and a retry must reach it rather than replay this answer.
                Err(error) if linked && !ran_remotely(error) => key.store.release(&scope),
                _ => key
                    .store
                    .complete(&scope, Arc::new(J::stored(action_id, &result))),
            }
        }
        result
    };
    match tokio::spawn(run.instrument(tracing::Span::current())).await {
        Ok(result) => result,
        Err(error) => Err(InvokeError::ToolPanicked {
            tool: tool.name.to_string(),
            message: format!("the mutation's task ended abnormally: {error}"),
        }),
    }
}

/// Whether a linked call's error says that the tool ran on the registry that serves its
/// domain: it failed, panicked or timed out there, and the remote answered so.
fn ran_remotely(error: &InvokeError) -> bool {
    match error {
        InvokeError::ToolFailed { error, .. } => !error.is_in_doubt(),
        InvokeError::ToolPanicked { .. } | InvokeError::Timeout { .. } => true,
        _ => false,
    }
}

/// A claimed key. Given back if it is dropped before its run stored a result (the run's task
/// was dropped: the runtime shut down), so waiters are not left waiting.
struct HeldKey {
    store: Arc<dyn IdempotencyStore>,
    scope: Option<IdempotencyScope>,
}

impl Drop for HeldKey {
    fn drop(&mut self) {
        if let Some(scope) = self.scope.take() {
            self.store.release(&scope);
        }
    }
}

/// The summary a proposing caller gave, if any.
fn summary_of<'a>(mode: Mode<'a>) -> Option<&'a str> {
    match mode {
        Mode::Propose { summary } => summary,
        Mode::Direct | Mode::Approval { .. } | Mode::Linked { .. } => None,
    }
}

/// The id of the proposal a call under idempotency key `key` makes: the same for every retry
/// of that call, another in another organisation.
fn keyed_proposal_id(caller: &Caller, key: &IdempotencyKey) -> ProposalId {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"switchboard.proposal.v1\0");
    hasher.update(caller.org_id.as_str().as_bytes());
    hasher.update(b"\0");
    hasher.update(key.as_str().as_bytes());
    let hex = hasher.finalize().to_hex();
    ProposalId::new(format!("prop-k{}", &hex[..32]))
}

/// Stores a validated mutation as a pending proposal and links the call's record to it.
///
/// A call with an idempotency key proposes once: its proposal's id derives from the key, and a
/// retry (a workflow step resumed after a crash between proposing and recording the proposal)
/// gets the proposal made the first time, whatever its status since, linked as `replayed`.
/// The same key with another tool or other params is `idempotency_conflict`.
#[allow(
    clippy::too_many_arguments,
    reason = "the call path's state, passed down without an intermediate struct"
)]
fn store_proposal(
    shared: &Shared,
    tool: &RegisteredTool,
    caller: &Caller,
    key: Option<&IdempotencyKey>,
    params: Arc<Value>,
    summary: Option<&str>,
    draft: &mut AuditDraft<'_>,
) -> Result<Proposal, InvokeError> {
    let id = match key {
        Some(key) => keyed_proposal_id(caller, key),
        None => ProposalId::new(switchboard_core::mint_id("prop")),
    };
    let now = Timestamp::now();
    let ttl = SignedDuration::try_from(shared.config.proposal_ttl).unwrap_or(SignedDuration::MAX);
    let summary = match summary.map(str::trim) {
        Some(summary) if !summary.is_empty() => summary.to_owned(),
        _ => default_summary(&tool.name, &params),
    };
    let proposal = Proposal {
        id: id.clone(),
        org_id: caller.org_id.clone(),
        tool: Arc::clone(&tool.name),
        params,
        summary,
        proposer: Proposer {
            user_id: caller.user_id.clone(),
            session_id: caller.session_id.clone(),
            correlation_id: caller.correlation_id.clone(),
            initiator: caller.initiator,
            agent_type: caller.agent_type.clone(),
            thread_id: caller.thread_id.clone(),
            project_id: caller.project_id.clone(),
        },
        created_at: now,
        expires_at: now.saturating_add(ttl).unwrap_or(Timestamp::MAX),
        status: ProposalStatus::Pending,
    };
    // A proposal the store did not keep must not be announced: the caller is refused instead.
    let existing = match key {
        Some(key) => shared
            .proposals
            .insert_new(proposal.clone())
            .map_err(crate::approvals::store_unavailable)?
            .map(|existing| (key, existing)),
        None => {
            shared
                .proposals
                .insert(proposal.clone())
                .map_err(crate::approvals::store_unavailable)?;
            None
        }
    };
    if let Some((key, existing)) = existing {
        if existing.tool != proposal.tool || existing.params != proposal.params {
            return Err(InvokeError::IdempotencyConflict {
                tool: tool.name.to_string(),
                key: key.clone(),
                first_run: None,
            });
        }
        draft.set_action(AuditAction::new(
            ActionId::new(id.as_str()),
            ActionEvent::Replayed,
        ));
        tracing::info!(proposal_id = %id, tool = %tool.name, "the key's proposal, made before");
        return Ok(existing);
    }
    draft.set_action(AuditAction::new(
        ActionId::new(id.as_str()),
        ActionEvent::Proposed,
    ));
    tracing::info!(proposal_id = %id, tool = %tool.name, "mutation stored as a proposal");
    Ok(proposal)
}

/// "`roster_assign_shift` with {"shift_id":"…","user_id":"…"}", cut at 200 characters.
fn default_summary(tool: &str, params: &Value) -> String {
    let mut text = format!("`{tool}` with {params}");
    if text.chars().count() > 200 {
        text = text.chars().take(199).collect::<String>() + "…";
    }
    text
}

/// The error a direct call gets when it was stored as a proposal.
pub(crate) fn approval_required(proposal: &Proposal) -> InvokeError {
    InvokeError::ApprovalRequired {
        tool: proposal.tool.to_string(),
        proposal_id: proposal.id.clone(),
        expires_at: proposal.expires_at.to_string(),
        summary: proposal.summary.clone(),
    }
}

#[cfg(test)]
mod tests {
    use switchboard_audit::digest_json;

    use super::*;

    fn caller(thread: Option<&str>, correlation: &str) -> Caller {
        let mut builder = CallContext::builder()
            .org("acme")
            .user("mark")
            .session("s")
            .correlation(correlation);
        if let Some(thread) = thread {
            builder = builder.thread(thread);
        }
        builder.build().verify().expect("complete")
    }

    #[test]
    fn derived_keys_depend_on_tool_org_thread_and_params_only() {
        let params =
            digest_json(&serde_json::json!({ "a": 1, "b": 2 })).expect("JSON has a digest");
        let same_params =
            digest_json(&serde_json::json!({ "b": 2, "a": 1 })).expect("JSON has a digest");
        let key = derive_key("t", &caller(Some("th"), "s1"), &params);
        // The request does not matter when there is a thread; key order in params neither.
        assert_eq!(
            key,
            derive_key("t", &caller(Some("th"), "s2"), &same_params)
        );
        assert_ne!(key, derive_key("u", &caller(Some("th"), "s1"), &params));
        assert_ne!(key, derive_key("t", &caller(Some("other"), "s1"), &params));
        let other = digest_json(&serde_json::json!({ "a": 2, "b": 2 })).expect("JSON has a digest");
        assert_ne!(key, derive_key("t", &caller(Some("th"), "s1"), &other));
        // Without a thread, the request (correlation id) scopes the key.
        assert_ne!(
            derive_key("t", &caller(None, "s1"), &params),
            derive_key("t", &caller(None, "s2"), &params)
        );
    }
}

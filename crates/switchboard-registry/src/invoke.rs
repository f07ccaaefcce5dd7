//! The per-call path. It runs in the caller's task: no mailbox, no actor hop.
//!
//! The order of the checks is part of the contract (ARCHITECTURE.md): tool exists → context
//! complete → no `org_id` in the params → thread owned → agent scope → category → permission →
//! input valid → gate → (mutating tools) scope ids → idempotency key → run once (in the
//! domain's bulkhead, under a timeout, catching panics) → audit. A caller refused at one step
//! learns nothing the later steps would have told it: a caller without the permission never
//! sees the input's validation errors.
//!
//! JSON calls, typed calls and calls of run-time tools take the same steps, written once as
//! `async fn`s over a [`Request`] (what differs between the faces, `job.rs`): [`admit`],
//! [`Request::validate`], [`gate`], then [`mutation::claim`] for a mutating tool,
//! [`run_in_domain`], and [`record`]. Mutations (idempotency, proposals) live in `mutation.rs`
//! and `approvals.rs`.

use std::{panic::AssertUnwindSafe, sync::Arc};

use futures::FutureExt;
use serde_json::Value;
use switchboard_approvals::Proposal;
use switchboard_audit::Outcome;
use switchboard_core::{
    ActionKey, BoxFuture, CallContext, Caller, Category, Initiator, InvokeError, ProposalId, Tool,
    ToolError, ask::ClientLink, schema::find_org_id,
};
use tracing::Instrument;

use crate::{
    access::AgentScopes,
    audit::{AuditDraft, digest_value},
    config::AgentMutations,
    domain::Placement,
    job::{Job, JsonRequest, Request, TypedRequest},
    layers::{Layers, Pending},
    link::{DomainLink, LinkError, LinkHealth, LinkedCall},
    mutation::{self, Claimed},
    registry::{Exposure, Shared, ToolRegistry},
    table::{RegisteredTool, ToolTable},
};

/// Why a call is being made.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode<'a> {
    /// A caller called the tool.
    Direct,
    /// A caller asked for a proposal (`ToolRegistry::propose`), with this summary.
    Propose { summary: Option<&'a str> },
    /// A human approved this proposal; its id is the run's idempotency key and action id.
    Approval { proposal: &'a ProposalId },
    /// Another registry, which checked the caller, sends a call of a domain this registry
    /// serves ([`ToolRegistry::serve_linked`]); for a mutation, with the key and action id it
    /// holds.
    Linked { action: Option<&'a ActionKey> },
}

/// What a call produced: the tool's output, or a stored proposal.
pub(crate) enum Step<O> {
    Output(O),
    Proposed(Box<Proposal>),
}

/// Whether the checks let the call run, or turn it into a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    Run,
    Propose,
}

/// What [`admit`] resolved: the tool, the verified caller, and whether the call runs.
struct Admitted<'t> {
    tool: &'t Arc<RegisteredTool>,
    caller: Caller,
    admission: Admission,
}

/// The output a call's job returns.
type OutputOf<R> = <<R as Request>::Job as Job>::Output;

impl ToolRegistry {
    /// Calls a tool by name with JSON params, as agents and transports do.
    ///
    /// Runs every check, runs the tool with `org_id` taken from `context`, and writes exactly one
    /// audit record whatever happens.
    pub async fn invoke(
        &self,
        name: &str,
        params: Value,
        context: &CallContext,
    ) -> Result<Value, InvokeError> {
        let span = tracing::info_span!(
            "invoke",
            tool = %switchboard_audit::clamp_tool_name(name),
            correlation_id = context.correlation_id.as_ref().map(|id| id.as_str()),
        );
        self.run(name, JsonRequest::new(params), context, Mode::Direct)
            .instrument(span)
            .await
            .and_then(direct_output)
    }

    /// Audits a call of `name` that a layer above the registry refused before invoking it (a
    /// page action that is not available where it was asked for), exactly as a refusal at any
    /// step of the call path is audited, and returns `error` (or `audit_failed` when the
    /// record cannot be written).
    pub async fn record_refusal(
        &self,
        name: &str,
        params: &Value,
        context: &CallContext,
        error: InvokeError,
    ) -> InvokeError {
        let shared = self.shared();
        let table = shared.table.load();
        let draft = match AuditDraft::open(
            &shared.audit,
            name,
            table.get(name),
            context,
            switchboard_audit::digest_json(params),
        )
        .await
        {
            Ok(draft) => draft,
            Err(audit_error) => return audit_failed(name, &audit_error),
        };
        let outcome = Outcome::Error(error.kind());
        let acknowledged = draft.close(outcome, None).acknowledged().await;
        finish::<()>(acknowledged, name, Err(error))
            .err()
            .unwrap_or_else(|| {
                // `finish` passes an error through or replaces it; it never makes a success.
                InvokeError::AuditFailed {
                    tool: switchboard_audit::clamp_tool_name(name).to_owned(),
                    reason: "the refusal's record was not acknowledged".to_owned(),
                }
            })
    }

    /// Calls a linked tool with its typed input, as Rust services do. No JSON is parsed or
    /// produced; the checks, timeout, bulkhead and audit are the same as for [`invoke`].
    ///
    /// [`invoke`]: ToolRegistry::invoke
    pub async fn call<T: Tool>(
        &self,
        input: T::Input,
        context: &CallContext,
    ) -> Result<T::Output, InvokeError> {
        let span = tracing::info_span!(
            "invoke",
            tool = T::SPEC.name,
            correlation_id = context.correlation_id.as_ref().map(|id| id.as_str()),
        );
        self.run(
            T::SPEC.name,
            TypedRequest::<T>(input),
            context,
            Mode::Direct,
        )
        .instrument(span)
        .await
        .and_then(direct_output)
    }

    /// The call path, in every mode (direct, proposing, or running an approved proposal): opens
    /// the call's audit draft, takes the steps, and records how they ended.
    pub(crate) async fn run<R: Request>(
        &self,
        name: &str,
        request: R,
        context: &CallContext,
        mode: Mode<'_>,
    ) -> Result<Step<OutputOf<R>>, InvokeError> {
        let shared = self.shared();
        let table = shared.table.load();
        let mut draft = AuditDraft::open(
            &shared.audit,
            name,
            table.get(name),
            context,
            request.audit_input(),
        )
        .await
        .map_err(|error| audit_failed(name, &error))?;
        let result = self
            .steps(&table, name, request, context, mode, &mut draft)
            .await;
        record::<R::Job>(draft, name, result).await
    }

    /// The checks and the run, in their order: the first refusal ends the call.
    async fn steps<R: Request>(
        &self,
        table: &ToolTable,
        name: &str,
        request: R,
        context: &CallContext,
        mode: Mode<'_>,
        draft: &mut AuditDraft<'_>,
    ) -> Result<Step<OutputOf<R>>, InvokeError> {
        let shared = self.shared();
        let Admitted {
            tool,
            caller,
            admission,
        } = admit(shared, table, name, context, request.params(), mode)?;
        draft.note_asks(&caller.client);
        let job = request.validate(tool)?;
        let job = gate(tool, &caller, job).await?;
        let chain = shared.layers.around(&tool.domain.name);
        let rest = Rest {
            shared,
            tool,
            caller,
            context,
            admission,
            mode,
            job,
            draft,
        };
        if chain.is_empty() {
            return rest.finish().await;
        }
        let mut output = None;
        let pending = Box::new(Layered {
            rest,
            output: &mut output,
        });
        Layers::run(chain, pending).await?;
        // A `Finished` that is not an error comes only from the tool's run, which stored its
        // output.
        output.ok_or_else(|| InvokeError::ToolPanicked {
            tool: tool.name.to_string(),
            message: "a layer answered success without running the call".to_owned(),
        })
    }
}

/// What is left of a call once the checks and the gate passed: the run (for a mutation, its
/// idempotency claim first), which the layers wrap.
struct Rest<'a, 'd, J> {
    shared: &'a Shared,
    tool: &'a Arc<RegisteredTool>,
    caller: Caller,
    context: &'a CallContext,
    admission: Admission,
    mode: Mode<'a>,
    job: J,
    draft: &'a mut AuditDraft<'d>,
}

impl<J: Job> Rest<'_, '_, J> {
    async fn finish(self) -> Result<Step<J::Output>, InvokeError> {
        let Rest {
            shared,
            tool,
            caller,
            context,
            admission,
            mode,
            job,
            draft,
        } = self;
        if !tool.category().mutates() {
            return run_in_domain(tool, caller, None, job)
                .await
                .map(Step::Output);
        }
        let claimed = mutation::claim(shared, tool, &caller, context, admission, mode, job, draft);
        let claimed = claimed.await?;
        // A proposal is stored, or the tool runs: a reader may see a change once this call
        // ends, however it ends (cancelled mid-run included).
        let _note_write = (!matches!(claimed, Claimed::Replayed(_))).then(|| WriteNote(shared));
        match claimed {
            // An agent's direct call that became a proposal (under `AgentMutations::Propose`)
            // is answered with the proposal to approve.
            Claimed::Proposed(proposal) if matches!(mode, Mode::Direct) => {
                Err(mutation::approval_required(&proposal))
            }
            Claimed::Proposed(proposal) => Ok(Step::Proposed(proposal)),
            Claimed::Replayed(result) => result.map(Step::Output),
            Claimed::Held(held) => mutation::run_held(tool, caller, held)
                .await
                .map(Step::Output),
        }
    }
}

/// The rest of a call handed to the layers, and where its output goes.
struct Layered<'a, 'd, J: Job> {
    rest: Rest<'a, 'd, J>,
    output: &'a mut Option<Step<J::Output>>,
}

impl<'a, J: Job> Pending<'a> for Layered<'a, '_, J> {
    fn caller(&self) -> &Caller {
        &self.rest.caller
    }

    fn tool(&self) -> &switchboard_core::ToolDescriptor {
        &self.rest.tool.descriptor
    }

    fn params(&self) -> Option<&Value> {
        self.rest.job.params()
    }

    fn input(&self) -> &(dyn std::any::Any + Send + Sync) {
        self.rest.job.gate_input()
    }

    fn run(self: Box<Self>) -> BoxFuture<'a, Result<(), InvokeError>> {
        let Layered { rest, output } = *self;
        Box::pin(async move {
            let step = rest.finish().await?;
            *output = Some(step);
            Ok(())
        })
    }
}

/// Counts a write ([`ToolRegistry::watch_writes`]) when dropped.
struct WriteNote<'a>(&'a Shared);

impl Drop for WriteNote<'_> {
    fn drop(&mut self) {
        self.0.note_write();
    }
}

/// A direct call's answer: its output (a direct call that became a proposal is refused with
/// `approval_required`).
fn direct_output<O>(step: Step<O>) -> Result<O, InvokeError> {
    match step {
        Step::Output(output) => Ok(output),
        Step::Proposed(proposal) => Err(mutation::approval_required(&proposal)),
    }
}

/// The checks before the input is looked at: tool, context, `org_id`, thread, agent scope,
/// category, permission. Says whether the call runs or becomes a proposal.
fn admit<'t>(
    shared: &Shared,
    table: &'t ToolTable,
    name: &str,
    context: &CallContext,
    params: Option<&Value>,
    mode: Mode<'_>,
) -> Result<Admitted<'t>, InvokeError> {
    let tool = table
        .get(name)
        .ok_or_else(|| not_found(name, table.similar_names(name)))?;
    let mut verified = context
        .verify()
        .map_err(|fields| InvokeError::MissingContext { fields })?;
    if let (false, Some(handler)) = (verified.client.is_active(), &shared.client) {
        verified.client = ClientLink::new(Arc::clone(handler));
    }
    let caller = &verified;
    if let Some(path) = params.and_then(find_org_id) {
        return Err(InvokeError::OrgIdNotAllowed { path });
    }
    // Authentication: the user must own the thread the call names. An approved proposal runs
    // in its proposer's thread, which was checked when the proposal was made; a linked call's
    // thread was checked by the registry that sent it, which knows its threads.
    let checked_before = matches!(mode, Mode::Approval { .. } | Mode::Linked { .. });
    if let (Some(thread_id), false) = (&caller.thread_id, checked_before)
        && shared.threads.owner(&caller.org_id, thread_id).as_ref() != Some(&caller.user_id)
    {
        return Err(InvokeError::ThreadNotOwned {
            tool: tool.name.to_string(),
            thread_id: thread_id.clone(),
        });
    }
    // Tool access: the agent's scope.
    if AgentScopes::applies_to(caller)
        && !shared.scopes.allows(caller.agent_type.as_ref(), &tool.name)
    {
        return Err(InvokeError::ToolScopeDenied {
            tool: tool.name.to_string(),
            agent_type: caller.agent_type.clone(),
        });
    }
    let agent_proposes = shared.config.agent_mutations == AgentMutations::Propose
        && caller.initiator == Initiator::Agent
        && tool.category().mutates();
    let admission = match mode {
        Mode::Propose { .. } if !tool.category().mutates() => {
            return Err(InvokeError::CategoryDenied {
                tool: tool.name.to_string(),
                category: tool.category(),
                initiator: caller.initiator,
                reason: "changes nothing, so there is nothing to approve: only execute and \
                         restricted tools are proposed; call it directly"
                    .to_owned(),
            });
        }
        Mode::Propose { .. } => Admission::Propose,
        Mode::Direct if agent_proposes => Admission::Propose,
        // The registry that sent the call ran it rather than propose it: the two registries'
        // configurations differ, and a linked call never becomes a proposal.
        Mode::Linked { .. } if agent_proposes => {
            return Err(InvokeError::CategoryDenied {
                tool: tool.name.to_string(),
                category: tool.category(),
                initiator: caller.initiator,
                reason: "is proposed rather than run when an agent calls it on the registry that \
                         serves its domain (`AgentMutations::Propose`), and a call sent by \
                         another registry cannot become a proposal: give both registries the \
                         same `agent_mutations`"
                    .to_owned(),
            });
        }
        Mode::Direct | Mode::Approval { .. } | Mode::Linked { .. } => {
            check_category(shared, table, tool, caller)?;
            Admission::Run
        }
    };
    // A proposal needs no permission for its target: whoever approves it does.
    if admission == Admission::Run && !tool.granted_to(&caller.roles) {
        return Err(InvokeError::PermissionDenied {
            tool: tool.name.to_string(),
            permission: tool.descriptor.permission.to_string(),
            roles: caller.roles.to_vec(),
        });
    }
    Ok(Admitted {
        tool,
        caller: verified,
        admission,
    })
}

/// Runs the gate the tool's domain declared, if any, under the tool's timeout, catching a
/// panic. A linked domain's gate reads state this registry does not hold: the registry that
/// serves the domain runs it.
///
/// Takes the job and gives it back, so that the call path reads as a chain of steps that each
/// hand the job on.
async fn gate<J: Job>(tool: &RegisteredTool, caller: &Caller, job: J) -> Result<J, InvokeError> {
    let (Some(gate), Some(local)) = (tool.gate(), tool.domain.local()) else {
        return Ok(job);
    };
    let checking = gate(
        local.scope(tool, caller.clone(), Category::Read),
        job.gate_input(),
    );
    let checked =
        tokio::time::timeout(tool.timeout, AssertUnwindSafe(checking).catch_unwind()).await;
    match checked {
        Err(_) => Err(timed_out(tool)),
        Ok(Err(panic)) => Err(InvokeError::ToolPanicked {
            tool: tool.name.to_string(),
            message: format!("its gate panicked: {}", panic_message(&*panic)),
        }),
        Ok(Ok(Err(error))) => Err(InvokeError::GateRefused {
            tool: tool.name.to_string(),
            error,
        }),
        Ok(Ok(Ok(()))) => Ok(job),
    }
}

/// Who may start a call of each category: why `caller` may not, or nothing.
pub(crate) fn category_refusal(category: Category, caller: &Caller) -> Option<&'static str> {
    match (category, caller.initiator) {
        (Category::Read | Category::Propose, _) => None,
        (Category::Execute, Initiator::Human) => None,
        (Category::Execute, Initiator::Agent) => Some("must be initiated by a human in a session"),
        (Category::Restricted, Initiator::Agent) => Some(
            "never runs on an agent's initiative: a human must start it and confirm it in the session",
        ),
        (Category::Restricted, Initiator::Human) if !caller.confirmed => Some(
            "needs an explicit confirmation by the human in the session; ask them, then call again with the confirmation set",
        ),
        (Category::Restricted, Initiator::Human) => None,
    }
}

/// Refuses a call the category does not admit from `caller`, saying what would get it done.
fn check_category(
    shared: &Shared,
    table: &ToolTable,
    tool: &RegisteredTool,
    caller: &Caller,
) -> Result<(), InvokeError> {
    let Some(reason) = category_refusal(tool.category(), caller) else {
        return Ok(());
    };
    let mut reason = reason.to_owned();
    if caller.initiator == Initiator::Agent {
        reason.push_str(&agent_alternative(shared, table, tool, caller));
    }
    Err(InvokeError::CategoryDenied {
        tool: tool.name.to_string(),
        category: tool.category(),
        initiator: caller.initiator,
        reason,
    })
}

/// What an agent refused a mutation can do instead: call its domain's propose tools that it
/// may call (its roles grant them and its scope holds them), or, when there are none, ask a
/// person to run the tool or to approve a proposal of the call.
fn agent_alternative(
    shared: &Shared,
    table: &ToolTable,
    tool: &RegisteredTool,
    caller: &Caller,
) -> String {
    let propose_tools: Vec<String> = table
        .iter()
        .filter(|other| {
            other.category() == Category::Propose
                && other.domain.name == tool.domain.name
                && other.exposure != Exposure::Withheld
                && other.granted_to(&caller.roles)
                && shared
                    .scopes
                    .allows(caller.agent_type.as_ref(), &other.name)
        })
        .map(|other| format!("`{}`", other.name))
        .collect();
    match propose_tools.as_slice() {
        [] => {
            let confirmation = if tool.category() == Category::Restricted {
                " with their confirmation"
            } else {
                ""
            };
            format!(
                "; the `{}` domain has no propose tool for an agent to call instead: ask a person \
                 to run it{confirmation}, or to approve it as a proposal{confirmation} (stored by \
                 `ToolRegistry::propose`, or by the registry under `AgentMutations::Propose`; \
                 decided with `switchboard approve`)",
                tool.domain.name
            )
        }
        [only] => format!("; an agent acting alone may call the propose tool {only} instead"),
        several => format!(
            "; an agent acting alone may call one of the propose tools {} instead",
            several.join(", ")
        ),
    }
}

/// Runs a job in its domain as `caller` (and as `action`, for a mutation holding its key).
/// This is the one place where a call enters its domain: the domain runs it
/// ([`LocalDomain::run`](crate::domain::LocalDomain::run)), or its link carries it to the
/// registry that serves it ([`run_linked`]).
pub(crate) async fn run_in_domain<J: Job>(
    tool: &RegisteredTool,
    caller: Caller,
    action: Option<ActionKey>,
    job: J,
) -> Result<J::Output, InvokeError> {
    let domain = &tool.domain;
    match &domain.placement {
        Placement::InProcess(local) => local.run(&domain.bulkhead, tool, caller, action, job).await,
        Placement::Linked(link) => {
            let params = job.linked_params(tool)?;
            let output = run_linked(
                &**link,
                &domain.bulkhead,
                tool,
                &caller,
                action.as_ref(),
                params,
            );
            J::decode_linked(tool, output.await?)
        }
    }
}

/// How much longer than the tool's timeout the front waits for a linked call's answer, so that
/// the remote's own timeout fires first and its answer says what happened.
pub(crate) const LINK_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs a call of a linked domain's tool with `params` through `link`: fails fast if the link
/// is open, waits for a permit of `bulkhead`, sends the whole call and answers with the remote's
/// JSON output. An answer that does not come in time is in doubt (the tool may have run), never
/// a timeout.
async fn run_linked(
    link: &dyn DomainLink,
    bulkhead: &tokio::sync::Semaphore,
    tool: &RegisteredTool,
    caller: &Caller,
    action: Option<&ActionKey>,
    params: Arc<Value>,
) -> Result<Value, InvokeError> {
    if let LinkHealth::Open { reason } = link.health() {
        return Err(domain_unavailable(tool, &reason));
    }
    // The digest of exactly what is sent: the receiver recomputes it from the params it gets.
    let input = switchboard_core::digest_json(&params).map_err(|error| {
        domain_unavailable(
            tool,
            &format!("its input has no digest to bind the call to ({error})"),
        )
    })?;
    let deadline = tokio::time::Instant::now() + tool.timeout + LINK_MARGIN;
    let sending = async {
        let _permit = bulkhead.acquire().await.map_err(|_| LinkError::NotSent {
            reason: "its bulkhead is closed".to_owned(),
        })?;
        link.call(LinkedCall::new(
            &tool.descriptor,
            params,
            input,
            caller,
            action,
            deadline,
        ))
        .await
    };
    let answer = match tokio::time::timeout_at(deadline, sending).await {
        Ok(answer) => answer,
        Err(_) => Err(LinkError::InDoubt {
            reason: format!(
                "no answer from {} within {:?}",
                link.location(),
                tool.timeout + LINK_MARGIN
            ),
        }),
    };
    answer.map_err(|error| linked_error(tool, link, error))
}

/// The call's error from how a linked call failed.
fn linked_error(tool: &RegisteredTool, link: &dyn DomainLink, error: LinkError) -> InvokeError {
    match error {
        LinkError::NotSent { reason } => domain_unavailable(
            tool,
            &format!("{} ({} link): {reason}", link.location(), link.kind()),
        ),
        LinkError::Refused(error) | LinkError::Failed(error) => error,
        LinkError::InDoubt { reason } => InvokeError::ToolFailed {
            tool: tool.name.to_string(),
            error: ToolError::new(
                "remote_outcome_unknown",
                format!(
                    "the call was sent to {} and its outcome is unknown ({reason}); it may have \
                     run: retry with the same idempotency key to learn its outcome",
                    link.location()
                ),
            )
            .in_doubt(),
        },
    }
}

pub(crate) fn timed_out(tool: &RegisteredTool) -> InvokeError {
    InvokeError::Timeout {
        tool: tool.name.to_string(),
        after: tool.timeout,
    }
}

/// How a call ended, for its record.
pub(crate) fn outcome_of<O>(result: &Result<O, InvokeError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Ok,
        Err(error) => Outcome::Error(error.kind()),
    }
}

/// Closes the call's audit draft with how the call ended, and answers once the record is
/// acknowledged as the log's durability asks.
async fn record<J: Job>(
    draft: AuditDraft<'_>,
    name: &str,
    result: Result<Step<J::Output>, InvokeError>,
) -> Result<Step<J::Output>, InvokeError> {
    let output = match &result {
        Ok(Step::Output(output)) => Some(J::audit_output(output)),
        Ok(Step::Proposed(proposal)) => Some(digest_value(&**proposal)),
        Err(_) => None,
    };
    let acknowledged = draft
        .close(outcome_of(&result), output)
        .acknowledged()
        .await;
    finish(acknowledged, name, result)
}

/// The call's answer once its record is acknowledged (see
/// [`Durability`](switchboard_audit::Durability)): its result, or `audit_failed`.
pub(crate) fn finish<O>(
    acknowledged: Result<(), switchboard_audit::AuditError>,
    tool: &str,
    result: Result<O, InvokeError>,
) -> Result<O, InvokeError> {
    if let Err(error) = acknowledged {
        tracing::error!(%error, "audit record not written; the call is not acknowledged");
        return Err(audit_failed(tool, &error));
    }
    if let Err(error) = &result {
        tracing::info!(kind = %error.kind(), "call refused or failed");
    }
    result
}

/// The answer of a call whose record the audit log refused or did not acknowledge:
/// `audit_unavailable` when the log refused the call before it ran because the store is
/// failing, else `audit_failed`.
pub(crate) fn audit_failed(tool: &str, error: &switchboard_audit::AuditError) -> InvokeError {
    let tool = switchboard_audit::clamp_tool_name(tool).to_owned();
    let reason = error.to_string();
    match error {
        switchboard_audit::AuditError::StoreFailing(_) => {
            InvokeError::AuditUnavailable { tool, reason }
        }
        _ => InvokeError::AuditFailed { tool, reason },
    }
}

pub(crate) fn not_found(name: &str, suggestions: Vec<String>) -> InvokeError {
    InvokeError::ToolNotFound {
        name: switchboard_audit::clamp_tool_name(name).to_owned(),
        suggestions,
    }
}

pub(crate) fn domain_unavailable(tool: &RegisteredTool, reason: &str) -> InvokeError {
    InvokeError::DomainUnavailable {
        tool: tool.name.to_string(),
        domain: tool.domain.name.to_string(),
        reason: reason.to_owned(),
    }
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}

/// Pages load through the registry: every read they make is checked and audited as a call.
impl switchboard_core::ToolInvoker for ToolRegistry {
    fn invoke<'a>(
        &'a self,
        tool: &'a str,
        params: Value,
        context: &'a CallContext,
    ) -> switchboard_core::BoxFuture<'a, Result<Value, InvokeError>> {
        Box::pin(ToolRegistry::invoke(self, tool, params, context))
    }
}

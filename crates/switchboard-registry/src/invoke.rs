//! The per-call path. It runs in the caller's task: no mailbox, no actor hop.
//!
//! The order of the checks is part of the contract (ARCHITECTURE.md): tool exists → context
//! complete → no `org_id` in the params → thread owned → agent scope → category → permission →
//! input valid → gate → (mutating tools) scope ids → idempotency key → run once (in the
//! domain's bulkhead, under a timeout, catching panics) → audit. A caller refused at one step
//! learns nothing the later steps would have told it: a caller without the permission never
//! sees the input's validation errors. Mutations (idempotency, proposals) live in
//! `mutation.rs` and `approvals.rs`; this file keeps the order.
//!
//! The steps of a read run in line in one future (`call_typed`, `run_json`, with the domain run
//! expanded from `run_in_domain!`), not in nested `async fn`s: a call's future is moved whole
//! when the call starts, and nested futures copy their arguments and pad their layout, which
//! cost more than the checks themselves. What is rare (a wait for room or a permit, a gate's
//! context, the mutation path, a strict acknowledgement) is boxed for the same reason.

use std::{any::TypeId, future::Future, panic::AssertUnwindSafe, pin::pin, sync::Arc, task::Poll};

use futures::FutureExt;
use serde_json::Value;
use switchboard_approvals::Proposal;
use switchboard_audit::{Outcome, Submitted, digest_json};
use switchboard_core::{
    CallContext, Caller, Category, Initiator, InvokeError, ProposalId, Tool, ToolContext,
    ToolError, schema::find_org_id, validate_typed,
};
use tokio::time::Instant;
use tracing::Instrument;

use crate::{
    access::AgentScopes,
    audit::{AuditDraft, digest_value, reserve},
    bulkhead::Permit,
    config::AgentMutations,
    job::{Job, JsonJob, TypedJob},
    mutation,
    registry::{Shared, ToolRegistry},
    table::{Handler, RegisteredTool},
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
}

/// What a call produced: the tool's output, or a stored proposal.
pub(crate) enum Step<O> {
    Output(O),
    Proposed(Box<Proposal>),
}

/// Whether the checks let the call run, or turn it into a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admission {
    Run,
    Propose,
}

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
        self.invoke_json(name, params, context)
            .instrument(span)
            .await
    }

    async fn invoke_json(
        &self,
        name: &str,
        params: Value,
        context: &CallContext,
    ) -> Result<Value, InvokeError> {
        match self.run_json(name, params, context, Mode::Direct).await? {
            Step::Output(output) => Ok(output),
            // A direct call's proposal is reported as `approval_required` (see `run_json`).
            Step::Proposed(proposal) => Err(mutation::approval_required(&proposal)),
        }
    }

    /// The JSON call path in every mode: direct, proposing, or running an approved proposal.
    pub(crate) async fn run_json(
        &self,
        name: &str,
        params: Value,
        context: &CallContext,
        mode: Mode<'_>,
    ) -> Result<Step<Value>, InvokeError> {
        // A tool without parameters may be called with none at all.
        let params = match params {
            Value::Null => Value::Object(serde_json::Map::new()),
            other => other,
        };
        let shared = self.shared();
        let params = Arc::new(params);
        let table = shared.table.load();
        let found = table.get(name);
        let started = std::time::Instant::now();
        let reservation = reserve(&shared.audit)
            .await
            .map_err(|error| audit_failed(name, &error))?;
        let mut draft = AuditDraft::new(
            reservation,
            started,
            name,
            found,
            context,
            Ok(digest_json(&params)),
        );
        // The steps run in line, in this future: only what waits is awaited, and the rare
        // mutation path is boxed. The whole future is moved when a call starts, so every byte
        // of it is paid for on every call.
        let (result, caller) = 'call: {
            let (tool, ctx, admission, job) =
                match check_json(shared, &table, found, name, context, &params, mode) {
                    Ok(checked) => checked,
                    Err(error) => break 'call (Err(error), None),
                };
            if let Some(gate) = tool.gate() {
                // Boxed: gates are rare, and a second context would bloat every call's future.
                let gate_ctx = Box::new(read_only_context(tool, ctx.caller()));
                let checking = gate(&gate_ctx, job.gate_input());
                if let Err(error) = await_gate(tool, checking).await {
                    break 'call (Err(error), Some(ctx.into_caller()));
                }
            }
            if tool.category().mutates() {
                let mutating = Mutating {
                    shared,
                    tool,
                    caller: ctx.into_caller(),
                    admission,
                    context,
                    mode,
                };
                break 'call (
                    Box::pin(mutating.run_json(job, params, &mut draft)).await,
                    None,
                );
            }
            let result = run_in_domain!(tool, &ctx, job);
            (result.map(Step::Output), Some(ctx.into_caller()))
        };
        let result = match (mode, result) {
            (Mode::Direct, Ok(Step::Proposed(proposal))) => {
                Err(mutation::approval_required(&proposal))
            }
            (_, result) => result,
        };
        let output = match &result {
            Ok(Step::Output(output)) => Some(Ok(digest_json(output))),
            Ok(Step::Proposed(proposal)) => Some(digest_value(&**proposal)),
            Err(_) => None,
        };
        let acknowledged = match draft.close(outcome_of(&result), output, caller) {
            Submitted::Queued => Ok(()),
            // Boxed: only strict durability waits here.
            waiting => Box::pin(waiting.acknowledged()).await,
        };
        finish(acknowledged, name, result)
    }

    /// Calls a linked tool with its typed input, as Rust services do. No JSON is parsed or
    /// produced; the checks, timeout, bulkhead and audit are the same as for [`invoke`].
    ///
    /// [`invoke`]: ToolRegistry::invoke
    pub fn call<'a, T: Tool>(
        &'a self,
        input: T::Input,
        context: &'a CallContext,
    ) -> impl Future<Output = Result<T::Output, InvokeError>> + Send + 'a {
        // Not an `async fn`: that would wrap the call's future in one more future, and copy it
        // once more when the call starts.
        let span = tracing::info_span!(
            "invoke",
            tool = T::SPEC.name,
            correlation_id = context.correlation_id.as_ref().map(|id| id.as_str()),
        );
        self.call_typed::<T>(input, context).instrument(span)
    }

    async fn call_typed<T: Tool>(
        &self,
        input: T::Input,
        context: &CallContext,
    ) -> Result<T::Output, InvokeError> {
        let shared = self.shared();
        let name = T::SPEC.name;
        let table = shared.table.load();
        let found = table.get(name);
        let started = std::time::Instant::now();
        let reservation = reserve(&shared.audit)
            .await
            .map_err(|error| audit_failed(name, &error))?;
        let mut draft = AuditDraft::new(
            reservation,
            started,
            name,
            found,
            context,
            digest_value(&input),
        );
        // As in `run_json`: the steps in line, the mutation path boxed.
        let (result, caller) = 'call: {
            let (tool, ctx, admission) =
                match check_typed::<T>(shared, &table, found, name, context, &input) {
                    Ok(checked) => checked,
                    Err(error) => break 'call (Err(error), None),
                };
            if let Some(gate) = tool.gate() {
                // Boxed: gates are rare, and a second context would bloat every call's future.
                let gate_ctx = Box::new(read_only_context(tool, ctx.caller()));
                let checking = gate(&gate_ctx, &input);
                if let Err(error) = await_gate(tool, checking).await {
                    break 'call (Err(error), Some(ctx.into_caller()));
                }
            }
            if tool.category().mutates() {
                let mutating = Mutating {
                    shared,
                    tool,
                    caller: ctx.into_caller(),
                    admission,
                    context,
                    mode: Mode::Direct,
                };
                break 'call (
                    Box::pin(mutating.run_typed::<T>(input, &mut draft)).await,
                    None,
                );
            }
            let result = run_in_domain!(tool, &ctx, TypedJob::<T>(input));
            (result, Some(ctx.into_caller()))
        };
        let output = result.as_ref().ok().map(digest_value);
        let acknowledged = match draft.close(outcome_of(&result), output, caller) {
            Submitted::Queued => Ok(()),
            // Boxed: only strict durability waits here.
            waiting => Box::pin(waiting.acknowledged()).await,
        };
        finish(acknowledged, name, result)
    }
}

/// A mutating call past its checks: what its scope-id check, proposal or run needs.
struct Mutating<'a> {
    shared: &'a Shared,
    tool: &'a Arc<RegisteredTool>,
    caller: Caller,
    admission: Admission,
    context: &'a CallContext,
    mode: Mode<'a>,
}

impl Mutating<'_> {
    async fn run_json(
        self,
        job: JsonJob,
        params: Arc<Value>,
        draft: &mut AuditDraft<'_>,
    ) -> Result<Step<Value>, InvokeError> {
        let Self {
            shared,
            tool,
            caller,
            admission,
            context,
            mode,
        } = self;
        mutation::check_scope_ids(tool, &caller)?;
        if admission == Admission::Propose {
            let summary = mutation::summary_of(mode);
            let proposal = mutation::store_proposal(shared, tool, &caller, params, summary, draft)?;
            return Ok(Step::Proposed(Box::new(proposal)));
        }
        let digest = digest_json(&params);
        mutation::run_once(shared, tool, caller, context, job, digest, mode, draft)
            .await
            .map(Step::Output)
    }

    async fn run_typed<T: Tool>(
        self,
        input: T::Input,
        draft: &mut AuditDraft<'_>,
    ) -> Result<T::Output, InvokeError> {
        let Self {
            shared,
            tool,
            caller,
            admission,
            context,
            mode,
        } = self;
        mutation::check_scope_ids(tool, &caller)?;
        if admission == Admission::Propose {
            let params = Arc::new(serde_json::to_value(&input).unwrap_or(Value::Null));
            let proposal = mutation::store_proposal(shared, tool, &caller, params, None, draft)?;
            return Err(mutation::approval_required(&proposal));
        }
        // A fingerprint needs a digest: an input that cannot be serialized has that of `null`.
        let digest = digest_value(&input).unwrap_or_else(|_| digest_json(&Value::Null));
        let job = TypedJob::<T>(input);
        mutation::run_once(shared, tool, caller, context, job, digest, mode, draft).await
    }
}

/// The JSON call's checks up to its gate: [`admit`], then the params against the schema, decoded
/// into the job that runs the tool. The verified caller comes back inside the context the tool
/// will run with (built once, in `admit`: the call's future holds one caller, not a copy per
/// step).
#[allow(
    clippy::type_complexity,
    reason = "one tuple of what the checks resolved, taken apart at once"
)]
fn check_json<'t>(
    shared: &Shared,
    table: &crate::table::ToolTable,
    found: Option<&'t Arc<RegisteredTool>>,
    name: &str,
    context: &CallContext,
    params: &Arc<Value>,
    mode: Mode<'_>,
) -> Result<(&'t Arc<RegisteredTool>, ToolContext, Admission, JsonJob), InvokeError> {
    let (tool, ctx, admission) = admit(shared, table, found, name, context, Some(params), mode)?;
    tool.schema_errors(params)
        .map_err(|errors| invalid(tool, errors))?;
    let job = match &tool.handler {
        Handler::Linked(entry) => {
            let input = (entry.decode)(params).map_err(|errors| invalid(tool, errors))?;
            JsonJob::Linked(entry, input)
        }
        Handler::Runtime(runtime) => JsonJob::Runtime(Arc::clone(runtime), Value::clone(params)),
    };
    Ok((tool, ctx, admission, job))
}

/// The typed call's checks up to its gate: [`admit`], the tool's type, then the input.
fn check_typed<'t, T: Tool>(
    shared: &Shared,
    table: &crate::table::ToolTable,
    found: Option<&'t Arc<RegisteredTool>>,
    name: &str,
    context: &CallContext,
    input: &T::Input,
) -> Result<(&'t Arc<RegisteredTool>, ToolContext, Admission), InvokeError> {
    let (tool, ctx, admission) = admit(shared, table, found, name, context, None, Mode::Direct)?;
    if RegisteredTool::type_id(tool) != Some(TypeId::of::<T>()) {
        return Err(not_found(name, Vec::new()));
    }
    validate_typed(input).map_err(|errors| invalid(tool, errors))?;
    Ok((tool, ctx, admission))
}

/// The checks before the input is looked at: tool, context, `org_id`, thread, agent scope,
/// category, permission. Says whether the call runs or becomes a proposal, and gives back the
/// verified caller inside the context the tool runs with.
fn admit<'t>(
    shared: &Shared,
    table: &crate::table::ToolTable,
    found: Option<&'t Arc<RegisteredTool>>,
    name: &str,
    context: &CallContext,
    params: Option<&Value>,
    mode: Mode<'_>,
) -> Result<(&'t Arc<RegisteredTool>, ToolContext, Admission), InvokeError> {
    let tool = found.ok_or_else(|| not_found(name, table.similar_names(name)))?;
    let caller = context
        .verify()
        .map_err(|fields| InvokeError::MissingContext { fields })?;
    // The context the tool will run with, built once: the steps below read the caller in it.
    let ctx = tool_context(tool, caller);
    let caller = ctx.caller();
    if let Some(path) = params.and_then(find_org_id) {
        return Err(InvokeError::OrgIdNotAllowed { path });
    }
    // Authentication: the user must own the thread the call names. An approved proposal runs
    // in its proposer's thread, which was checked when the proposal was made.
    if let (Some(thread_id), false) = (&caller.thread_id, matches!(mode, Mode::Approval { .. }))
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
        Mode::Direct | Mode::Approval { .. } => {
            check_category(tool, caller)?;
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
    Ok((tool, ctx, admission))
}

/// The context a gate runs with: the caller and the domain, as a `read` tool (a gate cannot
/// write).
fn read_only_context(tool: &RegisteredTool, caller: &Caller) -> ToolContext {
    ToolContext::new(
        caller.clone(),
        Arc::clone(&tool.name),
        Category::Read,
        tool.domain.cell.clone(),
    )
}

/// Waits for a gate under the tool's timeout, catching a panic. The gate's future was started
/// by the caller, so it borrows the context but not the input (the wrapper `tool_policy!`
/// generates clones it), which keeps the call's future `Send`.
async fn await_gate(
    tool: &RegisteredTool,
    checking: switchboard_core::BoxFuture<'_, Result<(), ToolError>>,
) -> Result<(), InvokeError> {
    let checked = Box::pin(tokio::time::timeout(
        tool.timeout,
        AssertUnwindSafe(checking).catch_unwind(),
    ))
    .await;
    match checked {
        Err(_) => Err(InvokeError::Timeout {
            tool: tool.name.to_string(),
            after: tool.timeout,
        }),
        Ok(Err(panic)) => Err(InvokeError::ToolPanicked {
            tool: tool.name.to_string(),
            message: format!("its gate panicked: {}", panic_message(&*panic)),
        }),
        Ok(Ok(Err(error))) => Err(InvokeError::GateRefused {
            tool: tool.name.to_string(),
            error,
        }),
        Ok(Ok(Ok(()))) => Ok(()),
    }
}

/// Who may start a call of each category.
pub(crate) fn category_refusal(category: Category, caller: &Caller) -> Option<&'static str> {
    match (category, caller.initiator) {
        (Category::Read | Category::Propose, _) => None,
        (Category::Execute, Initiator::Human) => None,
        (Category::Execute, Initiator::Agent) => Some(
            "must be initiated by a human in a session; an agent acting alone may call a propose tool instead",
        ),
        (Category::Restricted, Initiator::Agent) => Some(
            "never runs on an agent's initiative; a human must start it and confirm it in the session",
        ),
        (Category::Restricted, Initiator::Human) if !caller.confirmed => Some(
            "needs an explicit confirmation by the human in the session; ask them, then call again with the confirmation set",
        ),
        (Category::Restricted, Initiator::Human) => None,
    }
}

pub(crate) fn check_category(tool: &RegisteredTool, caller: &Caller) -> Result<(), InvokeError> {
    match category_refusal(tool.category(), caller) {
        None => Ok(()),
        Some(reason) => Err(InvokeError::CategoryDenied {
            tool: tool.name.to_string(),
            category: tool.category(),
            initiator: caller.initiator,
            reason: reason.to_owned(),
        }),
    }
}

/// Runs a job in its domain with the context `ctx`: fail fast if the domain is down, take a
/// bulkhead permit, catch a panic, and stop at the timeout (which also covers a wait for a
/// permit). Evaluates to the call's result.
///
/// The common case costs no timer: a free permit is taken at once, and a tool that finishes on
/// its first poll (most do: they read a snapshot and return) never registers one. Only a wait
/// for a permit, or a tool that suspends, is put under `timeout_at`, boxed.
///
/// A macro, used inside an `async` body, rather than an `async fn`: a nested future would copy
/// its arguments (the caller) into its own state and lay it out with padding, and the call's
/// future, which holds it, is moved whole when the call starts. In line, the tool's context and
/// future live in the call's own future.
macro_rules! run_in_domain {
    ($tool:expr, $ctx:expr, $job:expr) => {
        'run: {
            let tool: &RegisteredTool = $tool;
            let ctx: &ToolContext = $ctx;
            let mut deadline = None;
            let permit = match enter_now(tool) {
                Ok(Some(permit)) => permit,
                // Boxed: the slow path's timer would otherwise bloat every call's future.
                Ok(None) => match Box::pin(enter_later(tool)).await {
                    Ok((permit, until)) => {
                        deadline = Some(until);
                        permit
                    }
                    Err(error) => break 'run Err(error),
                },
                Err(error) => break 'run Err(error),
            };
            let outcome = {
                let mut running = pin!(AssertUnwindSafe(Job::run($job, ctx)).catch_unwind());
                match futures::poll!(running.as_mut()) {
                    Poll::Ready(outcome) => Some(outcome),
                    Poll::Pending => {
                        let until = deadline.unwrap_or_else(|| Instant::now() + tool.timeout);
                        Box::pin(tokio::time::timeout_at(until, running)).await.ok()
                    }
                }
            };
            drop(permit);
            settle(tool, outcome)
        }
    };
}
use run_in_domain;

/// [`run_in_domain!`] as a function, for the mutation path (whose future is boxed anyway).
pub(crate) async fn dispatch<J: Job>(
    tool: &RegisteredTool,
    caller: Caller,
    job: J,
) -> Result<J::Output, InvokeError> {
    let ctx = tool_context(tool, caller);
    run_in_domain!(tool, &ctx, job)
}

/// A bulkhead permit if one is free (`None`: wait with [`enter_later`]); refused when the
/// domain is down.
fn enter_now(tool: &RegisteredTool) -> Result<Option<Permit<'_>>, InvokeError> {
    let domain = &tool.domain;
    if !domain.is_running() {
        return Err(domain_unavailable(tool, "its actor has stopped"));
    }
    Ok(domain.bulkhead.try_enter())
}

/// Waits for a bulkhead permit under the tool's timeout; the deadline covers the run too.
async fn enter_later(tool: &RegisteredTool) -> Result<(Permit<'_>, Instant), InvokeError> {
    let until = Instant::now() + tool.timeout;
    match tokio::time::timeout_at(until, tool.domain.bulkhead.enter()).await {
        Err(_) => Err(timed_out(tool)),
        Ok(permit) => Ok((permit, until)),
    }
}

/// The context the tool runs with.
fn tool_context(tool: &RegisteredTool, caller: Caller) -> ToolContext {
    ToolContext::new(
        caller,
        Arc::clone(&tool.name),
        tool.category(),
        Arc::clone(&tool.domain.cell),
    )
}

/// The call's result from how the tool's run ended (`None`: it timed out).
fn settle<O>(
    tool: &RegisteredTool,
    outcome: Option<std::thread::Result<Result<O, ToolError>>>,
) -> Result<O, InvokeError> {
    match outcome {
        None => Err(timed_out(tool)),
        Some(Err(panic)) => {
            let message = panic_message(&*panic);
            tool.domain.report_panic(&tool.name, &message);
            Err(InvokeError::ToolPanicked {
                tool: tool.name.to_string(),
                message,
            })
        }
        // The domain's actor went away while the tool was writing through it.
        Some(Ok(Err(error))) if error.code() == ToolError::DOMAIN_UNAVAILABLE => Err(
            domain_unavailable(tool, "its actor stopped during the call"),
        ),
        Some(Ok(Err(error))) => Err(InvokeError::ToolFailed {
            tool: tool.name.to_string(),
            error,
        }),
        Some(Ok(Ok(output))) => Ok(output),
    }
}

fn timed_out(tool: &RegisteredTool) -> InvokeError {
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

pub(crate) fn audit_failed(tool: &str, error: &switchboard_audit::AuditError) -> InvokeError {
    InvokeError::AuditFailed {
        tool: switchboard_audit::clamp_tool_name(tool).to_owned(),
        reason: error.to_string(),
    }
}

pub(crate) fn not_found(name: &str, suggestions: Vec<String>) -> InvokeError {
    InvokeError::ToolNotFound {
        name: switchboard_audit::clamp_tool_name(name).to_owned(),
        suggestions,
    }
}

fn invalid(tool: &RegisteredTool, errors: Vec<switchboard_core::FieldError>) -> InvokeError {
    InvokeError::InvalidInput {
        tool: tool.name.to_string(),
        errors,
    }
}

fn domain_unavailable(tool: &RegisteredTool, reason: &str) -> InvokeError {
    InvokeError::DomainUnavailable {
        tool: tool.name.to_string(),
        domain: tool.domain.name.to_string(),
        reason: reason.to_owned(),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned())
}

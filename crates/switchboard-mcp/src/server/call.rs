//! Answering one `tools/call`: the MCP layer's own refusals (a malformed `_meta`, a plain tool
//! hidden by `--navigation only`), each audited, then the hand-off to navigation, an approval,
//! a task, or the registry, raced against the client's cancellation; and a call whose task
//! begins at the tool's word, run until it begins it.
//!
//! Kept apart from the rest of [`McpServer`]'s handler because it is the one path a tool call
//! takes, with the audit promise that goes with it: every refusal made here leaves one record
//! through [`ToolRegistry::record_refusal`](switchboard_registry::ToolRegistry::record_refusal),
//! as the registry's and the navigator's refusals do.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResponse},
    service::RequestContext,
};
use serde_json::Value;
use switchboard_core::{
    BoxFuture, CallContext, CorrelationId, FieldError, InvokeError, Progress, ProgressNotifier,
    ask::{ClientHandler, ClientLink},
};
use tokio::sync::oneshot;
use tracing::Instrument as _;

use super::McpServer;
use crate::{
    approval, asking,
    logging::{self, CallLog, SessionLogLevel},
    navigation::{self, Navigation},
    notices, result,
    scope::RequestScope,
    tasks,
};

/// How a call whose task begins at the tool's word got on.
enum UntilTask {
    /// It began its task: the request's answer.
    Began(CallToolResponse),
    /// It ended first, with this outcome.
    Ended(Result<Value, InvokeError>),
}

impl McpServer {
    /// The log level that applies to a request: its own `_meta` level (2026-07-28), else the
    /// session's. `None` when it admits nothing.
    fn log_level(&self, context: &RequestContext<RoleServer>) -> Option<Arc<SessionLogLevel>> {
        match context.meta.log_level() {
            Some(level) => {
                let level = SessionLogLevel::fixed(level);
                level.admits_anything().then(|| Arc::new(level))
            }
            None => {
                let level = &self.session.log_level;
                level.admits_anything().then(|| Arc::clone(level))
            }
        }
    }

    /// The answer to one `tools/call`: an approval's, or the registry's.
    pub(super) async fn answer_call(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(peer) = &self.peer {
            return self.answer_peer_call(peer, request, context).await;
        }
        if context
            .meta
            .0
            .0
            .contains_key(switchboard_link::IDENTITY_META_KEY)
        {
            return Err(super::peer::refuse(
                None,
                &request.name,
                None,
                &"a statement came in a session that is not a peer's",
            ));
        }
        let scope = match RequestScope::from_meta(&context.meta) {
            Ok(scope) => scope,
            Err(refused) => {
                let refusal = InvokeError::InvalidInput {
                    tool: request.name.to_string(),
                    errors: vec![FieldError::new("", refused.message.clone())],
                };
                self.record_refusal(&request, &context, refusal).await;
                return Err(refused);
            }
        };
        let mut call_context = self.call_context(&context, &scope);
        // On 2026-07-28 a tool's questions go in an `input_required` result, and its answers
        // come with the next call, under a `requestState` of their own. A state that does not
        // open as one is an approval's (or a forgery), which the approval path judges.
        let rounds = if asking::asks_in_rounds(&context) {
            let state_key = self.state_key();
            asking::RoundAsker::for_round(
                &state_key,
                &self.identity,
                &request,
                context.client_capabilities(),
            )
            .map(Arc::new)
        } else {
            call_context.client = asking::inline_link(&context);
            None
        };
        if let Some(rounds) = &rounds {
            call_context.client = ClientLink::new(Arc::clone(rounds) as Arc<dyn ClientHandler>);
        }
        if let Some(navigation) = &self.navigation {
            if navigation.tool(&request.name).is_some() {
                return self
                    .answer_navigation(navigation, request, &call_context, &context)
                    .await;
            }
            if navigation.hides_plain_tools() {
                let refusal = InvokeError::ToolNotFound {
                    name: request.name.to_string(),
                    suggestions: vec![
                        navigation::NAVIGATE.to_owned(),
                        navigation::EXECUTE_ACTION.to_owned(),
                    ],
                };
                self.record_refusal(&request, &context, refusal).await;
                return Err(ErrorData::invalid_params(
                    format!(
                        "no tool `{}` here: this server offers `{}` and `{}`; start with \
                         navigate('/')",
                        request.name,
                        navigation::NAVIGATE,
                        navigation::EXECUTE_ACTION
                    ),
                    None,
                ));
            }
        }
        let answers_a_round = rounds.is_some() && request.request_state.is_some();
        if !answers_a_round && approval::concerns(&self.identity, &request) {
            let state_key = self.state_key();
            let answer = approval::handle(
                &self.registry,
                &self.identity,
                &state_key,
                &request,
                &call_context,
                &context,
            )
            .await;
            if let Some(answer) = answer {
                return answer;
            }
        }
        let mut task_at_begin = None;
        match tasks::dispatch(&self.registry, &request.name, &context) {
            tasks::Dispatch::Inline => {}
            // A call that asks in rounds has its round asker (a `requestState` that does not
            // open as a round's went to the approval path, which answered it).
            tasks::Dispatch::TaskAtBegin if rounds.is_some() => task_at_begin = rounds.clone(),
            tasks::Dispatch::Task | tasks::Dispatch::TaskAtBegin => {
                return Ok(tasks::start(
                    &self.catalog.tasks,
                    &self.identity,
                    self.registry.clone(),
                    request,
                    context.client_capabilities(),
                    call_context,
                ));
            }
            tasks::Dispatch::NeedsTasks => {
                let error = tasks::needs_tasks_error(&request.name);
                let refusal = InvokeError::InvalidInput {
                    tool: request.name.to_string(),
                    errors: vec![FieldError::new("", error.message.to_string())],
                };
                self.record_refusal(&request, &context, refusal).await;
                return Err(error);
            }
        }
        // A round's arguments are kept to bind the requestState its questions may need.
        let arguments = match &rounds {
            Some(_) => request.arguments.clone(),
            None => request.arguments.take(),
        };
        let params = Value::Object(arguments.unwrap_or_default());
        let outcome = match &task_at_begin {
            Some(rounds) => {
                match self
                    .run_until_task(&request.name, params, rounds, call_context, &context)
                    .await?
                {
                    UntilTask::Began(task) => return Ok(task),
                    UntilTask::Ended(outcome) => outcome,
                }
            }
            None => {
                self.invoke(&request.name, params, &mut call_context, &context)
                    .await?
            }
        };
        // A call that failed for want of a capability the request did not declare is the
        // protocol's error on this revision, not the tool's.
        if let Some(rounds) = &rounds
            && let Some(capability) = rounds.missing_capability()
            && outcome.is_err()
        {
            return Err(asking::missing_capability_error(capability, &request.name));
        }
        if let Some(rounds) = &rounds
            && let Some(asking) = rounds.input_required(&self.state_key())
        {
            return asking.map(Into::into).map_err(|error| {
                tracing::error!(%error, tool = %request.name, "could not seal the questions' requestState");
                ErrorData::internal_error("could not seal the requestState", None)
            });
        }
        if task_at_begin.is_some() {
            // It ended without beginning its task: the client, which asked for a task, gets
            // one, ended already.
            let returns_content = self.returns_content(&request.name);
            return Ok(self
                .catalog
                .tasks
                .ended(&self.identity, outcome, returns_content));
        }
        result::call_result(outcome, || self.returns_content(&request.name)).map(Into::into)
    }

    /// Whether the tool `name` answers with content blocks (see
    /// [`ToolDescriptor::returns_content`](switchboard_core::ToolDescriptor::returns_content)).
    fn returns_content(&self, name: &str) -> bool {
        self.registry
            .find(name)
            .is_some_and(|descriptor| descriptor.returns_content())
    }

    /// Runs a call whose task begins at the tool's word (`ctx.begin_task()`) until it begins
    /// it, which answers the request with the task while the call runs on in it, or until it
    /// ends first: with the round's questions, or with its result. Its questions before the
    /// task are `rounds`', and after it the task's; its progress reports become the task's
    /// status message. `Err` if the client cancels the request before the task begins.
    async fn run_until_task(
        &self,
        name: &str,
        params: Value,
        rounds: &Arc<asking::RoundAsker>,
        mut call_context: CallContext,
        context: &RequestContext<RoleServer>,
    ) -> Result<UntilTask, ErrorData> {
        let (begin, begun) = oneshot::channel();
        let asker = Arc::new(asking::RoundsThenTask::new(
            Arc::clone(rounds),
            context.client_capabilities(),
            begin,
        ));
        let reporter = Arc::clone(&asker);
        call_context.progress = ProgressNotifier::new(move |progress: Progress<'_>| {
            if let Some(message) = progress.message {
                reporter.report_status(message);
            }
        });
        call_context.client = ClientLink::new(asker);
        let registry = self.registry.clone();
        let tool = name.to_owned();
        let mut call: BoxFuture<'static, Result<Value, InvokeError>> =
            Box::pin(async move { registry.invoke(&tool, params, &call_context).await });
        // The call first: a call that ended is never handed to a task.
        tokio::select! {
            biased;
            outcome = &mut call => Ok(UntilTask::Ended(outcome)),
            Ok(begun) = begun => {
                let returns_content = self.returns_content(name);
                Ok(UntilTask::Began(self.catalog.tasks.take_over(
                    &self.identity,
                    call,
                    begun,
                    returns_content,
                )))
            }
            () = context.ct.cancelled() => {
                tracing::info!(tool = %name, "MCP call cancelled by the client before its task began");
                Err(ErrorData::internal_error("the request was cancelled", None))
            }
        }
    }

    /// Audits `refusal` of `request`, a call refused here before the registry or the navigator
    /// was asked (so that it leaves one record, as their refusals do), in the request's
    /// session with its correlation id and without its thread or project (the `_meta` naming
    /// them may be what was refused). The client is answered the protocol error either way: a
    /// record that cannot be written is logged.
    async fn record_refusal(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        refusal: InvokeError,
    ) {
        let call_context = self.call_context(context, &RequestScope::default());
        let params = Value::Object(request.arguments.clone().unwrap_or_default());
        let recorded = self
            .registry
            .record_refusal(&request.name, &params, &call_context, refusal)
            .await;
        if let InvokeError::AuditFailed { reason, .. }
        | InvokeError::AuditUnavailable { reason, .. } = recorded
        {
            tracing::error!(tool = %request.name, %reason, "a refused MCP tools/call could not be audited");
        }
    }

    /// The answer to a call of a navigation meta-tool, unless the client cancels it first.
    async fn answer_navigation(
        &self,
        navigation: &Navigation,
        request: CallToolRequestParams,
        call_context: &CallContext,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let state_key = self.state_key();
        let call = navigation.call(
            &request.name,
            request.arguments.unwrap_or_default(),
            &self.identity,
            &state_key,
            call_context,
        );
        tokio::select! {
            answer = call => Ok(answer.into()),
            () = context.ct.cancelled() => {
                tracing::info!(tool = %request.name, "MCP navigation call cancelled by the client");
                Err(ErrorData::internal_error("the request was cancelled", None))
            }
        }
    }

    /// Runs one call through the registry, with its notifications if the request asked for
    /// any. `Err` if the client cancelled it (the `invoke` future is then dropped).
    async fn invoke(
        &self,
        name: &str,
        params: Value,
        call_context: &mut CallContext,
        context: &RequestContext<RoleServer>,
    ) -> Result<Result<Value, switchboard_core::InvokeError>, ErrorData> {
        let progress_token = context.meta.get_progress_token();
        let log_level = self.log_level(context);
        let mut span = tracing::Span::none();
        let mut pump = None;
        if progress_token.is_some() || log_level.is_some() {
            let wants_progress = progress_token.is_some();
            let (sender, receiver) = notices::queue(context.peer.clone(), progress_token);
            if wants_progress {
                call_context.progress = ProgressNotifier::new(sender.clone());
            }
            if let Some(level) = log_level {
                span = logging::call_span(CallLog::new(level, sender));
            }
            pump = Some(receiver);
        }
        let call = self
            .registry
            .invoke(name, params, call_context)
            .instrument(span);
        let call = notices::forward_while(call, pump.as_mut());
        tokio::select! {
            outcome = call => Ok(outcome),
            () = context.ct.cancelled() => {
                let correlation_id = call_context.correlation_id.as_ref().map(CorrelationId::as_str);
                tracing::info!(tool = %name, correlation_id = correlation_id.unwrap_or("-"), "MCP call cancelled by the client");
                Err(ErrorData::internal_error("the request was cancelled", None))
            }
        }
    }
}

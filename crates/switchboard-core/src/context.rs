//! The call context: who is calling, for which tenant, in which session, and why.
//!
//! A [`CallContext`] is what a caller hands to the runtime; any field may be missing, because
//! callers make mistakes and the runtime must say which fields are absent rather than guess.
//! [`CallContext::verify`] turns it into a [`Caller`], in which every required field is present.
//! Tools only ever see a [`Caller`] (through `ToolContext`), so a tool cannot observe a call
//! without an organisation.
//!
//! A context may also carry a [`ProgressNotifier`]: where the tool's progress reports go. It is
//! not part of who is calling, so it is neither serialised nor compared.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{
    ask::ClientLink,
    ids::{
        AgentType, CorrelationId, IdempotencyKey, OrgId, ProjectId, Role, SessionId, ThreadId,
        UserId,
    },
    progress::ProgressNotifier,
};

/// Who started a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Initiator {
    /// A human in a session asked for this call.
    Human,
    /// An agent decided on its own to make this call. The default: a caller must say so
    /// explicitly to be treated as a human.
    #[default]
    Agent,
}

impl Initiator {
    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Initiator::Human => "human",
            Initiator::Agent => "agent",
        }
    }
}

impl std::fmt::Display for Initiator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Initiator {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "human" => Ok(Initiator::Human),
            "agent" => Ok(Initiator::Agent),
            other => Err(format!(
                "unknown initiator `{other}`: expected `human` or `agent`"
            )),
        }
    }
}

/// The fields a complete context must carry, in the order they are reported.
pub const REQUIRED_CONTEXT_FIELDS: [&str; 4] =
    ["org_id", "user_id", "session_id", "correlation_id"];

/// What a caller supplies with a call. Build it with [`CallContext::builder`] or fill the fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallContext {
    /// The tenant. The only source of `org_id` a tool ever sees.
    pub org_id: Option<OrgId>,
    /// The user on whose behalf the call runs.
    pub user_id: Option<UserId>,
    /// The session the call belongs to.
    pub session_id: Option<SessionId>,
    /// The id that ties this call to the request it serves.
    pub correlation_id: Option<CorrelationId>,
    /// The caller's roles, for the permission matrix. Shared, so that verifying a context for
    /// a call does not copy them.
    pub roles: Arc<[Role]>,
    /// Who started the call.
    pub initiator: Initiator,
    /// Set when a human explicitly confirmed this action in the session (a button press, a
    /// typed confirmation). Required by `restricted` tools.
    pub confirmed: bool,
    /// Where the tool's progress reports go (default: nowhere). Not serialised, and ignored by
    /// equality.
    #[serde(skip)]
    pub progress: ProgressNotifier,
    /// Where the tool's questions for the client go (default: nowhere, or the registry's own
    /// handler). Not serialised, and ignored by equality.
    #[serde(skip)]
    pub client: ClientLink,
    /// The kind of agent making the call, filled by the runtime, the CLI or the MCP identity
    /// (never from params). Checked against the agent scope table.
    pub agent_type: Option<AgentType>,
    /// The conversation thread the call belongs to; when present, the user must own it.
    pub thread_id: Option<ThreadId>,
    /// The project the call works in, for tools that declare they need one.
    pub project_id: Option<ProjectId>,
    /// The caller's name for this mutation: a retry with the same key returns the first
    /// result. Absent: the runtime derives one (tool, org, thread or session, params).
    pub idempotency_key: Option<IdempotencyKey>,
    /// The W3C `traceparent` (version `00`) of the span this call's span is a child of when
    /// the call is not made inside a traced span. A workflow run keeps the one of the call that
    /// started it, so that its steps stay in that call's trace when the run is driven again
    /// later (after a pause, a restart, on another node). Not checked here: the tracing layer
    /// ignores a value that is not a valid `traceparent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_parent: Option<String>,
}

impl CallContext {
    /// Starts an empty context.
    pub fn builder() -> CallContextBuilder {
        CallContextBuilder::default()
    }

    /// The names of the required fields that are missing, in a stable order.
    pub fn missing_fields(&self) -> Vec<&'static str> {
        let present = [
            self.org_id.is_some(),
            self.user_id.is_some(),
            self.session_id.is_some(),
            self.correlation_id.is_some(),
        ];
        REQUIRED_CONTEXT_FIELDS
            .into_iter()
            .zip(present)
            .filter_map(|(field, present)| (!present).then_some(field))
            .collect()
    }

    /// Checks that every required field is present.
    pub fn verify(&self) -> Result<Caller, Vec<&'static str>> {
        match (
            &self.org_id,
            &self.user_id,
            &self.session_id,
            &self.correlation_id,
        ) {
            (Some(org_id), Some(user_id), Some(session_id), Some(correlation_id)) => Ok(Caller {
                org_id: org_id.clone(),
                user_id: user_id.clone(),
                session_id: session_id.clone(),
                correlation_id: correlation_id.clone(),
                roles: Arc::clone(&self.roles),
                initiator: self.initiator,
                confirmed: self.confirmed,
                progress: self.progress.clone(),
                client: self.client.clone(),
                agent_type: self.agent_type.clone(),
                thread_id: self.thread_id.clone(),
                project_id: self.project_id.clone(),
                idempotency_key: self.idempotency_key.clone(),
                trace_parent: self.trace_parent.clone(),
            }),
            _ => Err(self.missing_fields()),
        }
    }
}

/// Builds a [`CallContext`] field by field.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct CallContextBuilder {
    context: CallContext,
    roles: Vec<Role>,
}

impl CallContextBuilder {
    /// Sets the tenant.
    pub fn org(mut self, org_id: impl Into<OrgId>) -> Self {
        self.context.org_id = Some(org_id.into());
        self
    }

    /// Sets the user.
    pub fn user(mut self, user_id: impl Into<UserId>) -> Self {
        self.context.user_id = Some(user_id.into());
        self
    }

    /// Sets the session.
    pub fn session(mut self, session_id: impl Into<SessionId>) -> Self {
        self.context.session_id = Some(session_id.into());
        self
    }

    /// Sets the correlation id.
    pub fn correlation(mut self, correlation_id: impl Into<CorrelationId>) -> Self {
        self.context.correlation_id = Some(correlation_id.into());
        self
    }

    /// Adds a role.
    pub fn role(mut self, role: impl Into<Role>) -> Self {
        self.roles.push(role.into());
        self
    }

    /// Adds several roles.
    pub fn roles<R: Into<Role>>(mut self, roles: impl IntoIterator<Item = R>) -> Self {
        self.roles.extend(roles.into_iter().map(Into::into));
        self
    }

    /// Sets who started the call.
    pub fn initiator(mut self, initiator: Initiator) -> Self {
        self.context.initiator = initiator;
        self
    }

    /// Marks the call as explicitly confirmed by a human in the session.
    pub fn confirmed(mut self, confirmed: bool) -> Self {
        self.context.confirmed = confirmed;
        self
    }

    /// Sends the tool's questions for the client to `link`.
    pub fn client(mut self, link: ClientLink) -> Self {
        self.context.client = link;
        self
    }

    /// Sends the tool's progress reports to `notifier`.
    pub fn progress(mut self, notifier: ProgressNotifier) -> Self {
        self.context.progress = notifier;
        self
    }

    /// Sets the kind of agent making the call.
    pub fn agent_type(mut self, agent_type: impl Into<AgentType>) -> Self {
        self.context.agent_type = Some(agent_type.into());
        self
    }

    /// Sets the `traceparent` the call's span is parented on outside a traced span.
    pub fn trace_parent(mut self, traceparent: impl Into<String>) -> Self {
        self.context.trace_parent = Some(traceparent.into());
        self
    }

    /// Sets the conversation thread.
    pub fn thread(mut self, thread_id: impl Into<ThreadId>) -> Self {
        self.context.thread_id = Some(thread_id.into());
        self
    }

    /// Sets the project.
    pub fn project(mut self, project_id: impl Into<ProjectId>) -> Self {
        self.context.project_id = Some(project_id.into());
        self
    }

    /// Sets the idempotency key of a mutating call.
    pub fn idempotency_key(mut self, key: impl Into<IdempotencyKey>) -> Self {
        self.context.idempotency_key = Some(key.into());
        self
    }

    /// Finishes the context. Missing fields are reported when the context is used.
    pub fn build(mut self) -> CallContext {
        if !self.roles.is_empty() {
            let mut roles = self.context.roles.to_vec();
            roles.append(&mut self.roles);
            self.context.roles = roles.into();
        }
        self.context
    }
}

/// A verified context: every required field is present. Tools see the caller through this type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Caller {
    /// The tenant the call acts for.
    pub org_id: OrgId,
    /// The user on whose behalf it runs.
    pub user_id: UserId,
    /// The session it belongs to.
    pub session_id: SessionId,
    /// The id tying it to its request.
    pub correlation_id: CorrelationId,
    /// The caller's roles.
    pub roles: Arc<[Role]>,
    /// Who started the call.
    pub initiator: Initiator,
    /// Whether a human explicitly confirmed it.
    pub confirmed: bool,
    /// Where its progress reports go; use [`ToolContext::progress`](crate::ToolContext::progress)
    /// to report. Not serialised, and ignored by equality.
    #[serde(skip)]
    pub progress: ProgressNotifier,
    /// Where its questions for the client go; use
    /// [`ToolContext::elicit`](crate::ToolContext::elicit) and
    /// [`ToolContext::sample`](crate::ToolContext::sample) to ask. Not serialised, and ignored by
    /// equality.
    #[serde(skip)]
    pub client: ClientLink,
    /// The kind of agent making the call, if one is.
    pub agent_type: Option<AgentType>,
    /// The conversation thread, owned by `user_id` (checked before the tool runs).
    pub thread_id: Option<ThreadId>,
    /// The project the call works in.
    pub project_id: Option<ProjectId>,
    /// The idempotency key the caller gave (a mutating call's own key; `None` when the
    /// registry derives one). A tool that may retry an effect it cannot see happen, such as a
    /// call to a mounted server that died mid-call, retries only under a key the caller gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<IdempotencyKey>,
    /// The `traceparent` the call's span is parented on outside a traced span (see
    /// [`CallContext::trace_parent`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_parent: Option<String>,
}

impl Caller {
    /// Whether the caller holds `role`.
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|held| held.as_str() == role)
    }
}

/// The context of a call made *as* this caller: a tool that calls another tool through the
/// registry passes every field on, so the inner call is checked and audited as the outer
/// caller's.
impl From<&Caller> for CallContext {
    fn from(caller: &Caller) -> Self {
        CallContext {
            org_id: Some(caller.org_id.clone()),
            user_id: Some(caller.user_id.clone()),
            session_id: Some(caller.session_id.clone()),
            correlation_id: Some(caller.correlation_id.clone()),
            roles: Arc::clone(&caller.roles),
            initiator: caller.initiator,
            confirmed: caller.confirmed,
            progress: caller.progress.clone(),
            client: caller.client.clone(),
            agent_type: caller.agent_type.clone(),
            thread_id: caller.thread_id.clone(),
            project_id: caller.project_id.clone(),
            idempotency_key: caller.idempotency_key.clone(),
            trace_parent: caller.trace_parent.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_context_misses_every_required_field() {
        let context = CallContext::default();
        assert_eq!(context.missing_fields(), REQUIRED_CONTEXT_FIELDS.to_vec());
        assert_eq!(context.verify(), Err(REQUIRED_CONTEXT_FIELDS.to_vec()));
    }

    #[test]
    fn complete_context_verifies() {
        let context = CallContext::builder()
            .org("acme")
            .user("u1")
            .session("s1")
            .correlation("c1")
            .role("staff")
            .initiator(Initiator::Human)
            .build();
        let caller = context.verify().expect("context is complete");
        assert_eq!(caller.org_id, "acme");
        assert!(caller.has_role("staff"));
        assert!(!caller.has_role("admin"));
        assert_eq!(caller.initiator, Initiator::Human);
    }

    #[test]
    fn reports_only_the_missing_fields() {
        let context = CallContext::builder().org("acme").session("s1").build();
        assert_eq!(context.missing_fields(), ["user_id", "correlation_id"]);
    }

    #[test]
    fn the_progress_notifier_reaches_the_caller_but_not_equality_or_json() {
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&seen);
        let notifier = ProgressNotifier::new(move |_: crate::Progress<'_>| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        let plain = CallContext::builder()
            .org("acme")
            .user("u1")
            .session("s1")
            .correlation("c1")
            .build();
        let reporting = CallContext::builder()
            .org("acme")
            .user("u1")
            .session("s1")
            .correlation("c1")
            .progress(notifier)
            .build();
        assert_eq!(plain, reporting, "a notifier is not part of who calls");
        assert_eq!(
            serde_json::to_value(&plain).expect("serialises"),
            serde_json::to_value(&reporting).expect("serialises")
        );
        let caller = reporting.verify().expect("complete");
        assert!(caller.progress.is_active());
        caller.progress.report(1.0, None, None);
        assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(!plain.verify().expect("complete").progress.is_active());
    }

    #[test]
    fn initiator_defaults_to_agent() {
        assert_eq!(CallContext::default().initiator, Initiator::Agent);
        assert_eq!("human".parse::<Initiator>(), Ok(Initiator::Human));
        assert!("robot".parse::<Initiator>().is_err());
    }
}

//! Who an MCP call acts as: the organisation, user, roles and initiator behind a connection.
//!
//! The identity always comes from the transport, never from a call's arguments: on stdio (and
//! on an HTTP endpoint without tokens, loopback only) it is fixed by the operator who starts the
//! server; on an HTTP endpoint with `--tokens` it is the identity the bearer token maps to (see
//! `http::auth`). An MCP client is a program, so the initiator defaults to
//! [`Initiator::Agent`]: such a caller may run `read` and `propose` tools but never `execute` or
//! `restricted` ones, unless the operator deliberately says that a human drives the client.
//!
//! The operator may also name the kind of agent behind the connection (`agent_type`, checked
//! against the agent scope table) and let the human at the client approve, through MCP
//! elicitation, the mutations that agent asks for (`approve_by_elicitation`, off unless set:
//! see `crate::approval`). The thread and project of a call come from the request's `_meta`
//! instead (`crate::scope`): they change from call to call, who is calling does not.

use switchboard_core::{AgentType, CallContext, Initiator, Role};

/// The caller behind an MCP connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The organisation (tenant) acted for; `None` makes every call `missing_context`.
    pub org: Option<String>,
    /// The user acted as; `None` makes every call `missing_context`.
    pub user: Option<String>,
    /// The roles the user holds, checked against the permission matrix.
    pub roles: Vec<Role>,
    /// Who starts the calls: [`Initiator::Agent`] unless set otherwise.
    pub initiator: Initiator,
    /// The kind of agent behind the connection (`planner`, `claude-code`, ...), if the
    /// operator named one; the agent scope table decides which tools it may call.
    pub agent_type: Option<AgentType>,
    /// Whether the human at the client may approve, by answering an MCP elicitation, the
    /// execute and restricted calls this identity's agent makes (they become proposals). Off
    /// unless the operator turns it on: the server cannot tell whether a client shows an
    /// elicitation to its user or answers it by program (docs/mcp.md, "Approvals over MCP").
    pub approve_by_elicitation: bool,
}

impl Identity {
    /// An agent acting for `user` in `org`, with no roles yet.
    pub fn agent(org: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            org: Some(org.into()),
            user: Some(user.into()),
            roles: Vec::new(),
            initiator: Initiator::Agent,
            agent_type: None,
            approve_by_elicitation: false,
        }
    }

    /// No one: no organisation, user or roles, so every call made as it is `missing_context`.
    /// What a peer token's session holds, whose calls run as their identity statements say.
    pub(crate) fn nobody() -> Self {
        Self {
            org: None,
            user: None,
            roles: Vec::new(),
            initiator: Initiator::Agent,
            agent_type: None,
            approve_by_elicitation: false,
        }
    }

    /// Adds a role.
    #[must_use]
    pub fn with_role(mut self, role: impl Into<Role>) -> Self {
        self.roles.push(role.into());
        self
    }

    /// Sets who starts the calls.
    #[must_use]
    pub fn with_initiator(mut self, initiator: Initiator) -> Self {
        self.initiator = initiator;
        self
    }

    /// Names the kind of agent behind the connection.
    #[must_use]
    pub fn with_agent_type(mut self, agent_type: impl Into<AgentType>) -> Self {
        self.agent_type = Some(agent_type.into());
        self
    }

    /// Lets (or stops) the human at the client approve this agent's mutations through MCP
    /// elicitation.
    #[must_use]
    pub fn with_approval_by_elicitation(mut self, allowed: bool) -> Self {
        self.approve_by_elicitation = allowed;
        self
    }

    /// `org/user`, for log lines (`?` for a missing part). Never a secret.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}/{}",
            self.org.as_deref().unwrap_or("?"),
            self.user.as_deref().unwrap_or("?")
        )
    }

    /// The context of one call made by this identity in `session_id`, tied together by
    /// `correlation_id`.
    pub(crate) fn call_context(&self, session_id: &str, correlation_id: &str) -> CallContext {
        let mut builder = CallContext::builder()
            .session(session_id)
            .correlation(correlation_id)
            .initiator(self.initiator)
            .roles(self.roles.iter().cloned());
        if let Some(org) = &self.org {
            builder = builder.org(org.as_str());
        }
        if let Some(user) = &self.user {
            builder = builder.user(user.as_str());
        }
        if let Some(agent_type) = &self.agent_type {
            builder = builder.agent_type(agent_type.clone());
        }
        builder.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_carries_the_identity_and_the_given_ids() {
        let identity = Identity::agent("acme", "alice").with_role("admin");
        let context = identity.call_context("s1", "c1");
        assert!(context.missing_fields().is_empty());
        assert_eq!(context.initiator, Initiator::Agent);
        assert_eq!(
            context.session_id.as_ref().map(|id| id.as_str()),
            Some("s1")
        );
        assert_eq!(identity.describe(), "acme/alice");
        assert_eq!(context.agent_type, None);
    }

    #[test]
    fn the_agent_type_is_the_identity_s() {
        let identity = Identity::agent("acme", "alice").with_agent_type("planner");
        let context = identity.call_context("s1", "c1");
        assert_eq!(
            context.agent_type.as_ref().map(|t| t.as_str()),
            Some("planner")
        );
        assert!(!identity.approve_by_elicitation, "off unless turned on");
        assert!(
            identity
                .with_approval_by_elicitation(true)
                .approve_by_elicitation
        );
    }
}

//! Who every MCP call acts as, fixed when the server starts.
//!
//! This increment has no authentication: the operator who starts the server says which
//! organisation, user and roles the connected client acts for. An MCP client is a program, so
//! the initiator defaults to [`Initiator::Agent`]: such a caller may run `read` and `propose`
//! tools but never `execute` or `restricted` ones, unless the operator deliberately says that a
//! human drives the client.

use switchboard_core::{CallContext, Initiator, Role};

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
}

impl Identity {
    /// An agent acting for `user` in `org`, with no roles yet.
    pub fn agent(org: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            org: Some(org.into()),
            user: Some(user.into()),
            roles: Vec::new(),
            initiator: Initiator::Agent,
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
        builder.build()
    }
}

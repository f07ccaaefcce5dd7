//! Who an MCP call acts as: the organisation, user, roles and initiator behind a connection.
//!
//! The identity always comes from the transport, never from a call's arguments: on stdio (and
//! on an HTTP endpoint without tokens, loopback only) it is fixed by the operator who starts the
//! server; on an HTTP endpoint with `--tokens` it is the identity the bearer token maps to (see
//! `http::auth`). An MCP client is a program, so the initiator defaults to
//! [`Initiator::Agent`]: such a caller may run `read` and `propose` tools but never `execute` or
//! `restricted` ones, unless the operator deliberately says that a human drives the client.

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
    }
}

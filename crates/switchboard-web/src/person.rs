//! Who a browser request acts as, and how a presented token is checked.

use std::{fmt, sync::Arc};

use switchboard_core::Role;

/// The person behind a browser request: always a human caller (`Initiator::Human`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The organisation acted for; `None` makes every page `missing_context`.
    pub org: Option<String>,
    /// The user acted as; `None` makes every page `missing_context`.
    pub user: Option<String>,
    /// The roles the user holds, checked against the permission matrix.
    pub roles: Vec<Role>,
}

impl Person {
    /// `user` in `org`, with no roles yet.
    pub fn new(org: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            org: Some(org.into()),
            user: Some(user.into()),
            roles: Vec::new(),
        }
    }

    /// Adds a role.
    #[must_use]
    pub fn with_role(mut self, role: impl Into<Role>) -> Self {
        self.roles.push(role.into());
        self
    }

    /// `org/user`, for the page header and logs (`?` for a missing part).
    pub(crate) fn describe(&self) -> String {
        format!(
            "{}/{}",
            self.org.as_deref().unwrap_or("?"),
            self.user.as_deref().unwrap_or("?")
        )
    }
}

/// Checks a presented bearer token: the person it stands for, or `None`.
pub type TokenCheck = Arc<dyn Fn(&str) -> Option<Person> + Send + Sync>;

/// How people sign in.
#[derive(Clone)]
#[non_exhaustive]
pub enum SignIn {
    /// Nobody signs in: every request acts as this person (a loopback address only, which the
    /// caller of [`router`](crate::router) checks, as `switchboard serve --http` does).
    Operator(Person),
    /// A person signs in once with a bearer token that `check` accepts (the tokens of
    /// `--tokens`), and then carries a session cookie.
    Tokens(TokenCheck),
}

impl fmt::Debug for SignIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignIn::Operator(person) => f.debug_tuple("Operator").field(person).finish(),
            SignIn::Tokens(_) => f.write_str("Tokens(..)"),
        }
    }
}

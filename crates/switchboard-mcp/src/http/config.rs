//! [`HttpConfig`]: everything an HTTP endpoint needs besides the registry, checked when built.
//!
//! The one rule enforced here: an endpoint without bearer tokens acts as the operator for
//! whoever connects, so it may only listen on a loopback address. Anything else about the
//! configuration (token files, allow-lists) is checked where it is parsed.

use std::{net::SocketAddr, time::Duration};

use super::{
    auth::TokenTable,
    origin::{AllowedHost, AllowedOrigin},
};
use crate::identity::Identity;

/// The default limit on a request body: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long a session outlives its last HTTP exchange by default: 10 minutes.
pub const DEFAULT_SESSION_GRACE: Duration = Duration::from_secs(600);

/// Who HTTP requests act as.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HttpAuth {
    /// Every request acts as this identity, with no authentication: loopback addresses only.
    Operator(Identity),
    /// A request must carry `Authorization: Bearer <token>` with a token of the table, and
    /// acts as that token's identity.
    Tokens(TokenTable),
}

/// A configuration [`HttpConfig::new`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpConfigError {
    /// No token file, and an address other machines can reach.
    #[error(
        "refusing to serve MCP over HTTP on {addr} without authentication: anyone who can \
         reach that address would act as {acting_as}. Bind a loopback address (for example \
         --http 127.0.0.1:{port}) or give --tokens FILE (see docs/mcp.md)",
        port = addr.port()
    )]
    UnauthenticatedNonLoopback {
        /// The address asked for.
        addr: SocketAddr,
        /// `org/user` of the operator identity.
        acting_as: String,
    },
}

/// How to run one streamable-HTTP endpoint.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub(crate) addr: SocketAddr,
    pub(crate) auth: HttpAuth,
    pub(crate) extra_hosts: Vec<AllowedHost>,
    pub(crate) extra_origins: Vec<AllowedOrigin>,
    pub(crate) max_body_bytes: usize,
    pub(crate) session_grace: Duration,
}

impl HttpConfig {
    /// An endpoint on `addr` (port 0 picks a free port) with the default limits. Without
    /// tokens, `addr` must be a loopback address.
    pub fn new(addr: SocketAddr, auth: HttpAuth) -> Result<Self, HttpConfigError> {
        if let HttpAuth::Operator(identity) = &auth
            && !addr.ip().to_canonical().is_loopback()
        {
            return Err(HttpConfigError::UnauthenticatedNonLoopback {
                addr,
                acting_as: identity.describe(),
            });
        }
        Ok(Self {
            addr,
            auth,
            extra_hosts: Vec::new(),
            extra_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            session_grace: DEFAULT_SESSION_GRACE,
        })
    }

    /// Also accepts requests from web pages at `origin` (besides the bound port's loopback
    /// origins).
    #[must_use]
    pub fn allow_origin(mut self, origin: AllowedOrigin) -> Self {
        self.extra_origins.push(origin);
        self
    }

    /// Also answers to `Host: host` (besides `localhost`, `127.0.0.1`, `::1` and the bound
    /// address), for a server reached by a name or through a proxy.
    #[must_use]
    pub fn allow_host(mut self, host: AllowedHost) -> Self {
        self.extra_hosts.push(host);
        self
    }

    /// Refuses request bodies longer than `bytes` with `413` (default
    /// [`DEFAULT_MAX_BODY_BYTES`]).
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Keeps a session for `grace` after its last HTTP exchange ended, so a client can
    /// reconnect to it (default [`DEFAULT_SESSION_GRACE`]).
    #[must_use]
    pub fn session_grace(mut self, grace: Duration) -> Self {
        self.session_grace = grace;
        self
    }

    /// The address to listen on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_tokens_only_loopback_addresses_are_allowed() {
        let operator = || HttpAuth::Operator(Identity::agent("acme", "alice"));
        for loopback in [
            "127.0.0.1:0",
            "[::1]:8080",
            "127.1.2.3:80",
            "[::ffff:127.0.0.1]:1",
        ] {
            let addr = loopback.parse().expect("an address");
            assert!(HttpConfig::new(addr, operator()).is_ok(), "{loopback}");
        }
        for open in ["0.0.0.0:8080", "[::]:8080", "10.0.0.5:8080"] {
            let addr = open.parse().expect("an address");
            let error = HttpConfig::new(addr, operator()).expect_err(open);
            let message = error.to_string();
            assert!(
                message.contains("--tokens") && message.contains("acme/alice"),
                "{message}"
            );
        }
    }
}

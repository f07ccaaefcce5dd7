//! [`HttpConfig`]: everything an HTTP endpoint needs besides the registry, checked when built,
//! and [`HttpLimits`]: what one client may hold of the server.
//!
//! The one rule enforced here: an endpoint without bearer tokens acts as the operator for
//! whoever connects, so it may only listen on a loopback address. Anything else about the
//! configuration (token files, allow-lists) is checked where it is parsed.
//!
//! The limits exist so that no single client can exhaust the server: every resource a client
//! can make the server hold (a connection, a session, a request body being read) has a cap or
//! a deadline. `docs/mcp.md` ("Limits") lists them with what a client sees at each.

use std::{net::SocketAddr, time::Duration};

use super::{
    auth::TokenTable,
    health::{Checks, ReadinessCheck},
    oauth::OAuthConfig,
    observe::{Render, RenderFuture},
    origin::{AllowedHost, AllowedOrigin},
};
use crate::{approval::StateKey, identity::Identity, server_info::ServerInfo};

/// The default limit on a request body: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long a session outlives its last HTTP exchange by default: 10 minutes.
pub const DEFAULT_SESSION_GRACE: Duration = Duration::from_secs(600);

/// The default cap on live sessions, over all clients.
pub const DEFAULT_MAX_SESSIONS: usize = 1_000;

/// The default cap on live sessions of one principal (a token, or a peer address without
/// tokens).
pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: usize = 100;

/// The default cap on open connections, over all peers (lowered to fit the process's file
/// limit when that is smaller).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1_024;

/// The default cap on open connections from one peer address: half of the total, so that the
/// clients sharing one address (every local client on loopback, or a NAT) have room.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 512;

/// How long a connection may take to send a complete request head, counted from when it opened
/// or from the end of its previous response (so also how long a keep-alive connection may sit
/// idle) by default: 30 seconds.
pub const DEFAULT_REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client may take to send a whole request body by default: 30 seconds.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// What one client may hold of an HTTP endpoint. Start from [`HttpLimits::default`] and change
/// the fields that matter.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpLimits {
    /// Live sessions (open, or idle within their grace window), over all clients. A new
    /// `initialize` beyond it is refused with `503` and `Retry-After`.
    pub max_sessions: usize,
    /// Live sessions of one principal. A new `initialize` beyond it ends that principal's
    /// longest-idle session; when none of its sessions is idle it is refused with `429` and
    /// `Retry-After`.
    pub max_sessions_per_principal: usize,
    /// Open connections, over all peers; further connections wait in the listen backlog. Lowered
    /// at start-up to fit the process's open-file limit.
    pub max_connections: usize,
    /// Open connections from one peer address; a further connection from it is answered `503`
    /// and closed at once. At most half of `max_connections`, so one peer never holds them all.
    pub max_connections_per_peer: usize,
    /// How long a connection may take to send a complete request head, from when it opened or
    /// its previous response ended; a connection that does not is closed. This is both the
    /// header-read timeout and the keep-alive idle timeout.
    pub request_head_timeout: Duration,
    /// How long a client may take to send a whole request body: `408` after it.
    pub body_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_principal: DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            request_head_timeout: DEFAULT_REQUEST_HEAD_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        }
    }
}

/// Who HTTP requests act as.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HttpAuth {
    /// Every request acts as this identity, with no authentication: loopback addresses only.
    Operator(Identity),
    /// A request must carry `Authorization: Bearer <token>` with a token of the table, and
    /// acts as that token's identity.
    Tokens(TokenTable),
    /// A request must carry `Authorization: Bearer <token>` with an access token of the
    /// configured OAuth issuer for this resource, and acts as the identity its claims map to.
    OAuth(OAuthConfig),
}

/// A configuration [`HttpConfig::new`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpConfigError {
    /// No token file, and an address other machines can reach.
    #[error(
        "refusing to serve MCP over HTTP on {addr} without authentication: anyone who can \
         reach that address would act as {acting_as}. Bind a loopback address (for example \
         --http 127.0.0.1:{port}) or give --tokens FILE or --oauth FILE (see docs/mcp.md)",
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
    pub(crate) limits: HttpLimits,
    /// `None`: the process's generated key, as [`McpServer::new`](crate::McpServer::new) has.
    pub(crate) state_key: Option<StateKey>,
    /// The navigation every handler offers; `None` when it is off.
    pub(crate) navigation: Option<crate::navigation::Navigation>,
    /// What every handler adds to its `instructions`.
    pub(crate) instructions: Option<std::sync::Arc<str>>,
    /// The name, version and opening instructions every handler answers `initialize` with.
    pub(crate) server_info: std::sync::Arc<ServerInfo>,
    /// What `/readyz` asks before it says ready.
    pub(crate) readiness: Checks,
    /// What `GET /metrics` serves; `None`: no `/metrics`.
    pub(crate) metrics: Option<Render>,
    /// Checks the identity statements of peer sessions; `None`: every peer call is refused.
    pub(crate) link_verifier: Option<std::sync::Arc<switchboard_link::StatementVerifier>>,
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
            limits: HttpLimits::default(),
            state_key: None,
            navigation: None,
            instructions: None,
            server_info: std::sync::Arc::default(),
            readiness: Checks::default(),
            metrics: None,
            link_verifier: None,
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

    /// Caps sessions and connections and bounds how long a client may take (default
    /// [`HttpLimits::default`]).
    #[must_use]
    pub fn limits(mut self, limits: HttpLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Seals and opens approval states with `key`, so that a restarted server, or another
    /// replica with the same key, opens the states this one sealed (default: a key generated
    /// once per process, with a warning).
    #[must_use]
    pub fn state_key(mut self, key: StateKey) -> Self {
        self.state_key = Some(key);
        self
    }

    /// Offers navigation over `navigator` in `mode` to every client, as
    /// [`McpServer::with_navigation`](crate::McpServer::with_navigation) does (default: off).
    #[must_use]
    pub fn navigation(
        mut self,
        navigator: switchboard_navigation::Navigator,
        mode: crate::NavigationMode,
    ) -> Self {
        self.navigation = crate::navigation::Navigation::new(navigator, mode);
        self
    }

    /// Adds `text` to every handler's `instructions`, as
    /// [`McpServer::with_instructions`](crate::McpServer::with_instructions) does.
    #[must_use]
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(std::sync::Arc::from(text.into()));
        self
    }

    /// Answers `initialize` with `info`, as
    /// [`McpServer::with_server_info`](crate::McpServer::with_server_info) does (default
    /// [`ServerInfo::default`]).
    #[must_use]
    pub fn with_server_info(mut self, info: ServerInfo) -> Self {
        self.server_info = std::sync::Arc::new(info);
        self
    }

    /// Makes `/readyz` depend on `check` too (default: no checks, ready once listening). See
    /// [`ReadinessCheck`].
    #[must_use]
    pub fn readiness_check(mut self, check: std::sync::Arc<dyn ReadinessCheck>) -> Self {
        self.readiness.0.push(check);
        self
    }

    /// Serves `GET /metrics` with what `render` returns, the Prometheus text exposition of the
    /// process's recorder (default: no `/metrics`). Like the probes, it is answered outside the
    /// token and Origin checks: expose the port only where whoever reaches it may read the
    /// counts (tool names, outcomes, sessions).
    #[must_use]
    pub fn metrics<F>(mut self, render: F) -> Self
    where
        F: Fn() -> RenderFuture + Send + Sync + 'static,
    {
        self.metrics = Some(Render(std::sync::Arc::new(render)));
        self
    }

    /// Serves the sessions of peer tokens (`peer = "NODE"` in the token file) with `verifier`:
    /// each of their `tools/call`s must carry an identity statement it accepts, and runs as
    /// the caller the statement names (docs/mcp.md, "Peer sessions"). Default: none, and every
    /// call of a peer session is refused.
    #[must_use]
    pub fn link_verifier(
        mut self,
        verifier: std::sync::Arc<switchboard_link::StatementVerifier>,
    ) -> Self {
        self.link_verifier = Some(verifier);
        self
    }

    /// The address to listen on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Who requests act as.
    pub fn auth(&self) -> &HttpAuth {
        &self.auth
    }

    /// The hosts answered besides the loopback ones.
    pub fn allowed_hosts(&self) -> &[AllowedHost] {
        &self.extra_hosts
    }

    /// The browser origins accepted besides the bound port's loopback ones.
    pub fn allowed_origins(&self) -> &[AllowedOrigin] {
        &self.extra_origins
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

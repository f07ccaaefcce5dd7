//! MCP over streamable HTTP at [`MCP_PATH`], for clients that connect to a running server.
//!
//! rmcp's `StreamableHttpService` speaks the protocol; everything in front of it is ours, in
//! one middleware (`guard`): DNS-rebinding protection (`origin`), bearer tokens or OAuth access
//! tokens (`auth`, `oauth`), the
//! body limit (`limit`), reading and checking the posted message (`body`), session ownership,
//! caps, grace window and expiry (`session`), and JSON-RPC error answers (`reject`). In front
//! of that, `listen` accepts connections: `TCP_NODELAY`, connection caps and hyper's
//! request-head timeout. The listener binds exactly the address given; [`HttpConfig::new`]
//! refuses a non-loopback address unless bearer tokens are required. [`serve_http_with_pages`]
//! also serves a router of pages (`switchboard-web`) at every other path, beside the guard
//! rather than behind it: the pages authenticate people themselves.
//!
//! With OAuth, the Protected Resource Metadata document is served outside every check too
//! (`oauth`), and the issuer's keys are fetched as the server starts.
//!
//! For the platform that runs the process, `health` answers `GET /healthz` and `GET /readyz`
//! outside every check, `observe` records the endpoint's metrics and serves `GET /metrics` when
//! asked to, and `drain` counts the requests in flight so that
//! [`HttpServer::drain`] can stop taking new work and let those finish before
//! [`HttpServer::shutdown`].
//!
//! An answer that needs no stream (no progress, no log message, no request to the client before
//! the result) is one `application/json` body: on 2026-07-28 rmcp decides this per request
//! (`json_response`); in a session of an earlier revision, `json_answer` reads rmcp's event
//! stream up to its first message and keeps the stream only when that is not the answer.
//!
//! rmcp builds one handler per session (protocol revisions up to 2025-11-25) and one per
//! request (2026-07-28, stateless). Its factory cannot see the request, so the middleware runs
//! rmcp with the request's principal in a task-local, and the factory builds the handler with
//! that principal's identity. A session's handler therefore acts as the token that created the
//! session, and `session` makes sure only that token may use it.

mod auth;
mod body;
mod config;
mod drain;
mod guard;
mod health;
mod invalid_params;
mod json_answer;
mod limit;
mod listen;
mod oauth;
mod observe;
mod origin;
mod reject;
mod session;

use std::{net::SocketAddr, sync::Arc};

use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::local::LocalSessionManager,
};
use switchboard_registry::ToolRegistry;
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;

pub use auth::{TokenFileError, TokenTable, token_sha256_hex};
pub use config::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_PEER, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
    DEFAULT_REQUEST_HEAD_TIMEOUT, DEFAULT_SESSION_GRACE, HttpAuth, HttpConfig, HttpConfigError,
    HttpLimits,
};
pub use drain::DRAIN_RETRY_AFTER_SECS;
pub use health::{
    CHECK_INTERVAL, CHECK_TIMEOUT, CheckFuture, HEALTHZ_PATH, READYZ_PATH, ReadinessCheck,
    readiness_check,
};
pub use oauth::{
    DEFAULT_JWKS_MIN_REFRESH, DEFAULT_JWKS_REFRESH, DEFAULT_LEEWAY, OAuthConfig, OAuthConfigError,
};
pub use observe::{
    HTTP_CONNECTIONS, HTTP_CONNECTIONS_ACCEPTED_TOTAL, HTTP_REFUSALS_TOTAL,
    HTTP_REQUESTS_IN_FLIGHT, MCP_SESSIONS, METRICS_PATH, RenderFuture, describe_metrics,
};
pub use origin::{AllowListError, AllowedHost, AllowedOrigin};

use crate::{error::McpError, identity::Identity, server::McpServer, tools::ToolCatalog};
use auth::{Authenticator, Principal};
use drain::Drain;
use guard::{Guard, REQUEST_PRINCIPAL};
use health::Readiness;
use origin::RebindingGuard;
use session::SessionTracker;

/// Where the streamable HTTP endpoint is mounted.
pub const MCP_PATH: &str = "/mcp";

/// One accepted TCP connection: where it comes from, and the session handle of its
/// 2026-07-28 (stateless) requests.
#[derive(Debug, Clone)]
pub(crate) struct Connection {
    /// `mcp-conn-<uuid>`, minted when the connection is accepted.
    handle: Arc<str>,
    /// The client's address, for logs.
    remote: SocketAddr,
}

impl Connection {
    /// A connection just accepted from `remote`, with a fresh handle.
    pub(crate) fn accepted(remote: SocketAddr) -> Self {
        Self {
            handle: Arc::from(switchboard_core::mint_id("mcp-conn")),
            remote,
        }
    }
}

/// A running streamable-HTTP MCP server; stop it with [`HttpServer::shutdown`].
#[derive(Debug)]
pub struct HttpServer {
    local_addr: SocketAddr,
    cancel: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
    sessions: Arc<SessionTracker>,
    drain: Arc<Drain>,
}

/// How a drain ended ([`HttpServer::drain`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drained {
    /// The requests still in flight when the deadline passed (0: every one finished).
    pub cut_off: usize,
}

impl HttpServer {
    /// The address the server listens on (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint's URL, `http://<addr>/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.local_addr)
    }

    /// How many MCP sessions are alive (open, or idle within their grace window).
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// How many requests are in flight (every request but a `GET`, until its response is sent).
    pub fn in_flight(&self) -> usize {
        self.drain.in_flight()
    }

    /// Stops taking new work and waits, up to `deadline`, for the requests in flight to finish.
    ///
    /// From now on `/readyz` answers `503` (`draining`) and every new request but the probes
    /// (and `/metrics`) is answered `503` with `Retry-After`; `/healthz` still answers `200`.
    /// The listener stays open, so a client learns to go elsewhere rather than finding the port
    /// closed. Call [`HttpServer::shutdown`] next.
    pub async fn drain(&self, deadline: std::time::Duration) -> Drained {
        self.drain.start();
        let in_flight = self.drain.in_flight();
        tracing::info!(
            in_flight,
            deadline_ms = deadline.as_millis(),
            "draining: new requests are refused, the ones in flight may finish"
        );
        match tokio::time::timeout(deadline, self.drain.finished()).await {
            Ok(()) => Drained { cut_off: 0 },
            Err(_) => Drained {
                cut_off: self.drain.in_flight(),
            },
        }
    }

    /// Waits until the server stops (after [`HttpServer::shutdown`] or an I/O failure).
    pub async fn wait(self) -> Result<(), McpError> {
        self.task
            .await
            .map_err(McpError::Task)?
            .map_err(McpError::Http)
    }

    /// Closes every session, stops accepting connections and waits for the server to end.
    pub async fn shutdown(self) -> Result<(), McpError> {
        self.cancel.cancel();
        self.wait().await
    }
}

/// Binds `addr` (a loopback address) and serves MCP over streamable HTTP at [`MCP_PATH`] in a
/// background task, every request acting as `identity`, with the default limits.
///
/// Returns once the listener is bound. For bearer tokens, allow-lists and limits, use
/// [`serve_http_with`].
pub async fn serve_http(
    registry: ToolRegistry,
    identity: Identity,
    addr: SocketAddr,
) -> Result<HttpServer, McpError> {
    let config = HttpConfig::new(addr, HttpAuth::Operator(identity))?;
    serve_http_with(registry, config).await
}

/// Binds the configured address and serves MCP over streamable HTTP at [`MCP_PATH`] in a
/// background task. Returns once the listener is bound.
pub async fn serve_http_with(
    registry: ToolRegistry,
    config: HttpConfig,
) -> Result<HttpServer, McpError> {
    Box::pin(serve(registry, config, None)).await
}

/// [`serve_http_with`], also serving `pages` at every other path, outside the MCP endpoint's
/// middleware: they do their own authentication and origin checks (`switchboard-web`).
pub async fn serve_http_with_pages(
    registry: ToolRegistry,
    config: HttpConfig,
    pages: axum::Router,
) -> Result<HttpServer, McpError> {
    Box::pin(serve(registry, config, Some(pages))).await
}

/// Warns, as the server starts, of each peer of the token file whose statements no key here
/// can verify: every call of its sessions will be refused.
fn warn_of_unverified_peers(
    table: &TokenTable,
    verifier: Option<&switchboard_link::StatementVerifier>,
) {
    for peer in table.peers() {
        if !verifier.is_some_and(|verifier| verifier.knows(peer)) {
            tracing::warn!(
                peer,
                "the token file has a token for the peer {peer:?}, but no public key is listed \
                 for it: every call of its sessions will be refused"
            );
        }
    }
}

/// Binds and serves MCP, and `pages` beside it. Boxed by its callers: its future is large.
async fn serve(
    registry: ToolRegistry,
    config: HttpConfig,
    pages: Option<axum::Router>,
) -> Result<HttpServer, McpError> {
    let addr = config.addr;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| McpError::Bind { addr, source })?;
    let local_addr = listener.local_addr().map_err(McpError::LocalAddr)?;
    let cancel = CancellationToken::new();

    let rebinding = RebindingGuard::new(local_addr, &config.extra_hosts, &config.extra_origins);
    let (authenticator, operator) = match config.auth {
        HttpAuth::Operator(identity) => {
            let principal = Arc::new(Principal::operator(identity));
            (
                Authenticator::Operator(Arc::clone(&principal)),
                Some(principal),
            )
        }
        HttpAuth::Tokens(table) => {
            warn_of_unverified_peers(&table, config.link_verifier.as_deref());
            (Authenticator::Tokens(table), None)
        }
        HttpAuth::OAuth(oauth) => (Authenticator::OAuth(oauth.verifier), None),
    };
    let metadata = match &authenticator {
        Authenticator::OAuth(verifier) => {
            let prefetching = Arc::clone(verifier);
            tokio::spawn(async move { prefetching.prefetch().await });
            Some(oauth::metadata_routes(verifier))
        }
        _ => None,
    };

    let mut manager = LocalSessionManager::default();
    // Sessions end through the tracker's grace window, not rmcp's idle timer (see `session`).
    manager.session_config.keep_alive = None;
    let manager = Arc::new(manager);
    let sessions = Arc::new(SessionTracker::new(
        Arc::clone(&manager),
        config.session_grace,
        &config.limits,
    ));

    let rmcp_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(rebinding.hosts().iter().map(ToString::to_string))
        .with_max_request_body_bytes(config.max_body_bytes)
        .with_json_response(true)
        .with_cancellation_token(cancel.child_token());
    // One catalog and one state key for every handler: rmcp asks the factory for one per
    // request.
    let catalog = Arc::new(ToolCatalog::default());
    let state_key = config.state_key;
    let navigation = config.navigation;
    let instructions = config.instructions;
    let server_info = config.server_info;
    let link_verifier = config.link_verifier;
    let service = StreamableHttpService::new(
        move || {
            let principal = REQUEST_PRINCIPAL
                .try_with(Arc::clone)
                .ok()
                .or_else(|| operator.clone())
                .ok_or_else(|| {
                    std::io::Error::other(
                        "an MCP handler was requested outside an authenticated request",
                    )
                })?;
            Ok(McpServer::sharing_catalog(
                registry.clone(),
                principal.identity.clone(),
                Arc::clone(&catalog),
                state_key.clone(),
            )
            .navigating(navigation.clone())
            .instructing(instructions.clone())
            .informing(Arc::clone(&server_info))
            .peering(principal.peer.as_ref().map(|name| {
                crate::server::PeerSession::new(Arc::clone(name), link_verifier.clone())
            })))
        },
        manager,
        rmcp_config,
    );

    let guard = Arc::new(Guard {
        rebinding,
        authenticator,
        max_body_bytes: config.max_body_bytes,
        limits: config.limits.clone(),
        sessions: Arc::clone(&sessions),
    });
    let mut app = axum::Router::new()
        .nest_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
        .layer(axum::middleware::from_fn(observe::count_refusals));
    if let Some(pages) = pages {
        app = app.merge(pages);
    }
    let drain = Arc::new(Drain::default());
    let app = app.layer(axum::middleware::from_fn_with_state(
        Arc::clone(&drain),
        drain::admit,
    ));
    let readiness = Arc::new(Readiness::new(config.readiness, Arc::clone(&drain)));
    // Before listening, so that the first probe already has an answer.
    readiness.refresh().await;
    tokio::spawn(Arc::clone(&readiness).refresh_until(cancel.clone()));
    let caps = listen::ConnectionCaps::new(&config.limits, listen::open_file_limit());
    let mut probes = axum::Router::new()
        .route(HEALTHZ_PATH, axum::routing::get(health::healthz))
        .route(
            READYZ_PATH,
            axum::routing::get(health::readyz).with_state(readiness),
        );
    if let Some(render) = config.metrics {
        let scrape = observe::Scrape {
            render,
            sessions: Arc::clone(&sessions),
            drain: Arc::clone(&drain),
            connections: caps.open_gauge(),
        };
        probes = probes.route(
            METRICS_PATH,
            axum::routing::get(observe::serve_metrics).with_state(scrape),
        );
    }
    if let Some(metadata) = metadata {
        probes = probes.merge(metadata);
    }
    let app = probes.merge(app);

    let (max_connections, max_connections_per_peer) = caps.caps();
    tokio::spawn(Arc::clone(&sessions).sweep_until(cancel.clone()));
    let task = tokio::spawn(listen::serve(
        listener,
        app,
        caps,
        config.limits.clone(),
        cancel.clone(),
    ));
    tracing::info!(
        %local_addr,
        path = MCP_PATH,
        max_connections,
        max_connections_per_peer,
        "serving MCP over streamable HTTP"
    );
    Ok(HttpServer {
        local_addr,
        cancel,
        task,
        sessions,
        drain,
    })
}

#![doc = include_str!("../README.md")]

mod approval;
mod asking;
mod error;
mod http;
mod identity;
mod list_changed;
mod logging;
mod navigation;
mod notices;
mod prompts;
mod resources;
mod result;
mod scope;
mod server;
mod server_info;
mod session;
mod stdio;
mod subscriptions;
mod tasks;
mod tools;
mod traceparent;

pub use approval::{StateKey, StateKeyError};
pub use error::McpError;
pub use http::{
    AllowListError, AllowedHost, AllowedOrigin, CHECK_INTERVAL, CHECK_TIMEOUT, CheckFuture,
    DEFAULT_BODY_TIMEOUT, DEFAULT_JWKS_MIN_REFRESH, DEFAULT_JWKS_REFRESH, DEFAULT_LEEWAY,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_PEER,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_PRINCIPAL, DEFAULT_REQUEST_HEAD_TIMEOUT,
    DEFAULT_SESSION_GRACE, DRAIN_RETRY_AFTER_SECS, Drained, HEALTHZ_PATH, HTTP_CONNECTIONS,
    HTTP_CONNECTIONS_ACCEPTED_TOTAL, HTTP_REFUSALS_TOTAL, HTTP_REQUESTS_IN_FLIGHT, HttpAuth,
    HttpConfig, HttpConfigError, HttpLimits, HttpServer, MCP_PATH, MCP_SESSIONS, METRICS_PATH,
    OAuthConfig, OAuthConfigError, READYZ_PATH, ReadinessCheck, RenderFuture, TokenFileError,
    TokenTable, describe_metrics, readiness_check, serve_http, serve_http_with,
    serve_http_with_pages, token_sha256_hex,
};
pub use identity::Identity;
pub use logging::log_layer;
pub use navigation::NavigationMode;
pub use result::ERROR_META_KEY;
pub use scope::{PROJECT_META_KEY, THREAD_META_KEY};
pub use server::McpServer;
pub use server_info::ServerInfo;
pub use stdio::{
    STDIO_MAX_MESSAGE_BYTES, StdioEnd, serve_io, serve_io_until, serve_io_with, serve_stdio,
    serve_stdio_until, serve_stdio_with,
};

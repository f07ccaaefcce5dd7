//! What starting or running an MCP transport can fail with.
//!
//! Call failures are not here: a refused or failed tool call is an MCP result (`isError`) or a
//! JSON-RPC error sent to the client, never an error of the server itself.

use std::{io, net::SocketAddr};

/// A transport could not start, or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The HTTP endpoint's configuration is refused (see [`HttpConfig::new`]).
    ///
    /// [`HttpConfig::new`]: crate::HttpConfig::new
    #[error(transparent)]
    Config(#[from] crate::http::HttpConfigError),

    /// The HTTP listener could not bind its address.
    #[error("could not listen on {addr} for MCP over HTTP: {source} (is the port in use?)")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why binding failed.
        #[source]
        source: io::Error,
    },

    /// The bound listener could not report its address.
    #[error("the MCP HTTP listener has no local address: {0}")]
    LocalAddr(#[source] io::Error),

    /// The HTTP server stopped with an I/O error.
    #[error("the MCP HTTP server stopped with an error: {0}")]
    Http(#[source] io::Error),

    /// The HTTP server task panicked or was aborted.
    #[error("the MCP HTTP server task ended abnormally: {0}")]
    Task(#[source] tokio::task::JoinError),

    /// The MCP client on stdio never completed the `initialize` handshake.
    #[error("the MCP session on stdio did not start: {0}")]
    StdioInitialize(String),

    /// The MCP session on stdio ended abnormally.
    #[error("the MCP session on stdio ended abnormally: {0}")]
    StdioSession(#[source] tokio::task::JoinError),
}

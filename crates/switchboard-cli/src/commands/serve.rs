//! `switchboard serve`: hand the registry to an MCP client, over stdio or streamable HTTP.
//!
//! The protocol lives in `switchboard-mcp`; this module only picks the transport, says where
//! the HTTP endpoint is (on standard error, as standard output may be the protocol channel) and
//! stops the HTTP server on Ctrl-C.

use std::net::SocketAddr;

use anyhow::Context as _;
use switchboard::ToolRegistry;

use crate::{app::Exit, args::ServeArgs, output};

/// The transport `serve` was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// `--stdio`.
    Stdio,
    /// `--http ADDR`.
    Http(SocketAddr),
}

impl Transport {
    /// The transport of the parsed flags (clap requires exactly one of them).
    pub(crate) fn of(args: &ServeArgs) -> Self {
        match args.http {
            Some(addr) if !args.stdio => Transport::Http(addr),
            _ => Transport::Stdio,
        }
    }
}

/// Serves until the client closes stdin (stdio) or the process is interrupted (HTTP).
pub(crate) async fn run(
    registry: &ToolRegistry,
    transport: Transport,
    identity: switchboard_mcp::Identity,
) -> anyhow::Result<Exit> {
    match transport {
        Transport::Stdio => {
            switchboard_mcp::serve_stdio(registry.clone(), identity)
                .await
                .context("serving MCP on stdio failed")?;
        }
        Transport::Http(addr) => {
            let server = switchboard_mcp::serve_http(registry.clone(), identity, addr)
                .await
                .context("could not start the MCP HTTP server")?;
            output::write_stderr(&format!(
                "switchboard: serving MCP at {} (Ctrl-C to stop)\n",
                server.url()
            ));
            tokio::signal::ctrl_c()
                .await
                .context("could not wait for Ctrl-C")?;
            server
                .shutdown()
                .await
                .context("the MCP HTTP server did not stop cleanly")?;
        }
    }
    Ok(Exit::Success)
}

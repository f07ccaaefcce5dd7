//! Mounting real MCP servers that nobody here wrote: `@modelcontextprotocol/server-everything`
//! from npm, run with the machine's Node. `cargo xtask test` installs it under
//! `target/mcp-servers` (see [`servers`]); also npm's filesystem server and PyPI's time server.

mod http;
mod public;
mod random_tools;
mod restart;
mod server_logs;
mod servers;
mod stdio;

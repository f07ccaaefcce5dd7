//! Mounting real MCP servers that nobody here wrote: `@modelcontextprotocol/server-everything`
//! from npm, run with the machine's Node. `cargo xtask test` installs it under
//! `target/mcp-servers` (see [`servers`]); also npm's filesystem server and PyPI's time server.
//! [`fixture_server`] is one written here, for what those servers never do (prompt injection,
//! tools that change at run time); it also serves the other servers these tests write.
//! [`domain_link`] reaches a domain served by another node through one of those servers.

mod domain_link;
mod fixture_server;
mod http;
mod lazy;
mod process_group;
mod public;
mod random_tools;
mod restart;
mod rug_pull;
mod server_logs;
mod servers;
mod stdio;
mod verifier;

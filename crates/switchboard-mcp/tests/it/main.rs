//! The MCP server's integration tests, in one test binary: rmcp clients against the server in
//! memory, over stdio and over streamable HTTP.

// A domain's `#[tool]`s are registered only if the binary references its crate
// (rust-lang/rust#64731): `switchboard_domains` links the sample domains, and the conformance
// domain's reference tools (progress, logging, content blocks) are linked as well.
use switchboard_domain_conformance as _;
use switchboard_domains as _;

mod approval_support;
mod common;
mod http_support;
mod oauth_support;
mod stdio_support;

mod mcp_approvals;
mod mcp_asking;
mod mcp_cancel;
mod mcp_http;
mod mcp_http_2026;
mod mcp_http_load;
mod mcp_invalid_params;
mod mcp_navigation;
mod mcp_notifications;
mod mcp_oauth;
mod mcp_prompts;
mod mcp_prompts_asking;
mod mcp_refusals_audited;
mod mcp_resources;
mod mcp_server;
mod mcp_server_info;
mod mcp_session_lists;
mod mcp_stdio_drain;
mod mcp_stdio_garbage;
mod mcp_tasks;
mod mcp_tasks_rounds;
mod mcp_workflow_answers;
mod mcp_workflows;
mod peer;

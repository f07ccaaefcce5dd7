//! The CLI's integration tests, in one test binary: most run the built `switchboard` binary
//! as a script or an MCP client would.

mod common;

mod approvals_durability;
mod audit_durability;
mod browser_walk;
mod cli;
mod edge_http;
mod edge_http_fuzz;
mod edge_ids;
mod edge_stdio;
mod http_client;
mod json_failures;
mod lab_server;
mod mcp_conformance;
mod mcp_stdio;
mod mounts;
mod mounts_lazy;
mod mounts_logs;
mod mounts_support;
mod navigate;
mod plain_output;
mod postgres_faults;
mod postgres_hand_over;
mod postgres_load;
mod postgres_nodes;
mod postgres_stores;
mod proposals;
mod serve_http;
mod serve_intent_prompts;
mod serve_limits;
mod serve_metrics;
mod serve_operate;
mod serve_pages;
mod serve_ready_mounts;
mod serve_stdio_stop;
mod serve_stores;
mod serve_switches;
mod serve_workflows;
mod state_key;
mod stdio_client;
mod workflow_crash;
mod workflow_leases;
mod workflow_run;
mod workflow_support;
mod workflow_validate;

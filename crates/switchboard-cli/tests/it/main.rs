//! The CLI's integration tests that run the built `switchboard` binary, in one test binary.

#[path = "../common/mod.rs"]
mod common;

mod edge_http;
mod edge_http_fuzz;
mod edge_ids;
mod edge_stdio;
mod http_client;
mod json_failures;
mod state_key;
mod stdio_client;

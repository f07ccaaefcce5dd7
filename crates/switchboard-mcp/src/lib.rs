#![doc = include_str!("../README.md")]

mod error;
mod identity;
mod list_changed;
mod logging;
mod notices;
mod result;
mod server;
mod tools;
mod transport;

pub use error::McpError;
pub use identity::Identity;
pub use logging::log_layer;
pub use server::McpServer;
pub use transport::{HttpServer, MCP_PATH, serve_http, serve_stdio};

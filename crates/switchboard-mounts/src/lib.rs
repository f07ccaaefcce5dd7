//! Mounting external MCP servers behind Switchboard's gates.
//!
//! Agents need tools that live in other MCP servers. A client connecting to each directly
//! would bypass every check; mounting instead starts (or connects to) the servers and registers
//! each of their tools as a run-time tool of the registry, so a call of a mounted tool passes
//! the same checks and leaves the same audit record as a native one. This crate is the client
//! side of MCP, built on rmcp's client; `switchboard-mcp` is the server side.

mod actor;
mod child;
mod config;
mod connection;
mod error;
mod gate;
mod health;
mod logs;
mod mounts;
mod progress;
mod tool;

pub use actor::RestartPolicy;
pub use config::{
    ConfigError, DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT, MAX_ID_LEN, MountsConfig,
    ServerConfig, ToolOverride, Transport,
};
pub use error::{MountError, StartError};
pub use mounts::{MountStatus, Mounts, Strictness};
pub use tool::{
    MOUNTED_OUTCOME_UNKNOWN, MOUNTED_SERVER_UNAVAILABLE, MOUNTED_TOOL_ERROR, MOUNTED_TOOL_TIMEOUT,
    MOUNTED_TOOL_WITHHELD, mounted_name,
};

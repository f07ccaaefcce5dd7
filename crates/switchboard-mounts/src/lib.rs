//! Mounting external MCP servers behind Switchboard's gates.
//!
//! Agents need tools that live in other MCP servers. A client connecting to each directly
//! would bypass every check; mounting instead starts (or connects to) the servers and registers
//! each of their tools as a run-time tool of the registry, so a call of a mounted tool passes
//! the same checks and leaves the same audit record as a native one. This crate is the client
//! side of MCP, built on rmcp's client; `switchboard-mcp` is the server side.
//!
//! A domain served by another node is reached the same way, as a trusted mounted server:
//! [`McpDomainLink`] is the registry's `DomainLink` over a supervised connection of this crate.

mod accept;
mod actor;
mod child;
mod config;
mod connection;
mod domain_link;
mod error;
mod gate;
mod health;
mod lazy;
mod logs;
mod mounts;
mod pins;
mod progress;
mod review;
mod sink;
mod supervisor;
mod tool;
mod verifier;

pub use accept::{AcceptError, MOUNTS_ACCEPT_FAILED, MOUNTS_ACCEPT_PERMISSION, MOUNTS_ACCEPT_TOOL};
pub use actor::RestartPolicy;
pub use config::{
    ConfigError, DEFAULT_CALL_TIMEOUT, DEFAULT_START_TIMEOUT, MAX_ID_LEN, MountsConfig,
    ServerConfig, ToolOverride, Transport,
};
pub use domain_link::{
    DEFAULT_LINK_COOL_DOWN, DEFAULT_LINK_START_TIMEOUT, DEFAULT_PING_DEADLINE, DEFAULT_PING_EVERY,
    DomainLinkConfig, McpDomainLink,
};
pub use error::{MountError, StartError};
pub use lazy::{
    ALREADY_CONNECTED, LAZY_PERMISSION, MCP_CALL, MCP_CONNECT, MCP_DESCRIBE, MCP_SEARCH,
    MOUNTED_SERVER_UNKNOWN, MOUNTED_TOOL_UNKNOWN, SESSION_LIST_FIXED,
};
pub use mounts::{MountState, MountStatus, Mounts, Strictness};
pub use pins::{
    LOCK_FILE_VERSION, LockError, LockFile, PinChanges, PinnedTool, ServerPins, lock_path,
};
pub use review::{PinReview, review};
pub use tool::{
    MOUNTED_OUTCOME_UNKNOWN, MOUNTED_SERVER_UNAVAILABLE, MOUNTED_TOOL_ERROR, MOUNTED_TOOL_TIMEOUT,
    MOUNTED_TOOL_WITHHELD, mounted_name,
};
pub use verifier::{Finding, OtherTool, RuleVerifier, Rules, Verifier, VerifyInput, VerifyPolicy};

//! Why a mounted server did not start, or why mounting as a whole was refused.

use std::time::Duration;

use switchboard_registry::RegistryError;

/// Why one server did not start. Each says which server, and what to look at.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// Its command could not be started.
    #[error("mounted server `{id}`: cannot start `{command}`: {source}")]
    Spawn {
        /// The server.
        id: String,
        /// The program.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The variable holding its credential is not set.
    #[error(
        "mounted server `{id}`: the environment variable `{variable}`, which holds its bearer \
         token, is not set"
    )]
    Credential {
        /// The server.
        id: String,
        /// The variable.
        variable: String,
    },
    /// It started but the MCP handshake failed.
    #[error(
        "mounted server `{id}`: the MCP handshake failed: {reason}{}",
        tail(stderr)
    )]
    Handshake {
        /// The server.
        id: String,
        /// Why.
        reason: String,
        /// The last lines it wrote on stderr.
        stderr: String,
    },
    /// It did not complete the handshake in time.
    #[error(
        "mounted server `{id}`: no MCP handshake within {after:?}{}",
        tail(stderr)
    )]
    Timeout {
        /// The server.
        id: String,
        /// The start timeout.
        after: Duration,
        /// The last lines it wrote on stderr.
        stderr: String,
    },
    /// Its tools could not be listed.
    #[error("mounted server `{id}`: cannot list its tools: {reason}")]
    ListTools {
        /// The server.
        id: String,
        /// Why.
        reason: String,
    },
    /// One of its tools would get a name MCP does not allow.
    #[error(
        "mounted server `{id}`: its tool `{remote}` would be `{name}`, which is not a valid tool \
         name (1 to 128 characters from [A-Za-z0-9_.-]); shorten the server's id"
    )]
    ToolName {
        /// The server.
        id: String,
        /// The server's name for the tool.
        remote: String,
        /// The registry name it would get.
        name: String,
    },
    /// One of its tools would get a name another tool has.
    #[error(
        "mounted server `{id}`: its tool `{remote}` would be `{name}`, the name of {taken_by}; \
         give the server another id"
    )]
    NameTaken {
        /// The server.
        id: String,
        /// The server's name for the tool.
        remote: String,
        /// The registry name both would have.
        name: String,
        /// The tool that has it, and where it comes from.
        taken_by: String,
    },
    /// Its supervising actor could not be started.
    #[error("mounted server `{id}`: its supervising actor did not start: {reason}")]
    Supervise {
        /// The server.
        id: String,
        /// Why.
        reason: String,
    },
    /// Its tools could not enter the registry (a name taken, a schema that does not compile).
    #[error("mounted server `{id}`: its tools were refused: {source}")]
    Register {
        /// The server.
        id: String,
        /// Why.
        source: RegistryError,
    },
    /// The prompt-injection verifier refused all of its tools, or its pins could not be read.
    #[error("mounted server `{id}`: its tools are not exposed: {reason}")]
    Refused {
        /// The server.
        id: String,
        /// Why, and what a person can do about it.
        reason: String,
    },
}

impl StartError {
    /// The server it is about.
    pub fn server(&self) -> &str {
        match self {
            StartError::Spawn { id, .. }
            | StartError::Credential { id, .. }
            | StartError::Handshake { id, .. }
            | StartError::Timeout { id, .. }
            | StartError::ListTools { id, .. }
            | StartError::Supervise { id, .. }
            | StartError::ToolName { id, .. }
            | StartError::NameTaken { id, .. }
            | StartError::Register { id, .. }
            | StartError::Refused { id, .. } => id,
        }
    }
}

/// `stderr`'s tail as the end of a message: nothing when it is empty.
fn tail(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; the end of its stderr:\n{stderr}")
    }
}

/// Why mounting was refused as a whole.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MountError {
    /// A server did not start, and strict mounting refuses to go on without it.
    #[error("{0} (strict mounting starts every server or none)")]
    Strict(#[source] StartError),
    /// The actor that supervises the servers did not start.
    #[error("the mounted servers' supervisor did not start: {0}")]
    Supervisor(String),
    /// The lazy servers' meta-tools could not be registered (a tool has one of their names).
    #[error(
        "the lazy servers' meta-tools (mcp_search, mcp_describe, mcp_call, mcp_connect) cannot be registered: {source}"
    )]
    LazyTools {
        /// Why.
        #[source]
        source: RegistryError,
    },
    /// The set was already closed.
    #[error("the mounts were closed; build a new set to mount again")]
    Closed,
    /// The lock file beside the mounts file cannot be used (docs/mounts.md, "The lock file").
    #[error(transparent)]
    Lock(#[from] crate::pins::LockError),
}

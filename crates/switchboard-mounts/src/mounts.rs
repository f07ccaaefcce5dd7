//! The set of mounted servers: built from the configuration without side effects, started in
//! one step, closed in one step.
//!
//! Two phases, so that the owner can arm `close` before anything can fail halfway: building
//! [`Mounts`] is pure; [`Mounts::start`] spawns the servers, does the handshakes and registers
//! the tools; [`Mounts::close`] unregisters the tools and ends the servers, and may be called
//! at any time, any number of times (a start that failed halfway leaves nothing behind once it
//! has run). A server that fails to start is reported, with why and the end of its stderr, and
//! skipped; the others start. [`Strictness::Strict`] refuses instead: one failure closes
//! everything and is the error.

use std::sync::Arc;

use futures::future::join_all;
use switchboard_registry::{RuntimeToolSpec, ToolRegistry};
use tokio::sync::Mutex;

use crate::{
    config::{MountsConfig, ServerConfig},
    connection::{Connection, connect},
    error::{MountError, StartError},
    tool::{MountedTool, descriptor},
};

/// Whether one server failing to start stops the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strictness {
    /// Report it and start the rest.
    #[default]
    Lenient,
    /// Refuse to start at all.
    Strict,
}

/// The mounted servers of one configuration.
#[derive(Debug)]
pub struct Mounts {
    config: MountsConfig,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    running: Vec<Running>,
    closed: bool,
}

/// A server that started.
struct Running {
    id: String,
    connection: Connection,
    /// Its tools' registry names.
    tools: Vec<String>,
    /// The registry they are in.
    registry: ToolRegistry,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("id", &self.id)
            .field("pid", &self.connection.pid)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

/// What one mounted server is doing, for `switchboard mounts` and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountStatus {
    /// Its id.
    pub id: String,
    /// Its child's process id (stdio servers).
    pub pid: Option<u32>,
    /// Its tools' registry names.
    pub tools: Vec<String>,
    /// The last lines its child wrote on stderr (stdio servers).
    pub stderr: String,
}

impl Mounts {
    /// The servers of `config`, not started.
    pub fn new(config: MountsConfig) -> Self {
        Self {
            config,
            state: Mutex::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &MountsConfig {
        &self.config
    }

    /// Starts every server and registers its tools in `registry`. Answers the servers that did
    /// not start, each with why; with [`Strictness::Strict`] the first of those is the error
    /// instead, and nothing stays started.
    pub async fn start(
        &self,
        registry: &ToolRegistry,
        strictness: Strictness,
    ) -> Result<Vec<StartError>, MountError> {
        let mut state = self.state.lock().await;
        if state.closed {
            return Err(MountError::Closed);
        }
        let started = join_all(
            self.config
                .servers
                .iter()
                .map(|server| start_one(server, registry)),
        )
        .await;
        let mut failed = Vec::new();
        for outcome in started {
            match outcome {
                Ok(running) => {
                    tracing::info!(server = %running.id, pid = ?running.connection.pid, tools = running.tools.len(), "mounted an MCP server");
                    state.running.push(running);
                }
                Err(error) => {
                    tracing::warn!(server = %error.server(), "{error}");
                    failed.push(error);
                }
            }
        }
        if strictness == Strictness::Strict && !failed.is_empty() {
            close_all(&mut state).await;
            return Err(MountError::Strict(failed.swap_remove(0)));
        }
        Ok(failed)
    }

    /// Unregisters every mounted tool and ends every server. Idempotent.
    pub async fn close(&self) {
        let mut state = self.state.lock().await;
        close_all(&mut state).await;
    }

    /// What each started server is doing.
    pub async fn status(&self) -> Vec<MountStatus> {
        let state = self.state.lock().await;
        state
            .running
            .iter()
            .map(|running| MountStatus {
                id: running.id.clone(),
                pid: running.connection.pid,
                tools: running.tools.clone(),
                stderr: running.connection.stderr.text(),
            })
            .collect()
    }
}

/// Starts `server`, lists its tools and registers them.
async fn start_one(server: &ServerConfig, registry: &ToolRegistry) -> Result<Running, StartError> {
    let mut connection = connect(server).await?;
    let listed = connection.peer().list_all_tools().await;
    let tools = match listed {
        Ok(tools) => tools,
        Err(error) => {
            end(&mut connection, &server.id).await;
            return Err(StartError::ListTools {
                id: server.id.clone(),
                reason: error.to_string(),
            });
        }
    };
    let specs: Vec<RuntimeToolSpec> = tools
        .iter()
        .map(|tool| RuntimeToolSpec {
            descriptor: descriptor(server, tool),
            tool: Arc::new(MountedTool {
                server: server.id.clone(),
                remote_name: tool.name.to_string(),
                peer: connection.peer(),
                call_timeout: server.call_timeout,
                structured: tool.output_schema.is_some(),
            }),
        })
        .collect();
    let names: Vec<String> = specs
        .iter()
        .map(|spec| spec.descriptor.name.to_string())
        .collect();
    if let Err(source) = registry.register(specs).await {
        end(&mut connection, &server.id).await;
        return Err(StartError::Register {
            id: server.id.clone(),
            source,
        });
    }
    Ok(Running {
        id: server.id.clone(),
        connection,
        tools: names,
        registry: registry.clone(),
    })
}

/// Ends every started server, after taking its tools out of the registry.
async fn close_all(state: &mut State) {
    state.closed = true;
    for mut running in state.running.drain(..) {
        if let Err(error) = running.registry.unregister(running.tools.clone()).await {
            tracing::warn!(server = %running.id, %error, "mounted tools not unregistered");
        }
        end(&mut running.connection, &running.id).await;
    }
}

/// Ends one connection: closes the child's stdin, then SIGTERM, then SIGKILL (rmcp's stdio
/// shutdown), or the HTTP session.
async fn end(connection: &mut Connection, id: &str) {
    if let Err(error) = connection.service.close().await {
        tracing::warn!(server = %id, %error, "the mounted server's connection did not close cleanly");
    }
}

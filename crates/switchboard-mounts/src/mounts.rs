//! The set of mounted servers: built from the configuration without side effects, started in
//! one step, closed in one step, and supervised in between.
//!
//! Two phases, so that the owner can arm `close` before anything can fail halfway: building
//! [`Mounts`] is pure; [`Mounts::start`] spawns the servers, does the handshakes and registers
//! the tools; [`Mounts::close`] unregisters the tools and ends the servers, and may be called
//! at any time, any number of times (a start that failed halfway leaves nothing behind once it
//! has run). A server that fails to start is reported, with why and the end of its stderr, and
//! skipped; the others start. [`Strictness::Strict`] refuses instead: one failure closes
//! everything and is the error.
//!
//! The gate checks each listing against the lock file beside the mounts file
//! ([`crate::pins`]); a lock file that cannot be used stops [`Mounts::start`] before any server
//! starts. Once a server is mounted, the run-time tool `mounts_accept_changes`
//! ([`crate::accept`]) is registered too, and [`Mounts::accept`] accepts a server's changes.
//!
//! Each started server is owned by a [`ServerActor`](crate::actor) linked to one supervisor
//! actor. The server actor restarts its server when the connection ends; the supervisor
//! restarts a server actor that fails, and stops them all on close.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use futures::future::join_all;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use switchboard_registry::{RuntimeToolSpec, ToolRegistry};
use tokio::sync::{Mutex, watch};

use crate::{
    accept::{self, AcceptError, MOUNTS_ACCEPT_TOOL},
    actor::{RestartPolicy, ServerActor, ServerArgs, ServerMsg},
    config::{MountsConfig, ServerConfig},
    connection::{Connection, connect},
    error::{MountError, StartError},
    gate::{Admission, Gate, Listing, Refused},
    health::Health,
    lazy::{self, Directory},
    pins::{PinChanges, Pins},
    progress::CallRoutes,
    tool::{Registered, descriptor, spec},
    verifier::{Finding, RuleVerifier, Screen, Verifier},
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

/// Where a mounted server is in its life. Shown (and serialised) as `up`, `restarting`,
/// `down until {time}`, `closed` or `failed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountState {
    /// Serving.
    Up,
    /// Its connection ended; a new one is being made.
    Restarting,
    /// Lost too often; left alone until `until`.
    Down {
        /// When it is tried again.
        until: jiff::Timestamp,
    },
    /// Closed with the mounts.
    Closed,
    /// It did not start.
    Failed,
}

impl std::fmt::Display for MountState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MountState::Up => f.write_str("up"),
            MountState::Restarting => f.write_str("restarting"),
            MountState::Down { until } => write!(f, "down until {until}"),
            MountState::Closed => f.write_str("closed"),
            MountState::Failed => f.write_str("failed"),
        }
    }
}

impl serde::Serialize for MountState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// What one mounted server is doing, for `switchboard mounts` and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountStatus {
    /// Its id.
    pub id: String,
    /// Where it is in its life.
    pub state: MountState,
    /// Its child's process id (stdio servers, while up).
    pub pid: Option<u32>,
    /// How many times it was restarted.
    pub restarts: u64,
    /// Its tools' registry names.
    pub tools: Vec<String>,
    /// Its tools that are registered but withheld (unlisted, every call answered with why), by
    /// registry name, with why: the ones quarantined because they changed since a person
    /// accepted them, among others.
    pub quarantined: BTreeMap<String, String>,
    /// Why its last connection ended, or its last restart failed.
    pub last_error: Option<String>,
    /// What the prompt-injection verifier found in its latest listing (kept under
    /// `verify = "warn"`; under `"block"` they are why its tools are withdrawn).
    pub findings: Vec<Finding>,
    /// The last lines its child wrote on stderr (stdio servers, while up).
    pub stderr: String,
}

impl MountStatus {
    /// The status of a server that did not start, for `why`.
    pub fn failed(id: &str, why: &str) -> Self {
        Self {
            id: id.to_owned(),
            state: MountState::Failed,
            pid: None,
            restarts: 0,
            tools: Vec::new(),
            quarantined: BTreeMap::new(),
            last_error: Some(why.to_owned()),
            findings: Vec::new(),
            stderr: String::new(),
        }
    }
}

/// The mounted servers of one configuration.
#[derive(Debug)]
pub struct Mounts {
    config: MountsConfig,
    gate: Gate,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    supervisor: Option<ActorRef<SupervisorMsg>>,
    /// The registry the tools are in.
    registry: Option<ToolRegistry>,
    /// Whether `mounts_accept_changes` is registered.
    accept_tool: bool,
    /// What the lazy meta-tools know, once they are registered ([`crate::lazy`]).
    directory: Option<Arc<Directory>>,
    closed: bool,
}

impl Mounts {
    /// The servers of `config`, not started; each is restarted by its own `[server.restart]`
    /// policy, and its tools are checked against the lock file beside `config`'s file.
    pub fn new(config: MountsConfig) -> Self {
        let verifier = RuleVerifier::new(config.rules.clone());
        Self::with_verifier(config, Arc::new(verifier))
    }

    /// The servers of `config`, not started, whose tools `verifier` checks for prompt
    /// injection (in place of the rules of `config`).
    pub fn with_verifier(config: MountsConfig, verifier: Arc<dyn Verifier>) -> Self {
        Self {
            gate: Gate::default()
                .with_screen(Screen::new(verifier))
                .with_pins(Pins::beside(&config.path)),
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
    /// instead, and nothing stays started. A lock file that cannot be used is the error before
    /// anything starts.
    pub async fn start(
        &self,
        registry: &ToolRegistry,
        strictness: Strictness,
    ) -> Result<Vec<StartError>, MountError> {
        let mut state = self.state.lock().await;
        if state.closed {
            return Err(MountError::Closed);
        }
        if let Some(pins) = self.gate.pins() {
            pins.load()?;
        }
        let supervisor = match &state.supervisor {
            Some(supervisor) => supervisor.clone(),
            None => {
                let (supervisor, _) = Actor::spawn(None, Supervisor, ())
                    .await
                    .map_err(|error| MountError::Supervisor(error.to_string()))?;
                state.supervisor = Some(supervisor.clone());
                supervisor
            }
        };
        if self.config.servers.iter().any(|server| server.lazy) && state.directory.is_none() {
            let directory = Arc::new(Directory::new(registry, &self.config));
            let call_timeout = self
                .config
                .servers
                .iter()
                .map(|server| server.call_timeout)
                .max()
                .unwrap_or_default();
            // The nested call's own timeout ends it first, with its own error.
            let specs = lazy::specs(&directory, call_timeout + Duration::from_secs(5));
            registry
                .register(specs)
                .await
                .map_err(|source| MountError::LazyTools { source })?;
            state.registry.get_or_insert_with(|| registry.clone());
            state.directory = Some(directory);
        }
        let connected = join_all(self.config.servers.iter().map(|server| async move {
            let progress = CallRoutes::default();
            let listed = connect_and_list(server, progress.clone()).await;
            (server, progress, listed)
        }))
        .await;
        // Every server's tools are known before any is verified, so that a description that
        // mentions another server's tool is found whichever starts first.
        self.gate.screen().know_registry(registry);
        for (server, _, outcome) in &connected {
            if let Ok((_, listing)) = outcome {
                self.gate.screen().know(&server.id, listing);
            }
        }
        let mut failed = Vec::new();
        for (server, progress, outcome) in connected {
            let started = match outcome {
                Ok((connection, listing)) => {
                    let started = Started {
                        server,
                        connection,
                        listing,
                        progress,
                    };
                    self.adopt(&supervisor, registry, &mut state, started).await
                }
                Err(error) => Err(error),
            };
            if let Err(error) = started {
                tracing::debug!(server = %error.server(), "{error}");
                failed.push(error);
            }
        }
        if strictness == Strictness::Strict && !failed.is_empty() {
            close_all(&mut state, &self.config).await;
            return Err(MountError::Strict(failed.swap_remove(0)));
        }
        let mounted_any = failed.len() < self.config.servers.len();
        if mounted_any && !state.accept_tool {
            let spec = accept::tool_spec(supervisor.clone());
            match registry.register(vec![spec]).await {
                Ok(()) => {
                    state.accept_tool = true;
                    state.registry.get_or_insert_with(|| registry.clone());
                }
                Err(error) => {
                    tracing::warn!(%error, "`{MOUNTS_ACCEPT_TOOL}` is not registered; accept changes with `switchboard mounts accept`");
                }
            }
        }
        Ok(failed)
    }

    /// Accepts what server `id` offers now as its accepted tools: pins it in the lock file and
    /// admits the server's tools again, so tools quarantined for a change are exposed. Answers
    /// what changed since the last accept.
    pub async fn accept(&self, id: &str) -> Result<PinChanges, AcceptError> {
        let supervisor = {
            let state = self.state.lock().await;
            state.supervisor.clone()
        };
        let Some(supervisor) = supervisor else {
            return Err(AcceptError::Unavailable {
                id: id.to_owned(),
                reason: "the mounts are not started".to_owned(),
            });
        };
        accept::through(&supervisor, id).await
    }

    /// Registers a started server's tools, and hands its connection to a server actor.
    async fn adopt(
        &self,
        supervisor: &ActorRef<SupervisorMsg>,
        registry: &ToolRegistry,
        state: &mut State,
        started: Started<'_>,
    ) -> Result<(), StartError> {
        let Started {
            server,
            connection,
            listing,
            progress,
        } = started;
        let introduction = server.lazy.then(|| {
            let info = connection.peer().peer_info();
            let server_info = info.as_ref().and_then(|info| info.server_info.as_ref());
            lazy::one_line_description(
                listing.instructions.as_deref(),
                server_info
                    .and_then(|info| info.title.as_deref())
                    .or_else(|| server_info.and_then(|info| info.description.as_deref())),
                server.description.as_deref(),
            )
        });
        let (health, reader) = watch::channel(Health::Restarting {
            reason: "starting".to_owned(),
        });
        let admitted = match self.gate.admit(server, &listing) {
            Ok(admitted) => admitted,
            Err(Refused { reason }) => {
                connection.close().await;
                return Err(StartError::Refused {
                    id: server.id.clone(),
                    reason,
                });
            }
        };
        let specs: Vec<RuntimeToolSpec> = admitted
            .iter()
            .map(|(tool, admission)| spec(server, tool, admission, &reader, &progress))
            .collect();
        let names: Vec<String> = specs
            .iter()
            .map(|spec| spec.descriptor.name.to_string())
            .collect();
        if let Err(error) = check_names(
            registry,
            server,
            admitted.iter().map(|(tool, _)| tool),
            &names,
        ) {
            connection.close().await;
            return Err(error);
        }
        if let Err(source) = registry.register(specs).await {
            connection.close().await;
            return Err(StartError::Register {
                id: server.id.clone(),
                source,
            });
        }
        let registered = registered(server, admitted);
        let args = ServerArgs {
            server: server.clone(),
            first: Some(connection),
            health,
            policy: server.restart,
            registry: registry.clone(),
            registered,
            progress,
            gate: self.gate.clone(),
        };
        let adopted = ractor::call!(supervisor, |reply| SupervisorMsg::Adopt(
            Box::new(args),
            reply
        ));
        if let Err(error) = adopted
            .map_err(|error| error.to_string())
            .and_then(|spawned| spawned)
        {
            let _ = registry.unregister(names).await;
            return Err(StartError::Supervise {
                id: server.id.clone(),
                reason: error,
            });
        }
        state.registry.get_or_insert_with(|| registry.clone());
        if let (Some(description), Some(directory)) = (introduction, &state.directory) {
            directory.started(&server.id, description);
        }
        Ok(())
    }

    /// The paragraph an MCP server adds to its `instructions` to introduce the lazy servers
    /// that started, one line each; `None` without any. Read it after [`Mounts::start`].
    pub async fn instructions(&self) -> Option<String> {
        let state = self.state.lock().await;
        lazy::instructions(&state.directory.as_ref()?.lazy_servers())
    }

    /// Unregisters every mounted tool and ends every server. Idempotent.
    pub async fn close(&self) {
        let mut state = self.state.lock().await;
        close_all(&mut state, &self.config).await;
    }

    /// What each started server is doing, by id.
    pub async fn status(&self) -> Vec<MountStatus> {
        let state = self.state.lock().await;
        let Some(supervisor) = &state.supervisor else {
            return Vec::new();
        };
        ractor::call!(supervisor, SupervisorMsg::Status).unwrap_or_default()
    }
}

/// What is registered of `server`'s `admitted` tools, by registry name.
pub(crate) fn registered(
    server: &ServerConfig,
    admitted: Vec<(rmcp::model::Tool, Admission)>,
) -> BTreeMap<String, Registered> {
    admitted
        .into_iter()
        .map(|(tool, admission)| {
            let described = descriptor(server, &tool);
            (described.name.to_string(), (described, admission))
        })
        .collect()
}

/// Whether every name is a valid MCP tool name that no other tool has.
fn check_names<'a>(
    registry: &ToolRegistry,
    server: &ServerConfig,
    tools: impl Iterator<Item = &'a rmcp::model::Tool>,
    names: &[String],
) -> Result<(), StartError> {
    for (tool, name) in tools.zip(names) {
        let valid = (1..=128).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !valid {
            return Err(StartError::ToolName {
                id: server.id.clone(),
                remote: tool.name.to_string(),
                name: name.clone(),
            });
        }
        if let Some(existing) = registry.find(name) {
            let taken_by = match &existing.origin {
                switchboard_core::ToolOrigin::Linked { location } => {
                    format!("the linked tool `{name}` ({location})")
                }
                switchboard_core::ToolOrigin::Runtime { source } => {
                    format!("the tool `{name}` of {source}")
                }
            };
            return Err(StartError::NameTaken {
                id: server.id.clone(),
                remote: tool.name.to_string(),
                name: name.clone(),
                taken_by,
            });
        }
    }
    Ok(())
}

/// A server that started, with what it offers and its progress routes.
struct Started<'a> {
    server: &'a ServerConfig,
    connection: Connection,
    listing: Listing,
    progress: CallRoutes,
}

/// Starts `server` and lists its tools.
async fn connect_and_list(
    server: &ServerConfig,
    progress: CallRoutes,
) -> Result<(Connection, Listing), StartError> {
    let connection = connect(server, progress).await?;
    match Listing::of(&connection.peer()).await {
        Ok(listing) => Ok((connection, listing)),
        Err(error) => {
            connection.close().await;
            Err(StartError::ListTools {
                id: server.id.clone(),
                reason: error.to_string(),
            })
        }
    }
}

/// Takes the tools out of the registry (every run-time tool in a mounted server's domain:
/// the tools may have changed since they were first registered), then stops every server
/// actor (which ends its server).
async fn close_all(state: &mut State, config: &MountsConfig) {
    state.closed = true;
    let lazy_tools = state.directory.take().is_some();
    if let Some(registry) = state.registry.take() {
        let mut names: Vec<String> = registry
            .list()
            .iter()
            .filter(|tool| {
                matches!(tool.origin, switchboard_core::ToolOrigin::Runtime { .. })
                    && config.servers.iter().any(|server| server.id == tool.domain)
            })
            .map(|tool| tool.name.to_string())
            .chain(
                lazy::META_TOOLS
                    .iter()
                    .filter(|_| lazy_tools)
                    .map(|name| (*name).to_owned()),
            )
            .collect();
        if std::mem::take(&mut state.accept_tool) {
            names.push(MOUNTS_ACCEPT_TOOL.to_owned());
        }
        if let Err(error) = registry.unregister(names).await {
            tracing::warn!(%error, "mounted tools not unregistered");
        }
    }
    if let Some(supervisor) = state.supervisor.take() {
        let _ = ractor::call!(supervisor, SupervisorMsg::StopAll);
        supervisor.stop(None);
    }
}

/// What the supervisor is told.
pub(crate) enum SupervisorMsg {
    /// Spawn a server actor for a started server.
    Adopt(Box<ServerArgs>, RpcReplyPort<Result<(), String>>),
    /// Every server's status, sorted by id.
    Status(RpcReplyPort<Vec<MountStatus>>),
    /// The actor of a server, or the ids of those there are.
    Actor(
        String,
        RpcReplyPort<Result<ActorRef<ServerMsg>, Vec<String>>>,
    ),
    /// Stop every server actor, and answer once they have stopped.
    StopAll(RpcReplyPort<()>),
}

// Local only: with `ractor/cluster`, every message type names its `Message` impl.
#[cfg(feature = "cluster")]
impl ractor::Message for SupervisorMsg {}

/// What the supervisor keeps of a server actor, to restart it if it fails.
struct Supervised {
    actor: ActorRef<ServerMsg>,
    server: ServerConfig,
    health: watch::Sender<Health>,
    policy: RestartPolicy,
    registry: ToolRegistry,
    progress: CallRoutes,
    gate: Gate,
}

/// The supervisor of the server actors.
struct Supervisor;

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = BTreeMap<String, Supervised>;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        (): (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(BTreeMap::new())
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        supervised: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Adopt(args, reply) => {
                let server = args.server.clone();
                let health = args.health.clone();
                let policy = args.policy;
                let registry = args.registry.clone();
                let progress = args.progress.clone();
                let gate = args.gate.clone();
                let spawned = Actor::spawn_linked(None, ServerActor, *args, myself.get_cell())
                    .await
                    .map(|(actor, _)| actor)
                    .map_err(|error| error.to_string());
                let answer = match spawned {
                    Ok(actor) => {
                        supervised.insert(
                            server.id.clone(),
                            Supervised {
                                actor,
                                server,
                                health,
                                policy,
                                registry,
                                progress,
                                gate,
                            },
                        );
                        Ok(())
                    }
                    Err(error) => Err(error),
                };
                let _ = reply.send(answer);
            }
            SupervisorMsg::Status(reply) => {
                let mut statuses = Vec::with_capacity(supervised.len());
                for entry in supervised.values() {
                    if let Ok(status) = ractor::call!(entry.actor, ServerMsg::Status) {
                        statuses.push(status);
                    }
                }
                let _ = reply.send(statuses);
            }
            SupervisorMsg::Actor(id, reply) => {
                let found = supervised
                    .get(&id)
                    .map(|entry| entry.actor.clone())
                    .ok_or_else(|| supervised.keys().cloned().collect());
                let _ = reply.send(found);
            }
            SupervisorMsg::StopAll(reply) => {
                for (_, entry) in std::mem::take(supervised) {
                    entry.actor.unlink(myself.get_cell());
                    let _ = entry.actor.stop_and_wait(None, None).await;
                }
                let _ = reply.send(());
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        supervised: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(failed, error) = event {
            let id = supervised
                .iter()
                .find(|(_, entry)| entry.actor.get_id() == failed.get_id())
                .map(|(id, _)| id.clone());
            if let Some(entry) = id.and_then(|id| supervised.get_mut(&id)) {
                tracing::error!(server = %entry.server.id, %error, "a mounted server's actor failed; starting a new one");
                // The tools it had stay registered; the new actor's first connection lists
                // them again, admits them again, and brings the registry in line.
                let registered = entry
                    .registry
                    .list()
                    .into_iter()
                    .filter(|tool| tool.domain == entry.server.id)
                    .map(|tool| (tool.name.to_string(), ((*tool).clone(), Admission::Exposed)))
                    .collect();
                let args = ServerArgs {
                    server: entry.server.clone(),
                    first: None,
                    health: entry.health.clone(),
                    policy: entry.policy,
                    registry: entry.registry.clone(),
                    registered,
                    progress: entry.progress.clone(),
                    gate: entry.gate.clone(),
                };
                match Actor::spawn_linked(None, ServerActor, args, myself.get_cell())
                    .await
                    .map(|(actor, _)| actor)
                {
                    Ok(actor) => entry.actor = actor,
                    Err(error) => {
                        tracing::error!(server = %entry.server.id, %error, "a mounted server's actor could not be started again");
                    }
                }
            }
        }
        Ok(())
    }
}

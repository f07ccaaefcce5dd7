//! `ToolRegistry`: the handle callers hold, and the builder that boots it.
//!
//! The handle is cheap to clone and reads the published tool table directly; changes (tools
//! registered at run time, domain restarts) go through the registry actor, which publishes a new
//! table. This is the split the whole runtime follows: actors own lifecycle and writes, callers
//! read immutable snapshots.

use std::{collections::BTreeMap, sync::Arc};

use arc_swap::ArcSwap;
use ractor::{Actor, ActorRef};
use switchboard_approvals::{
    IdempotencyStore, MemoryIdempotencyStore, MemoryProposalStore, ProposalStore,
};
use switchboard_audit::{AuditConfig, AuditLog, AuditStore, MemoryAuditStore};
use switchboard_core::{
    Category, Domain, DomainCell, DomainWriter, ErasedCell, PromptDescriptor, StateRef,
    ToolDescriptor, ToolEntry, ask::ClientHandler, linked_tools,
};
use tokio::sync::watch;

use crate::{
    access::{AgentScopes, MemoryThreads, ThreadDirectory},
    actor::{RegistryActor, RegistryArgs, RegistryMsg},
    config::RegistryConfig,
    domain::{DomainMsg, DomainRuntime, DomainStatus},
    error::RegistryError,
    layers::{CallLayer, Layers},
    link::DomainLink,
    permissions::PermissionMatrix,
    prompts::{PromptTable, RuntimePrompt},
    remote::RemoteCallVerifier,
    scan::{scan_domains, scan_policies},
    sessions::SessionLists,
    switches::SwitchRules,
    table::{Handler, RegisteredTool, RuntimeTool, ToolTable},
};

/// State shared by every handle and the registry actor.
pub(crate) struct Shared {
    /// The enabled tools: the table every call and list reads.
    pub(crate) table: ArcSwap<ToolTable>,
    /// Every registered tool, enabled or disabled ([`crate::switches`]).
    pub(crate) all: ArcSwap<ToolTable>,
    pub(crate) audit: AuditLog,
    pub(crate) permissions: PermissionMatrix,
    pub(crate) config: RegistryConfig,
    pub(crate) domains: ArcSwap<BTreeMap<Arc<str>, Arc<DomainRuntime>>>,
    pub(crate) version: watch::Sender<u64>,
    /// Counts the writes: see [`ToolRegistry::watch_writes`].
    pub(crate) writes: watch::Sender<u64>,
    /// Where the registry actor announces each new table to subscribed actors.
    pub(crate) changes: ractor::OutputPort<ToolsChanged>,
    pub(crate) scopes: AgentScopes,
    pub(crate) threads: Arc<dyn ThreadDirectory>,
    pub(crate) idempotency: Arc<dyn IdempotencyStore>,
    pub(crate) proposals: Arc<dyn ProposalStore>,
    /// The open sessions' own tool lists ([`crate::sessions`]).
    pub(crate) sessions: SessionLists,
    /// Answers tools' questions in calls that bring no client ([`RegistryBuilder::client_handler`]).
    pub(crate) client: Option<Arc<dyn ClientHandler>>,
    /// The prompts it serves, fixed at start ([`crate::prompts`]).
    pub(crate) prompts: PromptTable,
    /// The layers around its calls ([`crate::layers`]).
    pub(crate) layers: Layers,
    /// The linked domains it was told to leave out ([`RegistryBuilder::exclude_domain`]).
    pub(crate) excluded_domains: Vec<String>,
    /// Reads the callers of calls from other nodes ([`crate::remote`]); without it, none is
    /// served.
    pub(crate) verifier: Option<Arc<dyn RemoteCallVerifier>>,
    /// Whether its domain actors join their process groups ([`crate::cluster`]).
    #[cfg(feature = "cluster")]
    pub(crate) join_groups: bool,
}

impl Shared {
    /// Counts one write, waking every [`ToolRegistry::watch_writes`] receiver.
    pub(crate) fn note_write(&self) {
        self.writes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// Publishes a new table of every registered tool, of which callers see those `rules`
    /// leave enabled, and tells watchers: subscribed actors (the orchestrator) and tasks (MCP
    /// sessions).
    pub(crate) fn publish(&self, all: ToolTable, rules: &SwitchRules) {
        let enabled = rules.enabled(&all);
        self.all.store(Arc::new(all));
        self.table.store(Arc::new(enabled));
        self.note_change();
    }

    /// Tells watchers that what some caller may list changed: a new table, or a session
    /// revealing tools.
    pub(crate) fn note_change(&self) {
        let mut published = 0;
        self.version.send_modify(|version| {
            *version += 1;
            published = *version;
        });
        self.changes.send(ToolsChanged { version: published });
    }
}

/// The tool table changed: tools were registered or removed at run time, or switched off or
/// on ([`ToolRegistry::disable`], [`ToolRegistry::enable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolsChanged {
    /// The change counter, which grows by one with every new table and every reveal.
    pub version: u64,
}

// Local only (the registry's output port sends it to actors of this process): with
// `ractor/cluster`, every message type names its `Message` impl.
#[cfg(feature = "cluster")]
impl ractor::Message for ToolsChanged {}

/// The handle to a running registry. Clone it freely.
#[derive(Clone)]
pub struct ToolRegistry {
    shared: Arc<Shared>,
    actor: ActorRef<RegistryMsg>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.shared.table.load().iter().count())
            .finish_non_exhaustive()
    }
}

/// A [`ToolRegistry`] that does not keep it alive ([`ToolRegistry::downgrade`]).
#[derive(Clone)]
pub struct WeakToolRegistry {
    shared: std::sync::Weak<Shared>,
    actor: ActorRef<RegistryMsg>,
}

impl WeakToolRegistry {
    /// The weak handle of the registry whose state is `shared` and whose actor is `actor`.
    pub(crate) fn new(shared: &Arc<Shared>, actor: ActorRef<RegistryMsg>) -> Self {
        Self {
            shared: Arc::downgrade(shared),
            actor,
        }
    }

    /// The registry, while any [`ToolRegistry`] handle to it exists.
    pub fn upgrade(&self) -> Option<ToolRegistry> {
        Some(ToolRegistry {
            shared: self.shared.upgrade()?,
            actor: self.actor.clone(),
        })
    }
}

impl std::fmt::Debug for WeakToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakToolRegistry").finish_non_exhaustive()
    }
}

/// A tool to register at run time.
pub struct RuntimeToolSpec {
    /// Its description; `origin` should be [`ToolOrigin::Runtime`](switchboard_core::ToolOrigin).
    pub descriptor: ToolDescriptor,
    /// Its body.
    pub tool: Arc<dyn RuntimeTool>,
    /// Whether it appears in the lists callers see.
    pub exposure: Exposure,
}

/// Whether a tool appears in the lists callers see ([`ToolRegistry::list_permitted`], MCP's
/// `tools/list`).
///
/// An unlisted or withheld tool is still found by name and called through every gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Exposure {
    /// Listed to every caller permitted to call it.
    #[default]
    Listed,
    /// Left out of the lists until a session reveals its domain
    /// ([`ToolRegistry::reveal_domain`]): a tool callers find another way, such as a lazy
    /// mounted server's tool that is searched for.
    Unlisted,
    /// Never listed, not even to a session that reveals its domain: a tool held back until a
    /// person accepts it, whose body answers every call with why.
    Withheld,
}

impl Exposure {
    /// Whether a tool so exposed is in the list of a session that revealed its domain or not.
    pub(crate) fn listed(self, revealed: bool) -> bool {
        match self {
            Exposure::Listed => true,
            Exposure::Unlisted => revealed,
            Exposure::Withheld => false,
        }
    }
}

impl std::fmt::Debug for RuntimeToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeToolSpec")
            .field("descriptor", &self.descriptor)
            .field("exposure", &self.exposure)
            .finish_non_exhaustive()
    }
}

/// Configures and boots a registry.
#[must_use]
pub struct RegistryBuilder {
    audit: AuditSource,
    permissions: PermissionMatrix,
    config: RegistryConfig,
    excluded_domains: Vec<String>,
    scopes: AgentScopes,
    threads: Option<Arc<dyn ThreadDirectory>>,
    idempotency: Option<Arc<dyn IdempotencyStore>>,
    proposals: Option<Arc<dyn ProposalStore>>,
    /// Cells built from the states given to [`RegistryBuilder::domain_state`], by domain.
    states: BTreeMap<&'static str, MakeCell>,
    /// The domains served by other registries ([`RegistryBuilder::remote_domain`]), by name.
    remote: BTreeMap<String, Arc<dyn DomainLink>>,
    client: Option<Arc<dyn ClientHandler>>,
    layers: Vec<Arc<dyn CallLayer>>,
    domain_layers: Vec<(String, Arc<dyn CallLayer>)>,
    runtime_prompts: Vec<(PromptDescriptor, Arc<dyn RuntimePrompt>)>,
    /// Set by [`RegistryBuilder::statement_verifier`].
    pub(crate) verifier: Option<Arc<dyn RemoteCallVerifier>>,
    /// Set by `RegistryBuilder::join_domain_groups`.
    #[cfg(feature = "cluster")]
    pub(crate) join_groups: bool,
}

/// Builds a domain's cell around the writer its actor provides.
pub(crate) type MakeCell = Box<dyn FnOnce(Box<dyn DomainWriter>) -> ErasedCell + Send>;

impl std::fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryBuilder")
            .field("config", &self.config)
            .field("excluded_domains", &self.excluded_domains)
            .field("domain_states", &self.states.keys().collect::<Vec<_>>())
            .field("remote_domains", &self.remote.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Where the registry's audit log comes from.
enum AuditSource {
    /// A log the registry starts at boot over this store.
    Store(Arc<dyn AuditStore>, AuditConfig),
    /// A log started by the caller (shared with something else, or configured elsewhere).
    Log(AuditLog),
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        Self {
            audit: AuditSource::Store(Arc::new(MemoryAuditStore::new()), AuditConfig::default()),
            permissions: PermissionMatrix::default(),
            config: RegistryConfig::default(),
            excluded_domains: Vec::new(),
            scopes: AgentScopes::default(),
            threads: None,
            idempotency: None,
            proposals: None,
            states: BTreeMap::new(),
            remote: BTreeMap::new(),
            client: None,
            layers: Vec::new(),
            domain_layers: Vec::new(),
            runtime_prompts: Vec::new(),
            verifier: None,
            #[cfg(feature = "cluster")]
            join_groups: false,
        }
    }
}

impl RegistryBuilder {
    /// Writes audit records to `store` (default: a [`MemoryAuditStore`]) through an audit log
    /// started at boot with the configuration given to [`audit_config`](Self::audit_config).
    pub fn audit_store(mut self, store: Arc<dyn AuditStore>) -> Self {
        self.audit = match self.audit {
            AuditSource::Store(_, config) => AuditSource::Store(store, config),
            AuditSource::Log(_) => AuditSource::Store(store, AuditConfig::default()),
        };
        self
    }

    /// Queues, batches and acknowledges audit records as `config` says (default: relaxed
    /// durability, block when the queue is full).
    pub fn audit_config(mut self, config: AuditConfig) -> Self {
        self.audit = match self.audit {
            AuditSource::Store(store, _) => AuditSource::Store(store, config),
            AuditSource::Log(log) => AuditSource::Store(Arc::clone(log.store()), config),
        };
        self
    }

    /// Writes audit records through `log`, already started.
    pub fn audit_log(mut self, log: AuditLog) -> Self {
        self.audit = AuditSource::Log(log);
        self
    }

    /// Uses this role → permission matrix (default: the built-in one).
    pub fn permissions(mut self, permissions: PermissionMatrix) -> Self {
        self.permissions = permissions;
        self
    }

    /// Uses these timeouts, bulkheads and restart budgets.
    pub fn config(mut self, config: RegistryConfig) -> Self {
        self.config = config;
        self
    }

    /// Uses this agent type → tools scope table (default: the built-in one, every agent type
    /// may reach every tool).
    pub fn agent_scopes(mut self, scopes: AgentScopes) -> Self {
        self.scopes = scopes;
        self
    }

    /// Asks `threads` who owns the thread a call names (default: an empty [`MemoryThreads`],
    /// so a call naming any thread is refused until threads are registered).
    pub fn threads(mut self, threads: Arc<dyn ThreadDirectory>) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Keeps idempotency keys and first results in `store` (default: a
    /// [`MemoryIdempotencyStore`] with the configured retention).
    pub fn idempotency_store(mut self, store: Arc<dyn IdempotencyStore>) -> Self {
        self.idempotency = Some(store);
        self
    }

    /// Keeps proposals in `store` (default: a [`MemoryProposalStore`]).
    pub fn proposal_store(mut self, store: Arc<dyn ProposalStore>) -> Self {
        self.proposals = Some(store);
        self
    }

    /// Starts domain `D` with `state` instead of the initial state its `domain!` declaration
    /// names: how a service hands a domain what only it knows at run time, such as a
    /// database connection its tools keep their data in. Given twice, the last state wins;
    /// ignored if `D` is excluded.
    pub fn domain_state<D: Domain>(mut self, state: D::State) -> Self {
        let make: MakeCell =
            Box::new(move |writer| -> ErasedCell { DomainCell::new(D::NAME, state, writer) });
        self.states.insert(D::NAME, make);
        self
    }

    /// Answers the questions tools ask (`ctx.elicit`, `ctx.sample`) in calls whose context
    /// carries no client of its own ([`CallContextBuilder::client`]): an embedding service's
    /// chat window, say. Without one such a question fails with `client_missing`. An MCP
    /// server always sets its client, so this never answers its calls.
    ///
    /// [`CallContextBuilder::client`]: switchboard_core::CallContextBuilder::client
    pub fn client_handler(mut self, handler: Arc<dyn ClientHandler>) -> Self {
        self.client = Some(handler);
        self
    }

    /// Puts `layer` around every call (see [`CallLayer`]). Layers added first are outermost;
    /// every domain's calls go through these before the layers of their own domain.
    pub fn layer(mut self, layer: impl CallLayer) -> Self {
        self.layers.push(Arc::new(layer));
        self
    }

    /// Puts `layer` around the calls of the tools of `domain` only (linked, run-time or
    /// mounted), inside the layers around every call. Layers added first are outermost.
    pub fn domain_layer(mut self, domain: impl Into<String>, layer: impl CallLayer) -> Self {
        self.domain_layers.push((domain.into(), Arc::new(layer)));
        self
    }

    /// Serves `prompt`, described by `descriptor`, beside the linked prompts: listed to and
    /// rendered for the callers whose roles grant `descriptor.permission`, checked like a
    /// linked prompt. A name that is invalid or already taken stops [`start`](Self::start).
    pub fn prompt(mut self, descriptor: PromptDescriptor, prompt: impl RuntimePrompt) -> Self {
        self.runtime_prompts.push((descriptor, Arc::new(prompt)));
        self
    }

    /// Leaves a linked domain, and its tools and prompts, out of this registry.
    pub fn exclude_domain(mut self, domain: impl Into<String>) -> Self {
        self.excluded_domains.push(domain.into());
        self
    }

    /// Serves the linked domain `domain` from another registry, reached through `link`: this
    /// registry keeps its tools and policies and runs every check that needs no domain state,
    /// then hands each call whole to `link` (see [`DomainLink`]). It builds no state for the
    /// domain and starts no actor; the domain's gates run on the registry that serves it, and
    /// its prompts, which render from its state, are left out. Given twice, the last link
    /// wins; ignored if `domain` is excluded. A name no linked crate declares stops
    /// [`start`](Self::start).
    pub fn remote_domain(mut self, domain: impl Into<String>, link: Arc<dyn DomainLink>) -> Self {
        self.remote.insert(domain.into(), link);
        self
    }

    /// Discovers every linked domain and tool, checks them, starts one actor per domain under
    /// the registry actor, and returns the handle.
    pub async fn start(mut self) -> Result<ToolRegistry, RegistryError> {
        let mut excluded_domains = std::mem::take(&mut self.excluded_domains);
        excluded_domains.sort();
        excluded_domains.dedup();
        let excluded = |domain: &str| excluded_domains.iter().any(|d| d == domain);
        let domains = scan_domains(
            &self.config,
            &excluded,
            std::mem::take(&mut self.states),
            std::mem::take(&mut self.remote),
        )?;
        let entries: Vec<&'static ToolEntry> = linked_tools()
            .filter(|entry| !excluded(entry.spec.domain))
            .collect();
        let policies = scan_policies()?;
        let prompts = PromptTable::build(
            &domains,
            &self.permissions,
            &excluded,
            std::mem::take(&mut self.runtime_prompts),
        )?;
        let mut tools = Vec::with_capacity(entries.len());
        for entry in entries {
            let Some(domain) = domains.get(entry.spec.domain) else {
                return Err(RegistryError::UnknownDomain {
                    tool: entry.spec.name.to_owned(),
                    location: entry.spec.location.to_string(),
                    domain: entry.spec.domain.to_owned(),
                    known: domains
                        .keys()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            // Only a hand-written `Domain` impl sharing a declared domain's name can differ. A
            // linked domain's state is checked by the registry that serves it.
            if let Some(local) = domain.local()
                && (*local.cell).type_id() != (entry.cell_type)()
            {
                return Err(RegistryError::DomainStateMismatch {
                    tool: entry.spec.name.to_owned(),
                    location: entry.spec.location.to_string(),
                    domain: entry.spec.domain.to_owned(),
                });
            }
            if domain.local().is_none() && entry.decode_output.is_none() {
                tracing::warn!(
                    tool = entry.spec.name,
                    domain = entry.spec.domain,
                    "the tool's domain is served by another registry and its output type does not \
                     implement `Deserialize`: typed calls of it are refused (JSON calls run); \
                     derive `Deserialize` on its output"
                );
            }
            let mut tool = RegisteredTool::new(
                ToolDescriptor::from_entry(entry),
                Handler::Linked(entry),
                Arc::clone(domain),
                &self.permissions,
                self.config.default_timeout,
            )?;
            tool.policy = policies.get(entry.spec.name).copied();
            tools.push(Arc::new(tool));
        }
        let table = Arc::new(ToolTable::build(tools)?);
        let audit = match self.audit {
            AuditSource::Log(log) => log,
            AuditSource::Store(store, config) => {
                AuditLog::start(store, config).map_err(|error| RegistryError::Spawn {
                    what: "audit writer".to_owned(),
                    reason: error.to_string(),
                })?
            }
        };
        let idempotency = self.idempotency.unwrap_or_else(|| {
            Arc::new(MemoryIdempotencyStore::new(
                self.config.idempotency_retention,
            ))
        });
        let shared = Arc::new(Shared {
            all: ArcSwap::new(Arc::clone(&table)),
            table: ArcSwap::new(table),
            audit,
            permissions: self.permissions,
            config: self.config,
            domains: ArcSwap::from_pointee(domains),
            version: watch::Sender::new(0),
            writes: watch::Sender::new(0),
            changes: ractor::OutputPort::default(),
            idempotency,
            scopes: self.scopes,
            threads: self
                .threads
                .unwrap_or_else(|| Arc::new(MemoryThreads::new())),
            proposals: self
                .proposals
                .unwrap_or_else(|| Arc::new(MemoryProposalStore::new())),
            sessions: SessionLists::default(),
            client: self.client,
            layers: Layers::new(self.layers, self.domain_layers),
            prompts,
            excluded_domains,
            verifier: self.verifier,
            #[cfg(feature = "cluster")]
            join_groups: self.join_groups,
        });
        let (actor, _join) = Actor::spawn(
            None,
            RegistryActor,
            RegistryArgs {
                shared: Arc::clone(&shared),
            },
        )
        .await
        .map_err(|error| RegistryError::Spawn {
            what: "registry".to_owned(),
            reason: error.to_string(),
        })?;
        tracing::info!(
            tools = shared.table.load().iter().count(),
            "tool registry started"
        );
        Ok(ToolRegistry { shared, actor })
    }
}

impl ToolRegistry {
    /// Starts configuring a registry.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// Boots a registry with every linked tool and the defaults.
    pub async fn start() -> Result<ToolRegistry, RegistryError> {
        Self::builder().start().await
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    pub(crate) fn shared_arc(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub(crate) fn actor(&self) -> &ActorRef<RegistryMsg> {
        &self.actor
    }

    /// A handle that does not keep the registry alive: for a run-time tool that calls the
    /// registry it is registered in, which would otherwise hold itself.
    pub fn downgrade(&self) -> WeakToolRegistry {
        WeakToolRegistry::new(&self.shared, self.actor.clone())
    }

    /// Every tool, sorted by name.
    pub fn list(&self) -> Vec<Arc<ToolDescriptor>> {
        self.shared
            .table
            .load()
            .iter()
            .map(|tool| Arc::clone(&tool.descriptor))
            .collect()
    }

    /// The tools of one category, sorted by name.
    pub fn list_by_category(&self, category: Category) -> Vec<Arc<ToolDescriptor>> {
        self.filtered(|tool| tool.category() == category)
    }

    /// Whether the linked domain `domain` was left out of this registry
    /// ([`RegistryBuilder::exclude_domain`]): what declares something of a domain (a page, an
    /// exported workflow's step) checks this to leave it out with its domain, where a tool
    /// that is simply missing is a mistake to report.
    pub fn excludes_domain(&self, domain: &str) -> bool {
        self.shared.excluded_domains.iter().any(|d| d == domain)
    }

    /// The tools of one domain, sorted by name.
    pub fn list_by_domain(&self, domain: &str) -> Vec<Arc<ToolDescriptor>> {
        self.filtered(|tool| &*tool.domain.name == domain)
    }

    /// The listed tools a caller holding `roles` may call, sorted by name (unlisted tools are
    /// left out: see [`Exposure`]).
    pub fn list_permitted(&self, roles: &[switchboard_core::Role]) -> Vec<Arc<ToolDescriptor>> {
        self.filtered(|tool| tool.exposure.listed(false) && tool.granted_to(roles))
    }

    /// Whether a tool is listed; `None` if there is no tool by that name.
    pub fn exposure(&self, name: &str) -> Option<Exposure> {
        self.shared.table.load().get(name).map(|tool| tool.exposure)
    }

    /// The directory that says who owns each thread (see [`RegistryBuilder::threads`]).
    pub fn threads(&self) -> &Arc<dyn ThreadDirectory> {
        &self.shared.threads
    }

    /// Where the questions of a call made with `context` go: the client it brings, else this
    /// registry's [`client_handler`](RegistryBuilder::client_handler), else nowhere. For a
    /// caller that asks the client before it calls a tool (the orchestrator routing with the
    /// client's model).
    pub fn client_for(
        &self,
        context: &switchboard_core::CallContext,
    ) -> switchboard_core::ask::ClientLink {
        if context.client.is_active() {
            return context.client.clone();
        }
        self.shared
            .client
            .as_ref()
            .map(|handler| switchboard_core::ask::ClientLink::new(Arc::clone(handler)))
            .unwrap_or_default()
    }

    /// One tool by name.
    pub fn find(&self, name: &str) -> Option<Arc<ToolDescriptor>> {
        self.shared
            .table
            .load()
            .get(name)
            .map(|tool| Arc::clone(&tool.descriptor))
    }

    /// One tool by name, if a caller holding `roles` may call it: [`find`] limited to what
    /// [`list_permitted`] lists, without building the list.
    ///
    /// [`find`]: ToolRegistry::find
    /// [`list_permitted`]: ToolRegistry::list_permitted
    pub fn find_permitted(
        &self,
        name: &str,
        roles: &[switchboard_core::Role],
    ) -> Option<Arc<ToolDescriptor>> {
        self.shared
            .table
            .load()
            .get(name)
            .filter(|tool| tool.granted_to(roles))
            .map(|tool| Arc::clone(&tool.descriptor))
    }

    /// Registered names that look like `name`, for "did you mean" messages.
    pub fn similar_names(&self, name: &str) -> Vec<String> {
        self.shared.table.load().similar_names(name)
    }

    fn filtered(&self, keep: impl Fn(&RegisteredTool) -> bool) -> Vec<Arc<ToolDescriptor>> {
        self.shared
            .table
            .load()
            .iter()
            .filter(|tool| keep(tool))
            .map(|tool| Arc::clone(&tool.descriptor))
            .collect()
    }

    /// The audit log this registry writes to: query it, read its counters, flush it.
    pub fn audit(&self) -> &AuditLog {
        &self.shared.audit
    }

    /// The permission matrix in force.
    pub fn permissions(&self) -> &PermissionMatrix {
        &self.shared.permissions
    }

    /// The agent scope table in force.
    pub fn agent_scopes(&self) -> &AgentScopes {
        &self.shared.scopes
    }

    /// The store of idempotency keys and first results.
    pub fn idempotency_store(&self) -> &Arc<dyn IdempotencyStore> {
        &self.shared.idempotency
    }

    /// The store of proposals.
    pub fn proposal_store(&self) -> &Arc<dyn ProposalStore> {
        &self.shared.proposals
    }

    /// The configuration in force.
    pub fn config(&self) -> &RegistryConfig {
        &self.shared.config
    }

    /// A receiver that changes whenever the tool table does (run-time registrations, switches), and
    /// when a session reveals tools ([`ToolRegistry::reveal_domain`]).
    pub fn watch_changes(&self) -> watch::Receiver<u64> {
        self.shared.version.subscribe()
    }

    /// A receiver that changes after every write: a mutating tool that ran (whatever its
    /// outcome), and a proposal made, decided or expired. Resource subscriptions wait on it,
    /// then read their resource again to see whether it changed. Writes made by another
    /// process (a second registry on the same database) are not counted.
    pub fn watch_writes(&self) -> watch::Receiver<u64> {
        self.shared.writes.subscribe()
    }

    /// Sends `actor` a message, made by `convert`, whenever the tool table changes: how an
    /// actor (the orchestrator) keeps what it derives from the tools current. The subscription
    /// ends when the actor stops.
    pub fn subscribe_changes<M: ractor::Message>(
        &self,
        actor: ActorRef<M>,
        convert: impl Fn(ToolsChanged) -> Option<M> + Send + 'static,
    ) {
        self.shared.changes.subscribe(actor, convert);
    }

    /// Health of every domain, sorted by name.
    pub fn domains(&self) -> Vec<DomainStatus> {
        self.shared
            .domains
            .load()
            .values()
            .map(|domain| domain.status())
            .collect()
    }

    /// The actor of a domain, while it runs (for supervision tests and operations).
    pub fn domain_actor(&self, domain: &str) -> Option<ActorRef<DomainMsg>> {
        self.shared
            .domains
            .load()
            .get(domain)
            .and_then(|d| d.local()?.actor())
    }

    /// The current state of domain `D`, when it runs in this process: what its tools read
    /// now. For tests and checks (the conformance kit compares it around read calls); a
    /// domain served by another node, or excluded, has none here.
    pub fn state_of<D: Domain>(&self) -> Option<StateRef<D::State>> {
        let domains = self.shared.domains.load();
        let cell = Arc::clone(&domains.get(D::NAME)?.local()?.cell);
        let cell = cell.downcast::<DomainCell<D::State>>().ok()?;
        Some(cell.read())
    }

    /// Registers tools whose schema is only known at run time. Their domain is created (with
    /// no state) if it does not exist. The whole batch is refused if any tool is invalid or
    /// its name is taken.
    pub async fn register(&self, tools: Vec<RuntimeToolSpec>) -> Result<(), RegistryError> {
        ractor::call!(self.actor, |reply| RegistryMsg::Register { tools, reply })
            .map_err(|_| RegistryError::Stopped)?
    }

    /// Removes run-time tools by name; returns how many were removed. Linked tools stay.
    pub async fn unregister(&self, names: Vec<String>) -> Result<usize, RegistryError> {
        ractor::call!(self.actor, |reply| RegistryMsg::Unregister { names, reply })
            .map_err(|_| RegistryError::Stopped)
    }

    /// Stops the registry and every domain actor, and waits until the audit log has written
    /// every record so far. Calls made afterwards fail with `domain_unavailable` (and are still
    /// audited); the log's writer stops when the last handle to it is dropped.
    pub async fn shutdown(&self) {
        let _ = self
            .actor
            .stop_and_wait(Some("shutdown".to_owned()), None)
            .await;
        self.shared.audit.flush().await;
    }
}

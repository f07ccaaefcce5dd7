//! The registry actor: supervisor of the domain actors and sole writer of the tool table.
//!
//! It never sits on the call path. It starts a domain actor per domain, restarts one that
//! fails (within a budget), leaves stopped one that was stopped on purpose, and applies
//! run-time registrations by publishing a new table.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    sync::Arc,
    time::Instant,
};

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use switchboard_core::DomainCell;
use tracing::Instrument;

use crate::{
    domain::{DomainActor, DomainArgs, DomainRuntime},
    error::RegistryError,
    registry::{RuntimeToolSpec, Shared, WeakToolRegistry},
    switches::{Selector, Switch, SwitchRules},
    table::{Handler, RegisteredTool, ToolTable},
};

/// Messages the registry actor handles.
pub enum RegistryMsg {
    /// Register run-time tools.
    Register {
        /// The tools.
        tools: Vec<RuntimeToolSpec>,
        /// Where the outcome goes.
        reply: RpcReplyPort<Result<(), RegistryError>>,
    },
    /// Remove run-time tools.
    Unregister {
        /// Their names.
        names: Vec<String>,
        /// How many were removed.
        reply: RpcReplyPort<usize>,
    },
    /// Disable or enable tools ([`ToolRegistry::disable`](crate::ToolRegistry::disable)).
    Switch {
        /// Off or on.
        switch: Switch,
        /// Which tools.
        selector: Selector,
        /// The names of the tools whose state changed.
        reply: RpcReplyPort<Result<Vec<String>, RegistryError>>,
    },
}

// Local only: with `ractor/cluster`, every message type names its `Message` impl.
#[cfg(feature = "cluster")]
impl ractor::Message for RegistryMsg {}

impl std::fmt::Debug for RegistryMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegistryMsg::Register { tools, .. } => f
                .debug_struct("Register")
                .field("tools", &tools.len())
                .finish(),
            RegistryMsg::Unregister { names, .. } => {
                f.debug_struct("Unregister").field("names", names).finish()
            }
            RegistryMsg::Switch {
                switch, selector, ..
            } => f
                .debug_struct("Switch")
                .field("switch", switch)
                .field("selector", selector)
                .finish(),
        }
    }
}

pub(crate) struct RegistryArgs {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct RegistryState {
    shared: Arc<Shared>,
    by_actor: HashMap<ActorId, Arc<DomainRuntime>>,
    failures: HashMap<Arc<str>, VecDeque<Instant>>,
    /// What is switched off ([`crate::switches`]).
    rules: SwitchRules,
}

pub(crate) struct RegistryActor;

impl RegistryActor {
    /// Starts the actor of `domain`, under this actor's supervision; a domain served by another
    /// registry has none.
    async fn start_domain(
        myself: &ActorRef<RegistryMsg>,
        state: &mut RegistryState,
        domain: Arc<DomainRuntime>,
    ) -> Result<(), RegistryError> {
        if domain.local().is_none() {
            return Ok(());
        }
        let args = DomainArgs {
            runtime: Arc::clone(&domain),
            registry: WeakToolRegistry::new(&state.shared, myself.clone()),
            #[cfg(feature = "cluster")]
            group: state
                .shared
                .join_groups
                .then(|| crate::cluster::domain_group(&domain.name)),
        };
        let (actor, _join) = Actor::spawn_linked(None, DomainActor, args, myself.get_cell())
            .await
            .map_err(|error| RegistryError::Spawn {
                what: format!("`{}` domain", domain.name),
                reason: error.to_string(),
            })?;
        state.by_actor.insert(actor.get_id(), domain);
        Ok(())
    }

    async fn register(
        myself: &ActorRef<RegistryMsg>,
        state: &mut RegistryState,
        specs: Vec<RuntimeToolSpec>,
    ) -> Result<(), RegistryError> {
        let shared = &state.shared;
        let mut domains = (**shared.domains.load()).clone();
        let mut new_domains = Vec::new();
        let mut tools: Vec<Arc<RegisteredTool>> = shared.all.load().iter().cloned().collect();
        for spec in specs {
            let domain_name: &str = &spec.descriptor.domain;
            let domain = match domains.get(domain_name) {
                Some(domain)
                    if domain
                        .local()
                        .is_some_and(|local| local.cell.is::<DomainCell<()>>()) =>
                {
                    Arc::clone(domain)
                }
                Some(_) => {
                    return Err(RegistryError::StatefulDomain {
                        tool: spec.descriptor.name.to_string(),
                        domain: domain_name.to_owned(),
                    });
                }
                None => {
                    let domain = DomainRuntime::new(
                        domain_name,
                        |writer| DomainCell::new(domain_name, (), writer),
                        shared.config.concurrency_of(domain_name),
                    );
                    domains.insert(Arc::clone(&domain.name), Arc::clone(&domain));
                    new_domains.push(Arc::clone(&domain));
                    domain
                }
            };
            let mut tool = RegisteredTool::new(
                spec.descriptor,
                Handler::Runtime(spec.tool),
                domain,
                &shared.permissions,
                shared.config.default_timeout,
            )?;
            tool.exposure = spec.exposure;
            tools.push(Arc::new(tool));
        }
        let table = ToolTable::build(tools)?;
        for domain in new_domains {
            Self::start_domain(myself, state, domain).await?;
        }
        state.shared.domains.store(Arc::new(domains));
        state.shared.publish(table, &state.rules);
        Ok(())
    }

    fn unregister(state: &RegistryState, names: &[String]) -> usize {
        let table = state.shared.all.load();
        let before = table.iter().count();
        let kept: Vec<_> = table
            .iter()
            .filter(|tool| {
                !(matches!(tool.handler, Handler::Runtime(_))
                    && names.iter().any(|n| **n == *tool.name))
            })
            .cloned()
            .collect();
        let removed = before - kept.len();
        if removed > 0 {
            match ToolTable::build(kept) {
                Ok(table) => state.shared.publish(table, &state.rules),
                // A subset of a valid table has no duplicates; keep the old table regardless.
                Err(error) => tracing::error!(%error, "could not rebuild the tool table"),
            }
        }
        removed
    }

    /// Applies a switch, and publishes the table it leaves if it changed any tool.
    fn switch(
        state: &mut RegistryState,
        switch: Switch,
        selector: Selector,
    ) -> Result<Vec<String>, RegistryError> {
        let all = state.shared.all.load_full();
        let changed = state.rules.apply(&all, switch, selector.clone())?;
        if !changed.is_empty() {
            state.shared.publish(all.subset(|_| true), &state.rules);
        }
        tracing::info!(?switch, %selector, changed = ?changed, "tools switched");
        Ok(changed)
    }

    /// Whether a failed domain may be restarted now, under the restart budget.
    fn within_budget(state: &mut RegistryState, domain: &Arc<str>) -> bool {
        let config = &state.shared.config;
        let now = Instant::now();
        let failures = state.failures.entry(Arc::clone(domain)).or_default();
        failures.push_back(now);
        while failures
            .front()
            .is_some_and(|at| now.duration_since(*at) > config.restart_window)
        {
            failures.pop_front();
        }
        failures.len() <= config.max_restarts as usize
    }
}

impl Actor for RegistryActor {
    type Msg = RegistryMsg;
    type State = RegistryState;
    type Arguments = RegistryArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<RegistryMsg>,
        args: RegistryArgs,
    ) -> Result<RegistryState, ActorProcessingErr> {
        let mut state = RegistryState {
            shared: args.shared,
            by_actor: HashMap::new(),
            failures: HashMap::new(),
            rules: SwitchRules::default(),
        };
        let domains: BTreeMap<_, _> = (**state.shared.domains.load()).clone();
        for domain in domains.into_values() {
            Self::start_domain(&myself, &mut state, domain).await?;
        }
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<RegistryMsg>,
        message: RegistryMsg,
        state: &mut RegistryState,
    ) -> Result<(), ActorProcessingErr> {
        let span = tracing::debug_span!("registry_message", message = ?message);
        async move {
            match message {
                RegistryMsg::Register { tools, reply } => {
                    let outcome = Self::register(&myself, state, tools).await;
                    let _ = reply.send(outcome);
                }
                RegistryMsg::Unregister { names, reply } => {
                    let _ = reply.send(Self::unregister(state, &names));
                }
                RegistryMsg::Switch {
                    switch,
                    selector,
                    reply,
                } => {
                    let _ = reply.send(Self::switch(state, switch, selector));
                }
            }
            Ok(())
        }
        .instrument(span)
        .await
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<RegistryMsg>,
        event: SupervisionEvent,
        state: &mut RegistryState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, error) => {
                let Some(domain) = state.by_actor.remove(&cell.get_id()) else {
                    return Ok(());
                };
                // A failed actor skips `post_stop`: mark the domain down here.
                if let Some(local) = domain.local() {
                    local.clear_actor(cell.get_id());
                }
                tracing::error!(domain = %domain.name, %error, "domain actor failed");
                if Self::within_budget(state, &domain.name) {
                    if let Some(local) = domain.local() {
                        local.note_restart();
                    }
                    Self::start_domain(&myself, state, domain).await?;
                } else {
                    tracing::error!(domain = %domain.name, "restart budget exhausted; the domain stays unavailable");
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                if let Some(domain) = state.by_actor.remove(&cell.get_id()) {
                    // A killed actor skips `post_stop`: mark the domain down here.
                    if let Some(local) = domain.local() {
                        local.clear_actor(cell.get_id());
                    }
                    tracing::warn!(domain = %domain.name, reason = reason.as_deref().unwrap_or("none"), "domain actor stopped; its tools are unavailable");
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<RegistryMsg>,
        state: &mut RegistryState,
    ) -> Result<(), ActorProcessingErr> {
        for domain in state.by_actor.values() {
            if let Some(actor) = domain.local().and_then(|local| local.actor()) {
                let _ = actor
                    .stop_and_wait(Some("registry stopped".to_owned()), None)
                    .await;
            }
        }
        Ok(())
    }
}

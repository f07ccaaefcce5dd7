//! The Orchestrator: an actor that keeps the route table current, and a handle whose `ask`
//! routes and calls in the caller's task.
//!
//! The actor owns the routes: it builds them from the registry at boot, subscribes to the
//! registry's changes, and rebuilds them when the tool table changes, publishing each route
//! table whole. `ask` reads the published
//! table and calls the registry directly, so a tier-1 route costs a pattern match, not a
//! message round trip.
//!
//! A route to an execute or restricted tool asked for by an agent does not run: `ask` stores it
//! as a proposal and answers [`AskError::AwaitingApproval`] (see `resume.rs` for the way back).

use std::sync::Arc;

use arc_swap::ArcSwap;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde::Serialize;
use serde_json::Value;
use switchboard_core::CallContext;
use switchboard_registry::{ToolRegistry, ToolsChanged};
use tracing::Instrument;

use crate::{
    error::{AskError, OrchestratorError},
    route::{Route, RouteFallback, RouteTable},
};

/// What a successful `ask` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// How the utterance was routed.
    pub route: Route,
    /// What the tool returned.
    pub result: Value,
}

struct Shared {
    registry: ToolRegistry,
    routes: ArcSwap<RouteTable>,
    fallback: Option<Arc<dyn RouteFallback>>,
}

/// The handle to a running orchestrator. Clone it freely.
#[derive(Clone)]
pub struct Orchestrator {
    shared: Arc<Shared>,
    actor: ActorRef<OrchestratorMsg>,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("intents", &self.shared.routes.load().intents().len())
            .finish_non_exhaustive()
    }
}

/// Messages the orchestrator actor handles.
#[derive(Debug)]
pub enum OrchestratorMsg {
    /// The registry's tools changed: rebuild the routes.
    ToolsChanged(ToolsChanged),
}

impl Orchestrator {
    /// Builds the routes from `registry`'s tools and starts the actor that keeps them current.
    pub async fn start(registry: ToolRegistry) -> Result<Self, OrchestratorError> {
        Self::start_with_fallback(registry, None).await
    }

    /// Like [`start`](Self::start), with a fallback for utterances no intent matches.
    pub async fn start_with_fallback(
        registry: ToolRegistry,
        fallback: Option<Arc<dyn RouteFallback>>,
    ) -> Result<Self, OrchestratorError> {
        let routes = RouteTable::build(&registry.list())?;
        let shared = Arc::new(Shared {
            registry,
            routes: ArcSwap::from_pointee(routes),
            fallback,
        });
        let (actor, _join) = Actor::spawn(None, OrchestratorActor, Arc::clone(&shared))
            .await
            .map_err(|error| OrchestratorError::Spawn(error.to_string()))?;
        Ok(Self { shared, actor })
    }

    /// Routes `utterance` to a tool and calls it with `context`.
    pub async fn ask(&self, utterance: &str, context: &CallContext) -> Result<Answer, AskError> {
        let span = tracing::info_span!(
            "ask",
            correlation_id = context.correlation_id.as_ref().map(|id| id.as_str()),
        );
        async {
            let route = self.route(utterance).await?;
            tracing::debug!(tool = %route.tool, tier = route.tier, "routed");
            if self.needs_approval(&route, context) {
                return self.interrupt(route, context).await;
            }
            match self
                .shared
                .registry
                .invoke(&route.tool, route.params.clone(), context)
                .await
            {
                Ok(result) => Ok(Answer { route, result }),
                Err(error) => Err(AskError::Invoke { route, error }),
            }
        }
        .instrument(span)
        .await
    }

    /// The registry this orchestrator calls, for the resume path.
    pub(crate) fn shared_registry(&self) -> &ToolRegistry {
        &self.shared.registry
    }

    /// Where `utterance` would go, without calling anything.
    pub async fn route(&self, utterance: &str) -> Result<Route, AskError> {
        let no_match = match self.shared.routes.load().route(utterance) {
            Ok(route) => return Ok(route),
            Err(no_match) => no_match,
        };
        if let Some(fallback) = &self.shared.fallback {
            let tools = self.shared.registry.list();
            if let Some(route) = fallback.route(utterance, &tools).await {
                return Ok(route);
            }
        }
        Err(AskError::NoRoute {
            utterance: no_match.utterance,
            closest: no_match.closest,
        })
    }

    /// Every declared intent and its tool, in routing priority order.
    pub fn intents(&self) -> Vec<(String, String)> {
        self.shared
            .routes
            .load()
            .intents()
            .intents()
            .map(|(tool, intent)| (tool.to_string(), intent.to_owned()))
            .collect()
    }

    /// The registry this orchestrator calls.
    pub fn registry(&self) -> &ToolRegistry {
        &self.shared.registry
    }

    /// Stops the actor; `ask` keeps working on the last routes.
    pub async fn shutdown(&self) {
        let _ = self.actor.stop_and_wait(None, None).await;
    }
}

struct OrchestratorActor;

impl Actor for OrchestratorActor {
    type Msg = OrchestratorMsg;
    type State = Arc<Shared>;
    type Arguments = Arc<Shared>;

    async fn pre_start(
        &self,
        myself: ActorRef<OrchestratorMsg>,
        shared: Arc<Shared>,
    ) -> Result<Arc<Shared>, ActorProcessingErr> {
        shared.registry.subscribe_changes(myself, |changed| {
            Some(OrchestratorMsg::ToolsChanged(changed))
        });
        // A change between the first build (in `start`) and the subscription is not missed.
        rebuild(&shared);
        Ok(shared)
    }

    async fn handle(
        &self,
        _myself: ActorRef<OrchestratorMsg>,
        message: OrchestratorMsg,
        shared: &mut Arc<Shared>,
    ) -> Result<(), ActorProcessingErr> {
        let _span = tracing::debug_span!("orchestrator_message", message = ?message).entered();
        match message {
            OrchestratorMsg::ToolsChanged(_) => rebuild(shared),
        }
        Ok(())
    }
}

/// Rebuilds the routes from the registry's current tools and publishes them.
fn rebuild(shared: &Shared) {
    match RouteTable::build(&shared.registry.list()) {
        Ok(routes) => shared.routes.store(Arc::new(routes)),
        Err(error) => {
            tracing::error!(%error, "routes not rebuilt; the previous routes stay in force");
        }
    }
}

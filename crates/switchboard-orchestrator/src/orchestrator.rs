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
use jiff::civil::Date;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_core::CallContext;
use switchboard_registry::{ToolRegistry, ToolsChanged};
use tracing::Instrument;

use crate::{
    error::{AskError, OrchestratorError},
    intent::{Facts, People, Person},
    route::{Route, RouteFallback, RouteTable},
};

/// The tool [`OrchestratorConfig::people_tool`] names unless told otherwise.
pub const DEFAULT_PEOPLE_TOOL: &str = "core_list_users";

/// How an orchestrator routes, beyond the registry it calls.
#[derive(Clone)]
pub struct OrchestratorConfig {
    /// Where a route the intents cannot make comes from (a language model, say); none by
    /// default, and the orchestrator then answers `no_route`.
    pub fallback: Option<Arc<dyn RouteFallback>>,
    /// The day date phrases are relative to; the machine's local date when `None`. Fix it for
    /// reproducible routing.
    pub today: Option<Date>,
    /// The read tool that lists the caller's colleagues for `{name:user}` captures. It is
    /// called with the caller's context (so it is gated and audited like any call), only for
    /// an utterance that reaches a user capture, and must return
    /// `{"users": [{"user_id": …, "name": …}]}`. When it is not registered or refuses the
    /// caller, a user capture takes one word as a user id.
    pub people_tool: String,
    /// When no intent matches and no fallback routes, let the model of the caller's client
    /// pick the tool (tier 2, `crate::model_route`): off by default. A mutating tool chosen so
    /// becomes a proposal.
    pub model_routes: bool,
}

impl Default for OrchestratorConfig {
    fn default() -> Self {
        Self {
            fallback: None,
            today: None,
            people_tool: DEFAULT_PEOPLE_TOOL.to_owned(),
            model_routes: false,
        }
    }
}

impl std::fmt::Debug for OrchestratorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrchestratorConfig")
            .field("fallback", &self.fallback.is_some())
            .field("today", &self.today)
            .field("people_tool", &self.people_tool)
            .field("model_routes", &self.model_routes)
            .finish()
    }
}

/// What the people tool returns.
#[derive(Deserialize)]
struct PeopleList {
    users: Vec<Person>,
}

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
    config: OrchestratorConfig,
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

// Local only: with `ractor/cluster`, every message type names its `Message` impl.
#[cfg(feature = "cluster")]
impl ractor::Message for OrchestratorMsg {}

impl Orchestrator {
    /// Builds the routes from `registry`'s tools and starts the actor that keeps them current.
    pub async fn start(registry: ToolRegistry) -> Result<Self, OrchestratorError> {
        Self::start_with(registry, OrchestratorConfig::default()).await
    }

    /// Like [`start`](Self::start), configured.
    pub async fn start_with(
        registry: ToolRegistry,
        config: OrchestratorConfig,
    ) -> Result<Self, OrchestratorError> {
        let routes = RouteTable::build(&registry.list())?;
        let shared = Arc::new(Shared {
            registry,
            routes: ArcSwap::from_pointee(routes),
            config,
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
            let route = self.route(utterance, context).await?;
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

    /// Where `utterance` would go for the caller of `context`, without calling its tool. An
    /// utterance that reaches a `{name:user}` capture reads the caller's colleagues through
    /// the people tool (see [`OrchestratorConfig::people_tool`]).
    pub async fn route(&self, utterance: &str, context: &CallContext) -> Result<Route, AskError> {
        let routes = self.shared.routes.load();
        let today = self
            .shared
            .config
            .today
            .unwrap_or_else(|| jiff::Zoned::now().date());
        let mut facts = Facts {
            today,
            people: People::NotLoaded,
        };
        let mut result = routes.route(utterance, &facts);
        let people;
        if result.as_ref().is_err_and(|no_match| no_match.needs_people) {
            people = self.people(context).await;
            facts.people = match &people {
                Some(people) => People::Known(people),
                None => People::NoDirectory,
            };
            result = routes.route(utterance, &facts);
        }
        let no_match = match result {
            Ok(route) => return Ok(route),
            Err(no_match) => no_match,
        };
        if let Some(fallback) = &self.shared.config.fallback {
            let tools = self.shared.registry.list();
            if let Some(route) = fallback.route(utterance, &tools).await {
                return Ok(route);
            }
        }
        if self.shared.config.model_routes {
            let link = self.shared.registry.client_for(context);
            let tools = self.shared.registry.list_permitted(&context.roles);
            if let Some(route) = crate::model_route::route(&link, utterance, &tools).await {
                return Ok(route);
            }
        }
        Err(AskError::NoRoute {
            utterance: no_match.utterance,
            clear_best: no_match.clear_best,
            closest: no_match.closest,
        })
    }

    /// The caller's colleagues, from the people tool; `None` when it is not registered or
    /// refuses the caller.
    async fn people(&self, context: &CallContext) -> Option<Vec<Person>> {
        let tool = &self.shared.config.people_tool;
        self.shared.registry.find(tool)?;
        // The caller's own key belongs to the call they asked for, not to this lookup.
        let mut context = context.clone();
        context.idempotency_key = None;
        match self
            .shared
            .registry
            .invoke(tool, Value::Object(serde_json::Map::new()), &context)
            .await
        {
            Ok(value) => match serde_json::from_value::<PeopleList>(value) {
                Ok(list) => Some(list.users),
                Err(error) => {
                    tracing::warn!(%tool, %error, "the people tool's answer has no `users` list of `user_id` and `name`");
                    None
                }
            },
            Err(error) => {
                tracing::debug!(%tool, %error, "people not loaded; user captures take ids");
                None
            }
        }
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

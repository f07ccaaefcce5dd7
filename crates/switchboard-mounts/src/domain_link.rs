//! A domain served by another node over MCP: [`McpDomainLink`], the registry's
//! [`DomainLink`] as a *trusted mounted server*.
//!
//! The link reuses what mounting a server is made of: the connection (streamable HTTP with the
//! bearer token the configuration names), the [`ServerActor`](crate::actor) that pings it,
//! notices its loss and makes a new one with backoff, the supervisor that restarts that actor,
//! the [`Health`] it publishes, and the routes of progress and logs. What differs from a mount
//! is what a listing means and how a call is made:
//!
//! - **Listings.** The remote domain's tools are not registered: the front holds them as its own
//!   linked code describes them. Each listing is checked against that ([`drift`]); a tool that is
//!   missing or announced with another schema opens the link until a later listing matches.
//! - **Calls.** Each attempt carries a fresh identity statement, signed for
//!   `<remote node>/<domain>`, in `_meta["switchboard/identity"]`; the serving node runs the
//!   call as the statement says and nothing else. The answer is sorted by what is known of the
//!   remote run ([`answer`]): the output; a refusal or a failure of the tool; a refused
//!   statement (a JSON-RPC error), answered as `domain_unavailable`; or, when the call was sent
//!   and nothing usable came back, in doubt.
//! - **Failing fast.** The link never waits for a connection: while its connection is
//!   restarting or down, after [`TRIP_AFTER`](breaker::TRIP_AFTER) calls in a row without a
//!   usable answer ([`breaker`]), or while the tools differ, [`health`](DomainLink::health) is
//!   open and calls are not sent. A call in flight ends in doubt as soon as its connection is
//!   lost (the server actor ends a connection whose ping goes unanswered), not at its deadline,
//!   unless it is sent once more: when a new connection serves within a ping interval, a read,
//!   or a mutation holding its idempotency key, is sent again on it with a fresh statement. The
//!   mutation's key is in the statement and the remote keeps its outcome under it, so that is
//!   safe; a read changes nothing.

mod answer;
mod breaker;
pub(crate) mod drift;

use std::{borrow::Cow, collections::BTreeMap, sync::Arc, time::Duration};

use ractor::{Actor, ActorRef};
use rmcp::{
    ServiceError,
    model::{CallToolRequestParams, RequestParamsMeta as _},
};
use serde_json::Value;
use switchboard_core::{BoxFuture, InvokeError, ToolDescriptor};
use switchboard_link::{Audience, IDENTITY_META_KEY, StatementSigner};
use switchboard_registry::{DomainLink, LinkError, LinkHealth, LinkedCall};
use tokio::sync::watch;

use crate::{
    actor::{RestartPolicy, ServerArgs},
    config::{DEFAULT_CALL_TIMEOUT, ServerConfig, Transport},
    error::StartError,
    health::Health,
    progress::CallRoutes,
    sink::ListingSink,
    supervisor::{Supervisor, SupervisorMsg},
    tool::call_once,
    verifier::VerifyPolicy,
};

use self::{
    breaker::Breaker,
    drift::{DomainSink, Listed},
};

/// How often a remote node is pinged, unless configured.
pub const DEFAULT_PING_EVERY: Duration = Duration::from_secs(2);

/// How long a ping of a remote node may take, unless configured.
pub const DEFAULT_PING_DEADLINE: Duration = Duration::from_secs(1);

/// How long a remote node's first connection may take at start, unless configured.
pub const DEFAULT_LINK_START_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a remote node that was lost too often is left alone, and how long a tripped breaker
/// refuses calls on its connection, unless configured.
pub const DEFAULT_LINK_COOL_DOWN: Duration = Duration::from_secs(5);

/// The reason a link's health gives before its first connection has been tried.
const FIRST_CONNECTION: &str = "connecting for the first time";

/// Where a remote domain is served, and how closely it is watched.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DomainLinkConfig {
    /// The domain (a linked domain of this binary).
    pub domain: String,
    /// The remote node's MCP endpoint (streamable HTTP).
    pub url: String,
    /// The environment variable whose value is sent as the bearer token, if any: the peer
    /// credential the remote node maps to this node.
    pub bearer_token_env: Option<String>,
    /// The remote node's name: the audience of the statements (`<node>/<domain>`) and the
    /// name in messages.
    pub node: String,
    /// How often the remote node is pinged.
    pub ping_every: Duration,
    /// How long a ping may take before the connection counts as lost.
    pub ping_deadline: Duration,
    /// How long the first connection may take at start (the link starts open without one).
    pub start_timeout: Duration,
    /// How long a node lost too often is left alone, and a tripped breaker stays open.
    pub cool_down: Duration,
}

impl DomainLinkConfig {
    /// `domain`, served by `node` at `url`, with no bearer token and the default intervals.
    pub fn new(domain: impl Into<String>, url: impl Into<String>, node: impl Into<String>) -> Self {
        Self {
            domain: domain.into(),
            url: url.into(),
            bearer_token_env: None,
            node: node.into(),
            ping_every: DEFAULT_PING_EVERY,
            ping_deadline: DEFAULT_PING_DEADLINE,
            start_timeout: DEFAULT_LINK_START_TIMEOUT,
            cool_down: DEFAULT_LINK_COOL_DOWN,
        }
    }

    /// Sends the value of the environment variable `variable` as the bearer token.
    pub fn bearer_token_env(mut self, variable: impl Into<String>) -> Self {
        self.bearer_token_env = Some(variable.into());
        self
    }

    /// Pings the remote node every `every`, and counts a ping past `deadline` as a loss.
    pub fn health_checks(mut self, every: Duration, deadline: Duration) -> Self {
        self.ping_every = every;
        self.ping_deadline = deadline;
        self
    }

    /// Waits at most `timeout` for the first connection at start.
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Leaves a node lost too often alone, and keeps a tripped breaker open, for `cool_down`.
    pub fn cool_down(mut self, cool_down: Duration) -> Self {
        self.cool_down = cool_down;
        self
    }

    /// The mounted server the connection and its supervision are made for.
    fn server(&self) -> ServerConfig {
        let defaults = RestartPolicy::default();
        ServerConfig {
            id: self.domain.clone(),
            transport: Transport::Http {
                url: self.url.clone(),
                bearer_token_env: self.bearer_token_env.clone(),
            },
            start_timeout: self.start_timeout,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            category: None,
            permission: String::new(),
            lazy: false,
            description: None,
            tools: BTreeMap::new(),
            restart: RestartPolicy {
                cool_down: self.cool_down,
                ping_every: self.ping_every,
                ping_deadline: self.ping_deadline,
                cap: self.cool_down.min(defaults.cap),
                ..defaults
            },
            verify: VerifyPolicy::default(),
            log_level: None,
        }
    }
}

/// A domain served by another node, reached over MCP as a trusted mounted server: a supervised
/// connection whose tool listings are checked against this binary's linked code of the domain,
/// and whose calls each carry a fresh identity statement signed for `<node>/<domain>`.
///
/// [`health`](DomainLink::health) is open (calls are refused at once with `domain_unavailable`)
/// while the connection is restarting or down, while the remote announces a tool of the domain
/// with another schema or not at all, and after three calls in a row without a usable answer
/// (until a new connection, or the cool-down). An answer is the tool's output, the remote
/// registry's refusal or failure as it sent it, `domain_unavailable` naming the remote node
/// when it refused the statement, or in doubt when the call was sent and nothing usable came
/// back (an answer that does not decode, a lost connection, the deadline).
pub struct McpDomainLink {
    config: DomainLinkConfig,
    audience: Audience,
    signer: Arc<StatementSigner>,
    health: watch::Receiver<Health>,
    listed: watch::Receiver<Listed>,
    breaker: Breaker,
    progress: CallRoutes,
    supervisor: ActorRef<SupervisorMsg>,
}

impl std::fmt::Debug for McpDomainLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpDomainLink")
            .field("config", &self.config)
            .field("signer", &self.signer)
            .field("health", &self.health())
            .finish_non_exhaustive()
    }
}

impl McpDomainLink {
    /// Starts the link: a supervised connection to the remote node, whose tools are checked
    /// against this binary's linked tools of the domain, and calls signed by `signer`. Waits
    /// up to the configured start timeout for the first connection and listing; a node that
    /// cannot be reached by then leaves the link started and open, and it closes by itself
    /// once the node answers. Refuses to start when the bearer token's variable is not set or
    /// the supervisor does not start.
    pub async fn start(
        config: DomainLinkConfig,
        signer: Arc<StatementSigner>,
    ) -> Result<Self, StartError> {
        let descriptors: Vec<ToolDescriptor> = switchboard_core::linked_tools()
            .filter(|entry| entry.spec.domain == config.domain)
            .map(ToolDescriptor::from_entry)
            .collect();
        Self::start_with(config, signer, &descriptors).await
    }

    /// [`start`](Self::start), checking the remote node's listings against `descriptors`
    /// rather than this binary's linked tools of the domain.
    pub async fn start_with(
        config: DomainLinkConfig,
        signer: Arc<StatementSigner>,
        descriptors: &[ToolDescriptor],
    ) -> Result<Self, StartError> {
        let server = config.server();
        if let Some(variable) = &config.bearer_token_env
            && std::env::var_os(variable).is_none()
        {
            return Err(StartError::Credential {
                id: server.id,
                variable: variable.clone(),
            });
        }
        let (sink, listed) = DomainSink::new(&config.node, descriptors);
        let (health, reader) = watch::channel(Health::Restarting {
            reason: FIRST_CONNECTION.to_owned(),
        });
        let progress = CallRoutes::default();
        let supervise = |reason: String| StartError::Supervise {
            id: server.id.clone(),
            reason,
        };
        let (supervisor, _) = Actor::spawn(None, Supervisor, ())
            .await
            .map_err(|error| supervise(error.to_string()))?;
        let args = ServerArgs {
            server: server.clone(),
            first: None,
            health,
            policy: server.restart,
            progress: progress.clone(),
            sink: ListingSink::Domain(sink),
        };
        let adopted = ractor::call!(supervisor, |reply| SupervisorMsg::Adopt(
            Box::new(args),
            reply
        ))
        .map_err(|error| error.to_string())
        .and_then(|spawned| spawned);
        if let Err(reason) = adopted {
            supervisor.stop(None);
            return Err(supervise(reason));
        }
        let audience = Audience {
            node: config.node.clone(),
            domain: config.domain.clone(),
        };
        let link = Self {
            audience,
            signer,
            health: reader,
            listed,
            breaker: Breaker::new(config.cool_down),
            progress,
            supervisor,
            config,
        };
        link.first_listing().await;
        Ok(link)
    }

    /// Waits, up to the start timeout, until the first connection is made and listed or fails.
    async fn first_listing(&self) {
        let mut health = self.health.clone();
        let mut listed = self.listed.clone();
        let settled = async {
            loop {
                let waiting = match &*health.borrow_and_update() {
                    // No try has ended yet.
                    Health::Restarting { reason } => reason == FIRST_CONNECTION,
                    // Connected: waiting for its listing to be checked.
                    Health::Up { .. } => *listed.borrow_and_update() == Listed::NotYet,
                    Health::Down { .. } | Health::Closed => false,
                };
                if !waiting {
                    return;
                }
                tokio::select! {
                    changed = health.changed() => if changed.is_err() { return },
                    changed = listed.changed() => if changed.is_err() { return },
                }
            }
        };
        if tokio::time::timeout(self.config.start_timeout, settled)
            .await
            .is_err()
        {
            tracing::warn!(domain = %self.config.domain, node = %self.config.node, after = ?self.config.start_timeout, "the remote domain's node did not answer at start; its link is open until it does");
        }
    }

    /// The configuration.
    pub fn config(&self) -> &DomainLinkConfig {
        &self.config
    }

    /// Ends the connection and its supervision; calls are refused from then on. Idempotent.
    pub async fn close(&self) {
        let _ = ractor::call!(self.supervisor, SupervisorMsg::StopAll);
        self.supervisor.stop(None);
    }

    /// The connection calls go through now, or why there is none.
    fn connection(&self) -> Result<(rmcp::service::Peer<rmcp::RoleClient>, u64), String> {
        match &*self.health.borrow() {
            Health::Up { peer, generation } => Ok((peer.clone(), *generation)),
            Health::Restarting { reason } => Err(format!(
                "{} is unreachable ({reason}); reconnecting",
                self.config.node
            )),
            Health::Down { reason, until } => Err(format!(
                "{} is unreachable ({reason}); the next try is at {until}",
                self.config.node
            )),
            Health::Closed => Err("the link was closed".to_owned()),
        }
    }

    /// Why calls are refused now, if they are.
    fn refusal(&self) -> Option<String> {
        let generation = match self.connection() {
            Ok((_, generation)) => generation,
            Err(reason) => return Some(reason),
        };
        match &*self.listed.borrow() {
            Listed::Matches => {}
            Listed::NotYet => {
                return Some(format!(
                    "the tools {} announces are not checked yet",
                    self.config.node
                ));
            }
            Listed::Differs(reason) => return Some(reason.clone()),
        }
        self.breaker.open(generation)
    }

    /// One call, sent once more on a new connection if its own was lost after it was sent
    /// (a read, or a mutation carrying its key) and a new one serves within a ping interval.
    async fn call_remote(&self, call: &LinkedCall<'_>) -> Result<Value, LinkError> {
        if let Some(reason) = self.refusal() {
            return Err(LinkError::NotSent { reason });
        }
        let may_resend = !call.tool.category.mutates() || call.action.is_some();
        let (mut peer, mut generation) = self
            .connection()
            .map_err(|reason| LinkError::NotSent { reason })?;
        let mut resent = false;
        loop {
            match self.attempt(call, &peer, generation).await {
                Attempt::Answered(answer) => {
                    let answer = match answer {
                        // Sent before, so it may have run.
                        Err(LinkError::NotSent { reason }) if resent => {
                            Err(LinkError::InDoubt { reason })
                        }
                        answer => answer,
                    };
                    match &answer {
                        Err(LinkError::NotSent { reason } | LinkError::InDoubt { reason }) => {
                            self.breaker.failed(generation, reason);
                        }
                        // The remote registry answered: an output, a refusal or a failure.
                        _ => self.breaker.answered(),
                    }
                    return answer;
                }
                Attempt::Lost(reason) => {
                    let patience = self.config.ping_every.min(
                        call.deadline
                            .saturating_duration_since(tokio::time::Instant::now()),
                    );
                    if may_resend
                        && !resent
                        && let Some(serving) = self.serving_after(generation, patience).await
                    {
                        tracing::info!(domain = %self.config.domain, tool = %call.tool.name, %reason, "the connection was lost mid-call; sending the call again on the new one");
                        (peer, generation) = serving;
                        resent = true;
                        continue;
                    }
                    let reason = format!(
                        "the connection to {} was lost after the call was sent ({reason})",
                        self.config.node
                    );
                    self.breaker.failed(generation, &reason);
                    return Err(LinkError::InDoubt { reason });
                }
            }
        }
    }

    /// A connection newer than `generation` that calls may go through (its tools checked),
    /// if one comes within `patience`.
    async fn serving_after(
        &self,
        generation: u64,
        patience: Duration,
    ) -> Option<(rmcp::service::Peer<rmcp::RoleClient>, u64)> {
        let mut health = self.health.clone();
        let mut listed = self.listed.clone();
        let wait = async {
            loop {
                health.borrow_and_update();
                listed.borrow_and_update();
                if let Ok((peer, now)) = self.connection()
                    && now > generation
                    && self.refusal().is_none()
                {
                    return Some((peer, now));
                }
                if matches!(&*health.borrow(), Health::Down { .. } | Health::Closed) {
                    return None;
                }
                tokio::select! {
                    changed = health.changed() => changed.ok()?,
                    changed = listed.changed() => changed.ok()?,
                }
            }
        };
        tokio::time::timeout(patience, wait).await.ok().flatten()
    }

    /// One attempt on `peer`'s connection (`generation`): a fresh statement, the request, and
    /// its answer raced against the call's deadline and against the connection's loss. When
    /// the server actor gives the connection up (a ping went unanswered, the stream closed),
    /// the request ends at once, before what is left of the connection is ended.
    async fn attempt(
        &self,
        call: &LinkedCall<'_>,
        peer: &rmcp::service::Peer<rmcp::RoleClient>,
        generation: u64,
    ) -> Attempt {
        let statement = match self.signer.sign(&self.audience, call) {
            Ok(statement) => statement,
            Err(error) => {
                return Attempt::Answered(Err(LinkError::NotSent {
                    reason: format!("the identity statement could not be signed: {error}"),
                }));
            }
        };
        let arguments = match &*call.params {
            Value::Object(arguments) => arguments.clone(),
            _ => serde_json::Map::new(),
        };
        let mut request = CallToolRequestParams::new(Cow::Owned(call.tool.name.to_string()))
            .with_arguments(arguments);
        request
            .meta_or_default()
            .0
            .0
            .insert(IDENTITY_META_KEY.to_owned(), Value::String(statement));
        let sending = call_once(
            peer,
            request,
            &self.progress,
            Some(call.caller.progress.clone()),
            call.caller.org_id.clone(),
        );
        let node = &self.config.node;
        let mut health = self.health.clone();
        let given_up = async move {
            loop {
                let serving = matches!(
                    &*health.borrow_and_update(),
                    Health::Up { generation: now, .. } if *now == generation
                );
                if !serving || health.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::select! {
            () = given_up => Attempt::Lost("the connection was given up".to_owned()),
            answer = sending => match answer {
                Ok(result) => Attempt::Answered(answer::sort(node, call.tool, result)),
                Err(ServiceError::McpError(error)) => {
                    tracing::warn!(domain = %self.config.domain, tool = %call.tool.name, %node, message = %error.message, "the remote node refused a linked call");
                    Attempt::Answered(Err(LinkError::Refused(InvokeError::DomainUnavailable {
                        tool: call.tool.name.to_string(),
                        domain: self.config.domain.clone(),
                        reason: format!("{node} refused the call: {}", error.message),
                    })))
                }
                // Refused at connect: nothing reached the node.
                Err(ServiceError::TransportSend(error)) if never_connected(&error) => {
                    Attempt::Answered(Err(LinkError::NotSent {
                        reason: format!("the call could not be sent to {node}: {error}"),
                    }))
                }
                // Any other send error (a reset, a closed stream) may come after the node
                // read the request: it may have run.
                Err(ServiceError::TransportSend(error)) => {
                    Attempt::Lost(format!("the request failed: {error}"))
                }
                Err(ServiceError::TransportClosed) => Attempt::Lost("the connection closed".to_owned()),
                Err(error) => Attempt::Answered(Err(LinkError::InDoubt {
                    reason: format!("{node} gave no usable answer: {error}"),
                })),
            },
            () = tokio::time::sleep_until(call.deadline) => Attempt::Answered(Err(LinkError::InDoubt {
                reason: format!("{node} did not answer by the call's deadline"),
            })),
        }
    }
}

/// Whether a transport error says the connection was refused or never made, so the request
/// cannot have reached the node: an I/O error of a failed connect anywhere in its sources.
fn never_connected(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(io) = error.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::HostUnreachable
                    | std::io::ErrorKind::NetworkUnreachable
                    | std::io::ErrorKind::AddrNotAvailable
            )
        {
            return true;
        }
        current = error.source();
    }
    false
}

/// How one attempt ended.
enum Attempt {
    /// With this answer.
    Answered(Result<Value, LinkError>),
    /// Its connection was lost after it was sent, for this reason.
    Lost(String),
}

impl DomainLink for McpDomainLink {
    fn kind(&self) -> &'static str {
        "mcp"
    }

    fn location(&self) -> String {
        format!("{} at {}", self.config.node, self.config.url)
    }

    fn health(&self) -> LinkHealth {
        match self.refusal() {
            None => LinkHealth::Up,
            Some(reason) => LinkHealth::Open { reason },
        }
    }

    fn call<'a>(&'a self, call: LinkedCall<'a>) -> BoxFuture<'a, Result<Value, LinkError>> {
        Box::pin(async move { self.call_remote(&call).await })
    }
}

impl Drop for McpDomainLink {
    /// Stops the server actor (which ends the connection) and its supervisor, without waiting.
    fn drop(&mut self) {
        self.supervisor.stop_children(None);
        self.supervisor.stop(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error wrapping `source`, as a transport wraps the socket's error.
    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Wrapped(#[source] std::io::Error);

    #[test]
    fn only_a_refused_connect_says_nothing_was_sent() {
        let refused = Wrapped(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(never_connected(&refused));
        let reset = Wrapped(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(!never_connected(&reset));
        let closed = std::io::Error::other("connection closed before message completed");
        assert!(!never_connected(&closed));
    }
}

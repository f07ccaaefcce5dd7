//! This process as a node of the cluster: its `ractor_cluster::NodeServer` (cookie
//! authentication, `NodeConnectionMode::Isolated`), the sessions it has with its peers, and
//! one task per configured peer that connects to it and connects again, with a backoff,
//! whenever there is no session with it.

use std::{
    collections::HashMap,
    hash::{BuildHasher as _, RandomState},
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use ractor::{Actor, ActorId, ActorRef};
use ractor_cluster::{
    NodeEventSubscription, NodeServer, NodeServerMessage,
    node::{NodeConnectionMode, NodeServerSessionInformation},
};
use switchboard_registry::StatementIssuer;
use tokio::{sync::watch, task::JoinHandle};

use super::{ClusterDomainLink, Cookie, PeerIssuer};
use crate::StatementSigner;

/// A node this one connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterPeer {
    /// Its node name (the name its own [`ClusterNodeConfig::name`] gives it).
    pub name: String,
    /// Where its node server listens.
    pub addr: SocketAddr,
}

/// How long to wait before connecting again to a peer: full jitter, from `initial` doubling
/// up to `max` with each failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconnect {
    /// The bound of the first wait.
    pub initial: Duration,
    /// The largest bound.
    pub max: Duration,
}

impl Default for Reconnect {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(200),
            max: Duration::from_secs(10),
        }
    }
}

impl Reconnect {
    /// The wait before attempt `attempt` (1 = the first retry): uniform in `0..=bound`.
    fn wait(&self, attempt: u32) -> Duration {
        let bound = self
            .initial
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
            .min(self.max);
        let random = RandomState::new().hash_one(attempt);
        let millis = u64::try_from(bound.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(random % millis.saturating_add(1))
    }
}

/// What a [`ClusterNode`] is.
#[derive(Debug, Clone)]
pub struct ClusterNodeConfig {
    /// This node's name, as the peers list it (and as `iss` and `aud` name it).
    pub name: String,
    /// Where its node server listens for the peers' sessions.
    pub listen: SocketAddr,
    /// The cluster's shared secret.
    pub cookie: Cookie,
    /// The nodes it connects to (and keeps connected to).
    pub peers: Vec<ClusterPeer>,
    /// How often each link pings its domain's actor on the peer. Default 2 s.
    pub health_interval: Duration,
    /// How long a ping may take before the link's breaker opens. Default 1 s.
    pub ping_deadline: Duration,
    /// The waits between attempts to connect to a peer.
    pub reconnect: Reconnect,
}

impl ClusterNodeConfig {
    /// A node `name` listening on `listen` with `cookie`, with no peers and the default
    /// health interval (2 s), ping deadline (1 s) and reconnect backoff.
    pub fn new(name: impl Into<String>, listen: SocketAddr, cookie: Cookie) -> Self {
        Self {
            name: name.into(),
            listen,
            cookie,
            peers: Vec::new(),
            health_interval: Duration::from_secs(2),
            ping_deadline: Duration::from_secs(1),
            reconnect: Reconnect::default(),
        }
    }

    /// Connects to (and stays connected to) the node `name` at `addr`.
    #[must_use]
    pub fn peer(mut self, name: impl Into<String>, addr: SocketAddr) -> Self {
        self.peers.push(ClusterPeer {
            name: name.into(),
            addr,
        });
        self
    }
}

/// Why a cluster node did not start, or a link could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The node server did not start.
    #[error("the cluster node server did not start on {listen}: {reason}")]
    Start {
        /// Where it was to listen.
        listen: SocketAddr,
        /// Why.
        reason: String,
    },
    /// A link names a node that is not one of the configured peers.
    #[error("`{peer}` is not a peer of this cluster node (its peers: {known})")]
    UnknownPeer {
        /// The node named.
        peer: String,
        /// The configured peers.
        known: String,
    },
}

/// The sessions this node has, by the session actor: the peer's node name and the node id
/// its actors' ids carry here. Fed by the node server's events.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    open: Mutex<HashMap<ActorId, (String, u64)>>,
    changed: watch::Sender<u64>,
}

impl Sessions {
    /// The node id of the ready session with the node `peer`, if there is one.
    pub(super) fn node_of(&self, peer: &str) -> Option<u64> {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .find(|(name, _)| name == peer)
            .map(|(_, node)| *node)
    }

    /// A receiver that sees every change of the sessions.
    pub(super) fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn update(&self, change: impl FnOnce(&mut HashMap<ActorId, (String, u64)>)) {
        change(&mut self.open.lock().unwrap_or_else(PoisonError::into_inner));
        self.changed.send_modify(|generation| *generation += 1);
    }
}

/// A peer's node name as its session names it (`<name>@<host>`).
fn peer_name(session: &NodeServerSessionInformation) -> Option<String> {
    let name = &session.peer_name.as_ref()?.name;
    Some(name.split('@').next().unwrap_or(name).to_owned())
}

/// The node server's events, written into [`Sessions`].
struct Subscription(Arc<Sessions>);

impl NodeEventSubscription for Subscription {
    fn node_session_opened(&self, _session: NodeServerSessionInformation) {}

    fn node_session_authenticated(&self, _session: NodeServerSessionInformation) {}

    fn node_session_ready(&self, session: NodeServerSessionInformation) {
        let Some(name) = peer_name(&session) else {
            return;
        };
        tracing::info!(peer = %name, addr = %session.peer_addr, "cluster session ready");
        self.0.update(|open| {
            open.insert(session.actor.get_id(), (name, session.node_id));
        });
    }

    fn node_session_disconnected(&self, session: NodeServerSessionInformation) {
        tracing::warn!(
            peer = ?peer_name(&session),
            addr = %session.peer_addr,
            "cluster session ended"
        );
        self.0.update(|open| {
            open.remove(&session.actor.get_id());
        });
    }
}

/// This process as a node of the cluster. Dropping it stops its node server (every session
/// ends) and its reconnecting and health tasks.
#[derive(Debug)]
pub struct ClusterNode {
    config: ClusterNodeConfig,
    server: ActorRef<NodeServerMessage>,
    sessions: Arc<Sessions>,
    tasks: Vec<JoinHandle<()>>,
}

impl ClusterNode {
    /// Starts the node server on `config.listen` and connects to every peer.
    pub async fn start(config: ClusterNodeConfig) -> Result<Self, ClusterError> {
        let server = NodeServer::new(
            config.listen.port(),
            config.cookie.secret(),
            config.name.clone(),
            config.listen.ip().to_string(),
            None,
            Some(NodeConnectionMode::Isolated),
        )
        .with_listen_addr(config.listen.ip());
        let (server, _) =
            Actor::spawn(None, server, ())
                .await
                .map_err(|error| ClusterError::Start {
                    listen: config.listen,
                    reason: error.to_string(),
                })?;
        let sessions = Arc::new(Sessions::default());
        server
            .cast(NodeServerMessage::SubscribeToEvents {
                id: "switchboard-link".to_owned(),
                subscription: Box::new(Subscription(Arc::clone(&sessions))),
            })
            .map_err(|error| ClusterError::Start {
                listen: config.listen,
                reason: format!("its events could not be subscribed to: {error}"),
            })?;
        let tasks = config
            .peers
            .iter()
            .map(|peer| {
                tokio::spawn(stay_connected(
                    server.clone(),
                    Arc::clone(&sessions),
                    peer.clone(),
                    config.reconnect,
                    config.health_interval.max(config.ping_deadline),
                ))
            })
            .collect();
        tracing::info!(node = %config.name, listen = %config.listen, peers = config.peers.len(), "cluster node started");
        Ok(Self {
            config,
            server,
            sessions,
            tasks,
        })
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Whether a session with the node `peer` is ready.
    pub fn connected_to(&self, peer: &str) -> bool {
        self.sessions.node_of(peer).is_some()
    }

    /// A link to `domain` as the peer `peer` serves it, each call signed by `signer` for
    /// `<peer>/<domain>`: give it to `RegistryBuilder::remote_domain`.
    pub fn link(
        &self,
        peer: &str,
        domain: &str,
        signer: Arc<StatementSigner>,
    ) -> Result<Arc<ClusterDomainLink>, ClusterError> {
        let issuer: Arc<dyn StatementIssuer> = Arc::new(PeerIssuer::new(signer, peer));
        self.link_with(peer, domain, issuer)
    }

    /// [`link`](Self::link) with another issuer of statements.
    pub fn link_with(
        &self,
        peer: &str,
        domain: &str,
        issuer: Arc<dyn StatementIssuer>,
    ) -> Result<Arc<ClusterDomainLink>, ClusterError> {
        let Some(peer) = self.config.peers.iter().find(|known| known.name == peer) else {
            return Err(ClusterError::UnknownPeer {
                peer: peer.to_owned(),
                known: self
                    .config
                    .peers
                    .iter()
                    .map(|known| known.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        Ok(ClusterDomainLink::start(
            peer.clone(),
            domain.to_owned(),
            issuer,
            Arc::clone(&self.sessions),
            self.config.health_interval,
            self.config.ping_deadline,
        ))
    }
}

impl Drop for ClusterNode {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.server.stop(None);
    }
}

/// Keeps a session with `peer`: whenever there is none, connects, waits up to `patience`
/// for the session to be ready, and otherwise waits the backoff before the next attempt.
async fn stay_connected(
    server: ActorRef<NodeServerMessage>,
    sessions: Arc<Sessions>,
    peer: ClusterPeer,
    reconnect: Reconnect,
    patience: Duration,
) {
    let mut changes = sessions.watch();
    let mut failures = 0u32;
    loop {
        if sessions.node_of(&peer.name).is_some() {
            failures = 0;
            if changes.changed().await.is_err() {
                return;
            }
            continue;
        }
        match ractor_cluster::client_connect(&server, peer.addr).await {
            Ok(()) => {
                let ready = tokio::time::timeout(patience, async {
                    while sessions.node_of(&peer.name).is_none() {
                        if changes.changed().await.is_err() {
                            return;
                        }
                    }
                })
                .await;
                if ready.is_ok() {
                    continue;
                }
                tracing::warn!(peer = %peer.name, addr = %peer.addr, "no cluster session with the peer after connecting (a wrong cookie, or another node at that address?)");
            }
            Err(error) => {
                tracing::warn!(peer = %peer.name, addr = %peer.addr, %error, "cannot connect to the cluster peer");
            }
        }
        failures = failures.saturating_add(1);
        tokio::time::sleep(reconnect.wait(failures)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reconnect_wait_grows_up_to_its_bound_and_no_further() {
        let reconnect = Reconnect {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(500),
        };

        for _ in 0..50 {
            assert!(reconnect.wait(1) <= Duration::from_millis(100));
            assert!(reconnect.wait(3) <= Duration::from_millis(400));
            assert!(reconnect.wait(30) <= Duration::from_millis(500));
        }
    }
}

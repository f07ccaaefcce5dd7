//! [`ClusterDomainLink`]: a linked domain whose actor runs on a peer of the cluster, behind a
//! breaker. A task per link decides its health every health interval: open while there is no
//! session with the peer, while the peer serves no actor of the domain, or when a ping of
//! that actor misses its deadline; half-open (`Starting`: calls are sent) once they are back,
//! until a ping is answered; up after that. A ping is a call whose envelope is empty: the
//! serving actor answers that it does not decode, which proves that its mailbox, the task it
//! spawns and the session both ways are alive, and runs nothing.

use std::{sync::Arc, time::Duration};

use ractor::{ActorRef, rpc::CallResult};
use serde_json::Value;
use switchboard_core::BoxFuture;
use switchboard_registry::{
    DomainLink, DomainMsg, LinkError, LinkHealth, LinkedCall, StatementIssuer, call_domain_actor,
    domain_actors,
};
use tokio::{sync::watch, task::JoinHandle};

use super::node::{ClusterPeer, Sessions};

/// A link to `domain`'s actor on one peer of the cluster. Made by
/// [`ClusterNode::link`](super::ClusterNode::link); dropping it stops its health task.
pub struct ClusterDomainLink {
    peer: ClusterPeer,
    domain: String,
    issuer: Arc<dyn StatementIssuer>,
    sessions: Arc<Sessions>,
    health: watch::Receiver<LinkHealth>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for ClusterDomainLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterDomainLink")
            .field("peer", &self.peer)
            .field("domain", &self.domain)
            .field("health", &*self.health.borrow())
            .finish_non_exhaustive()
    }
}

impl ClusterDomainLink {
    pub(super) fn start(
        peer: ClusterPeer,
        domain: String,
        issuer: Arc<dyn StatementIssuer>,
        sessions: Arc<Sessions>,
        interval: Duration,
        deadline: Duration,
    ) -> Arc<Self> {
        let (state, health) = watch::channel(LinkHealth::Starting);
        let task = tokio::spawn(watch_health(
            peer.clone(),
            domain.clone(),
            Arc::clone(&sessions),
            state,
            interval,
            deadline,
        ));
        Arc::new(Self {
            peer,
            domain,
            issuer,
            sessions,
            health,
            task,
        })
    }

    /// The domain's actor on the peer, if the session with it is ready and it serves one.
    fn member(&self) -> Option<ActorRef<DomainMsg>> {
        member(&self.sessions, &self.peer.name, &self.domain)
    }
}

impl Drop for ClusterDomainLink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn member(sessions: &Sessions, peer: &str, domain: &str) -> Option<ActorRef<DomainMsg>> {
    let node = sessions.node_of(peer)?;
    domain_actors(domain)
        .into_iter()
        .find(|actor| actor.get_id().node() == node)
}

/// The link's health now: open (with why), or the actor that answered a ping.
async fn probe(
    sessions: &Sessions,
    peer: &ClusterPeer,
    domain: &str,
    deadline: Duration,
) -> Result<(), String> {
    if sessions.node_of(&peer.name).is_none() {
        return Err(format!(
            "no cluster session with {} at {}",
            peer.name, peer.addr
        ));
    }
    let Some(actor) = member(sessions, &peer.name, domain) else {
        return Err(format!(
            "{} serves no actor of `{domain}` (it did not join the domain's group)",
            peer.name
        ));
    };
    match actor
        .call(|reply| DomainMsg::Call(Vec::new(), reply), Some(deadline))
        .await
    {
        Ok(CallResult::Success(_)) => Ok(()),
        Ok(CallResult::Timeout) => Err(format!(
            "{}'s actor of `{domain}` did not answer a ping within {} ms",
            peer.name,
            deadline.as_millis()
        )),
        Ok(CallResult::SenderError) | Err(_) => Err(format!(
            "{}'s actor of `{domain}` is gone (the session ended during a ping)",
            peer.name
        )),
    }
}

/// Decides the link's health every `interval`, and at once when a session opens or ends.
async fn watch_health(
    peer: ClusterPeer,
    domain: String,
    sessions: Arc<Sessions>,
    state: watch::Sender<LinkHealth>,
    interval: Duration,
    deadline: Duration,
) {
    let mut changes = sessions.watch();
    loop {
        let was_open = matches!(*state.borrow(), LinkHealth::Open { .. });
        if was_open && member(&sessions, &peer.name, &domain).is_some() {
            // Half-open: the peer is back; calls are sent while the ping decides.
            state.send_replace(LinkHealth::Starting);
        }
        let health = match probe(&sessions, &peer, &domain, deadline).await {
            Ok(()) => LinkHealth::Up,
            Err(reason) => LinkHealth::Open { reason },
        };
        state.send_if_modified(|current| {
            if *current == health {
                return false;
            }
            match &health {
                LinkHealth::Open { reason } => {
                    tracing::warn!(peer = %peer.name, %domain, %reason, "cluster link open");
                }
                _ => tracing::info!(peer = %peer.name, %domain, "cluster link up"),
            }
            *current = health;
            true
        });
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            changed = changes.changed() => if changed.is_err() { return },
        }
    }
}

impl DomainLink for ClusterDomainLink {
    fn kind(&self) -> &'static str {
        "cluster"
    }

    fn location(&self) -> String {
        format!(
            "the actor of `{}` on the cluster node {} at {}",
            self.domain, self.peer.name, self.peer.addr
        )
    }

    fn health(&self) -> LinkHealth {
        self.health.borrow().clone()
    }

    fn call<'a>(&'a self, call: LinkedCall<'a>) -> BoxFuture<'a, Result<Value, LinkError>> {
        Box::pin(async move {
            if let LinkHealth::Open { reason } = &*self.health.borrow() {
                return Err(LinkError::NotSent {
                    reason: reason.clone(),
                });
            }
            let Some(member) = self.member() else {
                return Err(LinkError::NotSent {
                    reason: format!(
                        "no ready cluster session with {} serving `{}`",
                        self.peer.name, self.domain
                    ),
                });
            };
            let remote = self.issuer.remote_call(&self.domain, &call)?;
            let mut health = self.health.clone();
            // Biased: the call is sent (its first poll) before the breaker is looked at, so a
            // call ended by the breaker was sent, and is rightly in doubt.
            tokio::select! {
                biased;
                answer = call_domain_actor(&member, &remote, call.deadline) => answer,
                reason = opened(&mut health) => Err(LinkError::InDoubt {
                    reason: format!("the link to {} was lost while the call was in flight: {reason}", self.peer.name),
                }),
            }
        })
    }
}

/// Resolves with the reason once `health` is open.
async fn opened(health: &mut watch::Receiver<LinkHealth>) -> String {
    loop {
        if let LinkHealth::Open { reason } = &*health.borrow_and_update() {
            return reason.clone();
        }
        if health.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

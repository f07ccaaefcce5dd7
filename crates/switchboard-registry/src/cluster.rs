//! Where a node connected through `ractor_cluster` finds a domain's actor: the process group
//! `switchboard.domain.<name>`, which each domain actor of a registry built with
//! [`RegistryBuilder::join_domain_groups`] joins when it starts (and a restarted one joins
//! again). ractor's process groups are shared with the nodes a `NodeServer` connects to, so
//! another node looks the group up and sends the actor whole calls ([`DomainMsg::Call`],
//! [`call_domain_actor`](crate::call_domain_actor)).
//!
//! [`ClusterLink`] is the sending side: a [`DomainLink`] that hands each call of a remote
//! domain to an actor of the domain's group, with the caller's statement from a
//! [`StatementIssuer`].
//!
//! Groups are global to a process: two registries in one process that both join put both of
//! their actors of a domain in its group.

use std::sync::Arc;

use ractor::ActorRef;
use serde_json::Value;
use switchboard_core::BoxFuture;

use crate::{
    domain::DomainMsg,
    link::{DomainLink, LinkError, LinkHealth, LinkedCall},
    registry::RegistryBuilder,
    remote::{RemoteAction, RemoteCall, call_domain_actor},
};

/// What the name of every domain's process group starts with.
pub const DOMAIN_GROUP_PREFIX: &str = "switchboard.domain.";

/// The process group of `domain`'s actors.
pub fn domain_group(domain: &str) -> String {
    format!("{DOMAIN_GROUP_PREFIX}{domain}")
}

/// The actors in `domain`'s process group, on this node and on the nodes connected to it.
pub fn domain_actors(domain: &str) -> Vec<ActorRef<DomainMsg>> {
    ractor::pg::get_members(&domain_group(domain))
        .into_iter()
        .map(ActorRef::from)
        .collect()
}

impl RegistryBuilder {
    /// Has each domain actor join its domain's process group ([`domain_group`]), so that
    /// other nodes connected through `ractor_cluster` can send it calls. Those calls are served
    /// only with a [`statement_verifier`](Self::statement_verifier).
    pub fn join_domain_groups(mut self) -> Self {
        self.join_groups = true;
        self
    }
}

/// Gives the caller's identity statement for each call a [`ClusterLink`] sends: the sending
/// side of [`RemoteCallVerifier`](crate::RemoteCallVerifier).
pub trait StatementIssuer: Send + Sync + 'static {
    /// The statement of `call`, meant for the registry that serves `domain`.
    fn issue(&self, domain: &str, call: &LinkedCall<'_>) -> Result<String, StatementNotIssued>;

    /// The message of `call` to the actor of `domain`: its caller's statement, the tool, the
    /// params and the action. A statement that cannot be issued leaves the call unsent.
    fn remote_call(&self, domain: &str, call: &LinkedCall<'_>) -> Result<RemoteCall, LinkError> {
        let statement = self
            .issue(domain, call)
            .map_err(|error| LinkError::NotSent {
                reason: error.to_string(),
            })?;
        Ok(RemoteCall::new(
            statement,
            call.tool.name.to_string(),
            Value::clone(&call.params),
            call.action.map(RemoteAction::from),
        ))
    }
}

/// Why no statement could be issued for a call: the call is not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the caller's statement could not be issued: {reason}")]
pub struct StatementNotIssued {
    /// Why.
    pub reason: String,
}

impl StatementNotIssued {
    /// A failure for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// A link to a domain whose actor is in its process group ([`domain_group`]) on a node of the
/// cluster: each call goes whole to that actor as [`DomainMsg::Call`].
///
/// It is up while the group has a member; with none (no node serving the domain is connected)
/// it is open, and calls fail at once. An actor on another node is preferred to one in this
/// process.
pub struct ClusterLink {
    domain: String,
    issuer: Arc<dyn StatementIssuer>,
}

impl ClusterLink {
    /// A link to `domain`'s actors, sending the statements `issuer` gives.
    pub fn new(domain: impl Into<String>, issuer: Arc<dyn StatementIssuer>) -> Self {
        Self {
            domain: domain.into(),
            issuer,
        }
    }

    /// The actor the next call goes to.
    fn member(&self) -> Option<ActorRef<DomainMsg>> {
        let mut members = domain_actors(&self.domain);
        members.sort_by_key(|actor| actor.get_id().is_local());
        members.into_iter().next()
    }
}

impl std::fmt::Debug for ClusterLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterLink")
            .field("domain", &self.domain)
            .finish_non_exhaustive()
    }
}

impl DomainLink for ClusterLink {
    fn kind(&self) -> &'static str {
        "cluster"
    }

    fn location(&self) -> String {
        format!("the process group {}", domain_group(&self.domain))
    }

    fn health(&self) -> LinkHealth {
        if self.member().is_some() {
            LinkHealth::Up
        } else {
            LinkHealth::Open {
                reason: format!(
                    "no node of the cluster serves it (its process group {} is empty)",
                    domain_group(&self.domain)
                ),
            }
        }
    }

    fn call<'a>(&'a self, call: LinkedCall<'a>) -> BoxFuture<'a, Result<Value, LinkError>> {
        Box::pin(async move {
            let Some(member) = self.member() else {
                return Err(LinkError::NotSent {
                    reason: format!("the process group {} is empty", domain_group(&self.domain)),
                });
            };
            let remote = self.issuer.remote_call(&self.domain, &call)?;
            call_domain_actor(&member, &remote, call.deadline).await
        })
    }
}

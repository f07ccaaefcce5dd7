//! Where a node connected through `ractor_cluster` finds a domain's actor: the process group
//! `switchboard.domain.<name>`, which each domain actor of a registry built with
//! [`RegistryBuilder::join_domain_groups`] joins when it starts (and a restarted one joins
//! again). ractor's process groups are shared with the nodes a `NodeServer` connects to, so
//! another node looks the group up and sends the actor whole calls ([`DomainMsg::Call`],
//! [`call_domain_actor`](crate::call_domain_actor)).
//!
//! Groups are global to a process: two registries in one process that both join put both of
//! their actors of a domain in its group.

use ractor::ActorRef;

use crate::{domain::DomainMsg, registry::RegistryBuilder};

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

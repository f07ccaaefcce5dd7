//! What a server actor does with each listing of its server's tools ([`ListingSink`]).
//!
//! The actor ([`crate::actor`]) owns a connection, its supervision and its health; what a
//! listing means depends on what the server is to us. A mounted server's listing passes the
//! [`Gate`] and its admitted tools are registered as run-time tools of the registry
//! ([`MountSink`]); a remote domain's listing is checked against the linked code of the domain,
//! and registers nothing ([`DomainSink`]).

use std::{collections::BTreeMap, time::SystemTime};

use switchboard_registry::{RuntimeToolSpec, ToolRegistry};
use tokio::sync::watch;

use crate::{
    config::ServerConfig,
    domain_link::drift::DomainSink,
    gate::{Admission, Gate, Listing, Refused},
    health::Health,
    mounts::registered,
    pins::Pins,
    progress::CallRoutes,
    tool::{Registered, spec},
    verifier::Finding,
};

/// What is done with each listing of a server's tools.
#[derive(Debug, Clone)]
pub(crate) enum ListingSink {
    /// A mounted server: its tools pass the gate and enter the registry.
    Mount(MountSink),
    /// A remote domain: its tools are checked against the linked code.
    Domain(DomainSink),
}

/// What a server's tools look like to `switchboard mounts`.
#[derive(Debug, Default)]
pub(crate) struct Shown {
    /// The tools' registry names.
    pub(crate) tools: Vec<String>,
    /// The registered tools that are withheld, with why.
    pub(crate) quarantined: BTreeMap<String, String>,
    /// What the prompt-injection verifier found in the latest listing.
    pub(crate) findings: Vec<Finding>,
}

impl ListingSink {
    /// Takes `server`'s new `listing`. `Err` says why none of its tools are served (kept as the
    /// server's last error).
    pub(crate) async fn take(
        &mut self,
        server: &ServerConfig,
        listing: &Listing,
        health: &watch::Sender<Health>,
        progress: &CallRoutes,
    ) -> Result<(), String> {
        match self {
            ListingSink::Mount(mount) => mount.admit(server, listing, health, progress).await,
            ListingSink::Domain(domain) => domain.take(listing),
        }
    }

    /// A new connection is being served: what was taken of the last one's listings is stale.
    pub(crate) fn connected(&self) {
        match self {
            ListingSink::Mount(_) => {}
            ListingSink::Domain(domain) => domain.connected(),
        }
    }

    /// The pins a listing is checked against, if any.
    pub(crate) fn pins(&self) -> Option<&Pins> {
        match self {
            ListingSink::Mount(mount) => mount.gate.pins(),
            ListingSink::Domain(_) => None,
        }
    }

    /// Whether the lock file was written since the last listing was taken (an accept made by
    /// another process), so the server's tools should be listed and taken again.
    pub(crate) fn pins_changed(&self) -> bool {
        match self {
            ListingSink::Mount(mount) => mount
                .gate
                .pins()
                .is_some_and(|pins| pins.modified() != mount.pins_seen),
            ListingSink::Domain(_) => false,
        }
    }

    /// What `server`'s tools look like now.
    pub(crate) fn shown(&self, server: &str) -> Shown {
        match self {
            ListingSink::Mount(mount) => Shown {
                tools: mount.registered.keys().cloned().collect(),
                quarantined: mount
                    .registered
                    .iter()
                    .filter_map(|(name, (_, admission))| match admission {
                        Admission::Withheld { reason } => Some((name.clone(), reason.clone())),
                        Admission::Exposed => None,
                    })
                    .collect(),
                findings: mount.gate.findings(server),
            },
            ListingSink::Domain(domain) => Shown {
                tools: domain.tools(),
                ..Shown::default()
            },
        }
    }

    /// The sink of a new actor for `server`, started in place of one that failed.
    pub(crate) fn restarted(&self, server: &ServerConfig) -> ListingSink {
        match self {
            ListingSink::Mount(mount) => {
                // The tools it had stay registered; the new actor's first connection lists
                // them again, admits them again, and brings the registry in line.
                let registered = mount
                    .registry
                    .list()
                    .into_iter()
                    .filter(|tool| tool.domain == server.id)
                    .map(|tool| (tool.name.to_string(), ((*tool).clone(), Admission::Exposed)))
                    .collect();
                ListingSink::Mount(MountSink::new(
                    mount.registry.clone(),
                    registered,
                    mount.gate.clone(),
                ))
            }
            ListingSink::Domain(domain) => ListingSink::Domain(domain.clone()),
        }
    }
}

/// A mounted server's listings: passed through the gate, and the registry brought in line
/// with what it admits.
#[derive(Debug, Clone)]
pub(crate) struct MountSink {
    /// The registry its tools are in.
    registry: ToolRegistry,
    /// What is registered there now, by name.
    registered: BTreeMap<String, Registered>,
    /// What decides which of its tools are exposed.
    gate: Gate,
    /// When the lock file had last been written at the last admission.
    pins_seen: Option<SystemTime>,
}

impl MountSink {
    /// The sink of a server whose tools `registered` are in `registry`, admitted by `gate`.
    pub(crate) fn new(
        registry: ToolRegistry,
        registered: BTreeMap<String, Registered>,
        gate: Gate,
    ) -> Self {
        Self {
            registry,
            registered,
            pins_seen: gate.pins().and_then(Pins::modified),
            gate,
        }
    }

    /// Passes `listing` through the gate and brings the registry in line with what it admits:
    /// new tools are registered, gone ones unregistered (calling one then gives
    /// `tool_not_found`), and changed ones (in definition or admission) replaced. A server the
    /// gate refuses loses all its tools. The registry tells its watchers (MCP sessions send
    /// `tools/list_changed`).
    async fn admit(
        &mut self,
        server: &ServerConfig,
        listing: &Listing,
        health: &watch::Sender<Health>,
        progress: &CallRoutes,
    ) -> Result<(), String> {
        self.pins_seen = self.gate.pins().and_then(Pins::modified);
        let (admitted, refused) = match self.gate.admit(server, listing) {
            Ok(admitted) => (admitted, None),
            Err(Refused { reason }) => {
                tracing::error!(server = %server.id, %reason, "the mounted server's tools are withdrawn");
                (Vec::new(), Some(reason))
            }
        };
        let reader = health.subscribe();
        let mut specs: BTreeMap<String, RuntimeToolSpec> = admitted
            .iter()
            .map(|(tool, admission)| {
                let spec = spec(server, tool, admission, &reader, progress);
                (spec.descriptor.name.to_string(), spec)
            })
            .collect();
        let mut wanted = registered(server, admitted);
        let stale: Vec<String> = self
            .registered
            .iter()
            .filter(|(name, registered)| wanted.get(*name) != Some(*registered))
            .map(|(name, _)| name.clone())
            .collect();
        let fresh: Vec<String> = wanted
            .iter()
            .filter(|(name, wanted)| self.registered.get(*name) != Some(*wanted))
            .map(|(name, _)| name.clone())
            .collect();
        if stale.is_empty() && fresh.is_empty() {
            return refused.map_or(Ok(()), Err);
        }
        if let Err(error) = self.registry.unregister(stale.clone()).await {
            tracing::warn!(server = %server.id, %error, "mounted tools not unregistered");
            return refused.map_or(Ok(()), Err);
        }
        for name in &stale {
            self.registered.remove(name);
        }
        let fresh_specs: Vec<RuntimeToolSpec> =
            fresh.iter().filter_map(|name| specs.remove(name)).collect();
        match self.registry.register(fresh_specs).await {
            Ok(()) => {
                for name in fresh {
                    if let Some(registered) = wanted.remove(&name) {
                        self.registered.insert(name, registered);
                    }
                }
                tracing::info!(server = %server.id, tools = self.registered.len(), "the mounted server's tools changed");
            }
            Err(error) => {
                tracing::warn!(server = %server.id, %error, "the mounted server's new tools were refused");
            }
        }
        refused.map_or(Ok(()), Err)
    }
}

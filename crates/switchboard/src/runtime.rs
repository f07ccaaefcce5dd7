//! `Switchboard`: the registry and the orchestrator started together, for the embedder who
//! calls tools by intent too. Without the `orchestrator` feature an embedder starts the
//! registry alone (`ToolRegistry::builder().start()`).

use switchboard_orchestrator::Orchestrator;
use switchboard_registry::{RegistryBuilder, ToolRegistry};

/// Why the runtime did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The registry refused to start.
    #[error(transparent)]
    Registry(#[from] switchboard_registry::RegistryError),
    /// The orchestrator refused to start.
    #[error(transparent)]
    Orchestrator(#[from] switchboard_orchestrator::OrchestratorError),
}

/// A running runtime: the registry and the orchestrator on top of it.
#[derive(Debug, Clone)]
pub struct Switchboard {
    /// Calls tools.
    pub registry: ToolRegistry,
    /// Routes utterances to tools.
    pub orchestrator: Orchestrator,
}

impl Switchboard {
    /// Starts a registry configured by `builder`, and an orchestrator on it.
    pub async fn start(builder: RegistryBuilder) -> Result<Self, StartError> {
        let registry = builder.start().await?;
        let orchestrator = Orchestrator::start(registry.clone()).await?;
        Ok(Self {
            registry,
            orchestrator,
        })
    }

    /// Stops the orchestrator, the registry and every domain actor.
    pub async fn shutdown(&self) {
        self.orchestrator.shutdown().await;
        self.registry.shutdown().await;
    }
}

#![doc = include_str!("../README.md")]

pub use switchboard_audit as audit;
pub use switchboard_navigation as navigation;
pub use switchboard_orchestrator as orchestrator;
pub use switchboard_registry as registry;

pub use switchboard_audit::{
    AuditConfig, AuditLog, AuditQuery, AuditRecord, AuditStore, Durability, MemoryAuditStore,
    WhenFull,
};
pub use switchboard_core::{
    Action, ActionId, AgentType, BoxFuture, CallContext, Caller, Category, ContentBlock,
    CorrelationId, DomainCell, EmbeddedResource, ErrorKind, FieldError, ID_FORMAT, IdempotencyKey,
    Initiator, InvokeError, MAX_ID_LEN, NoInput, OrgId, Page, PageError, PageLoader, PageSpec,
    Progress, ProgressNotifier, ProgressSink, ProjectId, ProposalId, ResourceSpec, Role,
    ScopeField, SessionId, ThreadId, Tool, ToolContent, ToolContext, ToolDescriptor, ToolError,
    ToolInput, ToolOrigin, UserId, domain, is_valid_id, mint_id, page, page_spec, resource, tool,
    tool_policy,
};
pub use switchboard_navigation::{ActionOutcome, NavError, Navigator, PageView};
pub use switchboard_orchestrator::{
    Answer, AskError, Orchestrator, ResumeDecision, Resumed, Route,
};
pub use switchboard_registry::{
    AgentMutations, AgentScopes, Approved, DomainStatus, Exposure, MemoryThreads, OpenSession,
    PermissionMatrix, PermissionsError, Proposal, ProposalStatus, RegistryBuilder, RegistryConfig,
    RegistryError, RuntimeTool, RuntimeToolSpec, ThreadDirectory, ToolRegistry, WeakToolRegistry,
};

/// The paths `#[tool]` expands to when a crate depends on this facade rather than on
/// `switchboard-core`. Not a public API.
#[doc(hidden)]
pub use switchboard_core as __core;

/// What a tool author or a calling service needs in scope.
pub mod prelude {
    pub use switchboard_core::{
        CallContext, Category, Initiator, InvokeError, NoInput, Tool, ToolContext, ToolError,
        ToolInput, tool,
    };
    pub use switchboard_orchestrator::Orchestrator;
    pub use switchboard_registry::ToolRegistry;
}

/// The "add a tool" guide (`docs/add-a-tool.md`), compiled and run as doctests so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/add-a-tool.md")]
pub struct AddAToolGuide;

/// The "add a page" guide (`docs/add-a-page.md`), compiled and run as doctests so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/add-a-page.md")]
pub struct AddAPageGuide;

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

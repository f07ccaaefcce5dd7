#![doc = include_str!("../README.md")]

mod access;
mod actor;
mod approvals;
mod audit;
mod call_metrics;
#[cfg(feature = "cluster")]
mod cluster;
mod config;
mod domain;
mod error;
mod invoke;
mod job;
mod layers;
mod link;
mod mutation;
mod permissions;
mod prompts;
mod registry;
mod remote;
mod scan;
mod sessions;
mod switches;
mod table;

pub use access::{
    AgentScopes, AgentScopesError, DEFAULT_AGENT_SCOPES_TOML, MemoryThreads, ThreadDirectory,
};
pub use actor::RegistryMsg;
pub use approvals::Approved;
pub use call_metrics::{
    CALL_DURATION_SECONDS, CALLS_TOTAL, LINK_CALL_DURATION_SECONDS, LINK_CALLS_TOTAL, UNKNOWN_TOOL,
    describe_metrics,
};
#[cfg(feature = "cluster")]
pub use cluster::{
    ClusterLink, DOMAIN_GROUP_PREFIX, StatementIssuer, StatementNotIssued, domain_actors,
    domain_group,
};
pub use config::{AgentMutations, RegistryConfig};
pub use domain::{DomainMsg, DomainStatus, IN_PROCESS, LinkStatus};
pub use error::RegistryError;
pub use layers::{CallLayer, Finished, LayerCall};
pub use link::{DomainLink, InProcessLink, LinkError, LinkHealth, LinkedCall};
pub use permissions::{DEFAULT_PERMISSIONS_TOML, PermissionMatrix, PermissionsError};
pub use prompts::{MAX_COMPLETIONS, RuntimePrompt};
pub use registry::{
    Exposure, RegistryBuilder, RuntimeToolSpec, ToolRegistry, ToolsChanged, WeakToolRegistry,
};
pub use remote::{
    RemoteAction, RemoteAnswer, RemoteCall, RemoteCallVerifier, RemoteError, StatementRefused,
    VerifiedCaller, call_domain_actor,
};
pub use sessions::OpenSession;
pub use switchboard_approvals::{
    IdempotencyStore, MemoryIdempotencyStore, MemoryProposalStore, Proposal, ProposalStatus,
    ProposalStore, Proposer,
};
pub use switches::{Selector, Switch};
pub use table::RuntimeTool;

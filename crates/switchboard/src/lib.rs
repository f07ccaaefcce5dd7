#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use switchboard_approvals as approvals;
pub use switchboard_audit as audit;
#[cfg(feature = "navigation")]
#[cfg_attr(docsrs, doc(cfg(feature = "navigation")))]
pub use switchboard_navigation as navigation;
#[cfg(feature = "orchestrator")]
#[cfg_attr(docsrs, doc(cfg(feature = "orchestrator")))]
pub use switchboard_orchestrator as orchestrator;
pub use switchboard_registry as registry;

// The crates whose types and derives appear in a tool's signature, at the versions Switchboard
// is built with: `#[switchboard::derives(...)]` derives through them, and a caller builds JSON
// params with `switchboard::serde_json::json!` without a version of its own to keep in step.
pub use schemars;
pub use serde;
pub use serde_json;
pub use validator;

pub use switchboard_audit::{
    AuditConfig, AuditLog, AuditQuery, AuditRecord, AuditStore, Durability, MemoryAuditStore,
    WhenFull,
};
pub use switchboard_core::{
    Action, ActionId, AgentType, BoxFuture, CallContext, Caller, Category, ContentBlock,
    CorrelationId, DomainCell, EmbeddedResource, ErrorKind, FieldError, ID_FORMAT, IdempotencyKey,
    Initiator, InvokeError, MAX_ID_LEN, NoInput, OrgId, Page, PageError, PageLoader, PageSpec,
    Progress, ProgressNotifier, ProgressSink, ProjectId, Prompt, PromptArgument, PromptDescriptor,
    PromptError, PromptMessage, PromptRole, PromptSpec, ProposalId, RenderedPrompt, ResourceSpec,
    Role, ScopeField, SessionId, ThreadId, Tool, ToolContent, ToolContext, ToolDescriptor,
    ToolError, ToolInput, ToolOrigin, UserId, derives, domain, is_valid_id, mint_id, page,
    page_spec, prompt, prompt_spec, resource, tool, tool_policy,
};
#[cfg(feature = "navigation")]
#[cfg_attr(docsrs, doc(cfg(feature = "navigation")))]
pub use switchboard_navigation::{ActionOutcome, NavError, Navigator, PageView};
#[cfg(feature = "orchestrator")]
#[cfg_attr(docsrs, doc(cfg(feature = "orchestrator")))]
pub use switchboard_orchestrator::{
    Answer, AskError, Orchestrator, ResumeDecision, Resumed, Route,
};
pub use switchboard_registry::{
    AgentMutations, AgentScopes, Approved, DomainStatus, Exposure, MemoryThreads, OpenSession,
    PermissionMatrix, PermissionsError, Proposal, ProposalStatus, RegistryBuilder, RegistryConfig,
    RegistryError, RuntimePrompt, RuntimeTool, RuntimeToolSpec, Selector, Switch, ThreadDirectory,
    ToolRegistry, WeakToolRegistry,
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
    #[cfg(feature = "orchestrator")]
    #[cfg_attr(docsrs, doc(cfg(feature = "orchestrator")))]
    pub use switchboard_orchestrator::Orchestrator;
    pub use switchboard_registry::ToolRegistry;
}

/// Serving the registry to MCP clients, over stdio or streamable HTTP, with the same checks and
/// audit as any other call (`docs/mcp.md` has the details). `ServerInfo`
/// sets the name, version and instructions the server answers `initialize` with.
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp {
    pub use switchboard_mcp::{
        HttpAuth, HttpConfig, HttpConfigError, HttpLimits, HttpServer, Identity, MCP_PATH,
        McpError, McpServer, NavigationMode, ServerInfo, TokenFileError, TokenTable, serve_http,
        serve_http_with, serve_io, serve_io_with, serve_stdio, serve_stdio_with, token_sha256_hex,
    };
}

/// The conformance kit: Switchboard's promises checked on your own tools, from your own tests.
/// [`ToolChecks`](testing::ToolChecks) calls every tool a registry lists with cases derived
/// from each tool's schema, category and permission, and reports every broken promise
/// ([`Invariant`](testing::Invariant)) with the tool, the shrunk input and the audit records.
/// Turn the feature on in `[dev-dependencies]`; `docs/embed.md` ("Checking your tools") shows
/// it in a service's test.
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing {
    pub use switchboard_testing::{
        DEFAULT_CASES, Invariant, Org, Report, Skipped, ToolChecks, Violation,
    };
}

/// Domains served by another node: a registry that holds a domain as a remote one
/// ([`RegistryBuilder::remote_domain`]) runs every check it can and hands each call to the
/// domain's [`DomainLink`](remote::DomainLink). [`McpDomainLink`](remote::McpDomainLink) is the
/// link over MCP (streamable HTTP) to a node that serves the domain (`serve --domains`), and
/// every call carries a statement of its caller signed by this node
/// ([`StatementSigner`](remote::StatementSigner)), which the serving node checks
/// ([`StatementVerifier`](remote::StatementVerifier)) before running the tool as that caller.
/// `docs/deploy.md` ("Domains on other nodes") has the operator's side.
#[cfg(feature = "remote")]
#[cfg_attr(docsrs, doc(cfg(feature = "remote")))]
pub mod remote {
    pub use switchboard_link::{
        Audience, Expected, KeyError, Refused, SignError, SigningKeys, StatementSigner,
        StatementVerifier, Verified, VerifyingKeys, generate_signing_key_pem,
    };
    pub use switchboard_mounts::{DomainLinkConfig, McpDomainLink, StartError};
    pub use switchboard_registry::{
        DomainLink, InProcessLink, LinkError, LinkHealth, LinkStatus, LinkedCall,
    };
}

/// The SQLite stores: an audit log and approvals (proposals and idempotency keys) that survive
/// a restart and are shared by the processes that open the same file.
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub mod sqlite {
    /// The approval stores' options (`switchboard_approvals_sqlite`).
    pub use switchboard_approvals_sqlite as approvals;
    pub use switchboard_approvals_sqlite::{
        ApprovalsDatabase, SqliteIdempotencyStore, SqliteProposalStore,
    };
    /// The audit store's options (`switchboard_audit_sqlite`).
    pub use switchboard_audit_sqlite as audit;
    pub use switchboard_audit_sqlite::SqliteAuditStore;
}

/// The "add a tool" guide (`docs/add-a-tool.md`), compiled and run as doctests so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/add-a-tool.md")]
pub struct AddAToolGuide;

/// The "add a page" guide (`docs/add-a-page.md`), compiled and run as doctests so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/add-a-page.md")]
pub struct AddAPageGuide;

#[cfg(feature = "orchestrator")]
mod runtime;
#[cfg(feature = "orchestrator")]
#[cfg_attr(docsrs, doc(cfg(feature = "orchestrator")))]
pub use runtime::{StartError, Switchboard};

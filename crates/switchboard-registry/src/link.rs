//! The link to a domain served by another registry: the trait a transport implements, the call
//! it carries, and how the answer is sorted.
//!
//! A domain whose state lives elsewhere (another registry in this process, or another node) is
//! registered with [`RegistryBuilder::remote_domain`](crate::RegistryBuilder::remote_domain).
//! This registry keeps the domain's tools, descriptors and policies, runs every check it can
//! without the domain's state, and hands each admitted call whole to the domain's
//! [`DomainLink`]: the one place where a call leaves for a domain it does not hold. The gate
//! and the tool body run on the registry that serves the domain, which checks the call again.
//!
//! The answer is sorted by what the front can know about the remote run ([`LinkError`]):
//! nothing was sent, the remote refused before running, the tool ran and failed, or the call
//! was sent and no usable answer came back (it may have run). These are what a mutation's
//! idempotency key needs to know: whether to keep the outcome or to free the key for a retry.

use std::sync::Arc;

use serde_json::Value;
use switchboard_core::{ActionKey, BoxFuture, Caller, InvokeError, ToolDescriptor};

/// A domain served by another registry, reached with whole calls.
///
/// Implementations own the transport (an in-process registry, MCP, a cluster), its health and
/// its breaker. The registry calls [`health`](Self::health) before each call and fails fast
/// when it is [`LinkHealth::Open`]; it then takes a permit of the domain's bulkhead and calls
/// [`call`](Self::call) with a deadline a little after the tool's timeout, so that the remote's
/// own timeout fires first.
pub trait DomainLink: Send + Sync + 'static {
    /// What carries the calls ("in-process", "mcp", "cluster"): for listings, metrics labels
    /// and logs.
    fn kind(&self) -> &'static str;

    /// Where the domain lives ("https://b:8443/mcp", "node-b@10.0.0.2:4697").
    fn location(&self) -> String;

    /// The link's health as its breaker sees it; cheap and synchronous.
    fn health(&self) -> LinkHealth;

    /// Makes one whole call on the remote registry and sorts its answer.
    fn call<'a>(&'a self, call: LinkedCall<'a>) -> BoxFuture<'a, Result<Value, LinkError>>;
}

/// One call handed to a [`DomainLink`]: everything the remote registry needs to check and run
/// it again.
#[derive(Debug)]
#[non_exhaustive]
pub struct LinkedCall<'a> {
    /// The tool, as this registry describes it.
    pub tool: &'a ToolDescriptor,
    /// The params, valid against the tool's input schema.
    pub params: Arc<Value>,
    /// The caller, verified by this registry.
    pub caller: &'a Caller,
    /// For a mutation holding its idempotency key: the key and the action id.
    pub action: Option<&'a ActionKey>,
    /// When this registry stops waiting for the answer.
    pub deadline: tokio::time::Instant,
}

impl<'a> LinkedCall<'a> {
    /// A call of `tool` with `params` as `caller` (and as `action`, for a mutation holding its
    /// key), answered by `deadline`.
    pub fn new(
        tool: &'a ToolDescriptor,
        params: Arc<Value>,
        caller: &'a Caller,
        action: Option<&'a ActionKey>,
        deadline: tokio::time::Instant,
    ) -> Self {
        Self {
            tool,
            params,
            caller,
            action,
            deadline,
        }
    }
}

/// A link's health.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkHealth {
    /// Calls go through.
    Up,
    /// The link is connecting for the first time; calls are sent and may wait for it.
    Starting,
    /// The breaker is open: calls fail at once with `domain_unavailable`.
    Open {
        /// Why, for the refusal's message.
        reason: String,
    },
}

/// Why a linked call gave no output, sorted by what is known of the remote run.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// Nothing reached the remote registry (breaker open, connection refused): the tool did
    /// not run. Answered as `domain_unavailable`.
    #[error("the call was not sent: {reason}")]
    NotSent {
        /// Why, for the caller.
        reason: String,
    },
    /// The remote registry refused the call before running it (gate, permission, input,
    /// idempotency conflict).
    #[error("the remote registry refused the call: {0}")]
    Refused(InvokeError),
    /// The tool ran on the remote registry and failed (tool failure, panic, remote timeout).
    #[error("the tool ran on the remote registry and failed: {0}")]
    Failed(InvokeError),
    /// The call was sent and no usable answer came back (connection lost, deadline passed, an
    /// answer that does not decode): the tool may have run.
    #[error("the call's outcome is unknown: {reason}")]
    InDoubt {
        /// Why, for the caller.
        reason: String,
    },
}

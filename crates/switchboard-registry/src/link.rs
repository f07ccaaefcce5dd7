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
use switchboard_core::{
    ActionKey, BoxFuture, CallContext, Caller, Digest, InvokeError, ToolDescriptor,
};
use tracing::Instrument;

use crate::{
    invoke::{Mode, Step},
    job::JsonRequest,
    registry::ToolRegistry,
};

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
    /// The digest of `params` ([`switchboard_core::digest_json`]): the audit's input hash, which
    /// a signed identity statement binds the call to.
    pub input: Digest,
    /// The caller, verified by this registry.
    pub caller: &'a Caller,
    /// For a mutation holding its idempotency key: the key and the action id.
    pub action: Option<&'a ActionKey>,
    /// When this registry stops waiting for the answer.
    pub deadline: tokio::time::Instant,
}

impl<'a> LinkedCall<'a> {
    /// A call of `tool` with `params` (whose digest is `input`) as `caller` (and as `action`,
    /// for a mutation holding its key), answered by `deadline`.
    pub fn new(
        tool: &'a ToolDescriptor,
        params: Arc<Value>,
        input: Digest,
        caller: &'a Caller,
        action: Option<&'a ActionKey>,
        deadline: tokio::time::Instant,
    ) -> Self {
        Self {
            tool,
            params,
            input,
            caller,
            action,
            deadline,
        }
    }
}

/// A link's health.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
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

impl LinkError {
    /// How a call that this registry served for another one ended, sorted for the sender:
    /// the tool ran and failed, the outcome is unknown (the record of a call that may have run
    /// was not written), or the call was refused before it ran.
    pub fn from_served(error: InvokeError) -> Self {
        match error {
            InvokeError::ToolFailed { .. }
            | InvokeError::ToolPanicked { .. }
            | InvokeError::Timeout { .. } => LinkError::Failed(error),
            InvokeError::AuditFailed { .. } => LinkError::InDoubt {
                reason: error.to_string(),
            },
            refused => LinkError::Refused(refused),
        }
    }
}

impl ToolRegistry {
    /// Serves a call that another registry sends to a domain this one holds (through a
    /// [`DomainLink`]): the server side of every link. `context` is the caller the sender
    /// verified, and `action`, for a mutation, the key and action id the sender holds.
    ///
    /// The call takes the path of [`invoke`](ToolRegistry::invoke), every check included, with
    /// three differences: the thread's owner is not checked (the sender knows its threads and
    /// checked it); the call never becomes a proposal (one that would is refused with
    /// `category_denied`); and a mutation's idempotency key is the sender's prefixed with
    /// `link.`, its action id the sender's. The call's audit record here carries the same
    /// correlation id, action id and digests as the sender's.
    pub async fn serve_linked(
        &self,
        name: &str,
        params: Value,
        context: &CallContext,
        action: Option<&ActionKey>,
    ) -> Result<Value, InvokeError> {
        let span = tracing::info_span!(
            "serve_linked",
            tool = %switchboard_audit::clamp_tool_name(name),
            correlation_id = context.correlation_id.as_ref().map(|id| id.as_str()),
        );
        let step = self
            .run(
                name,
                JsonRequest::new(params),
                context,
                Mode::Linked { action },
            )
            .instrument(span)
            .await?;
        match step {
            Step::Output(output) => Ok(output),
            // `Mode::Linked` refuses a call that would become a proposal.
            Step::Proposed(proposal) => Err(crate::mutation::approval_required(&proposal)),
        }
    }
}

/// A link to a domain served by another registry in this process: each call goes to
/// [`ToolRegistry::serve_linked`] on it, as a transport's server side would send it.
#[derive(Debug, Clone)]
pub struct InProcessLink {
    remote: ToolRegistry,
}

impl InProcessLink {
    /// A link to the domains `remote` serves.
    pub fn new(remote: ToolRegistry) -> Self {
        Self { remote }
    }
}

impl DomainLink for InProcessLink {
    fn kind(&self) -> &'static str {
        "in-process"
    }

    fn location(&self) -> String {
        "a registry in this process".to_owned()
    }

    /// Always up: the other registry is in this process.
    fn health(&self) -> LinkHealth {
        LinkHealth::Up
    }

    fn call<'a>(&'a self, call: LinkedCall<'a>) -> BoxFuture<'a, Result<Value, LinkError>> {
        Box::pin(async move {
            let context = CallContext::from(call.caller);
            let params = Arc::unwrap_or_clone(call.params);
            let serving = self
                .remote
                .serve_linked(&call.tool.name, params, &context, call.action);
            match tokio::time::timeout_at(call.deadline, serving).await {
                Err(_) => Err(LinkError::InDoubt {
                    reason: "the serving registry did not answer by the deadline".to_owned(),
                }),
                Ok(Ok(output)) => Ok(output),
                Ok(Err(error)) => Err(LinkError::from_served(error)),
            }
        })
    }
}

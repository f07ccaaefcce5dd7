//! Peer sessions: another node that links this node's domains, calling their tools for its
//! own callers.
//!
//! A peer authenticates with a token of its own (`peer = "NODE"` in the token file), which
//! carries no identity: each `tools/call` of its session carries, in
//! `_meta["switchboard/identity"]`, an identity statement the peer signed
//! (`switchboard-link`), and runs as the caller that statement names, once the server's
//! [`StatementVerifier`] accepts it for this peer, this tool, its domain and these params.
//! The call goes to [`ToolRegistry::serve_linked`], which checks it again (permission, agent
//! scope, input, gate) and audits it with the statement's correlation id and action id.
//!
//! A peer session lists every tool of the domains this registry serves itself (linked with
//! `#[tool]`, in process), whatever the permissions: the peer links the same tools and needs
//! their schemas, and each call is checked as its caller. It gets nothing else: no
//! navigation, resources, prompts, completions or tasks, and a call's progress and log
//! messages are not sent to it.
//!
//! A refused statement, a peer call without one, or a statement sent in a session that is not
//! a peer's is answered with one JSON-RPC error (`-32600`, [`REFUSED_MESSAGE`]), whatever the
//! reason, and nothing runs; the reason is logged as a warning with the peer, the tool and the
//! statement's id (never the statement).

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResponse, ListToolsResult},
    service::RequestContext,
};
use serde_json::Value;
use switchboard_core::{ToolDescriptor, ToolOrigin};
use switchboard_link::{Expected, IDENTITY_META_KEY, StatementVerifier};
use switchboard_registry::{IN_PROCESS, ToolRegistry};

use super::McpServer;
use crate::{result, tools};

/// The one message a refused statement is answered with.
pub(crate) const REFUSED_MESSAGE: &str = "the identity statement was refused";

/// The peer a session's token stands for, and the verifier of its statements.
#[derive(Debug, Clone)]
pub(crate) struct PeerSession {
    name: Arc<str>,
    verifier: Option<Arc<StatementVerifier>>,
}

impl PeerSession {
    /// The session of the peer `name`, whose statements `verifier` checks (`None`: every
    /// call is refused).
    pub(crate) fn new(name: Arc<str>, verifier: Option<Arc<StatementVerifier>>) -> Self {
        Self { name, verifier }
    }
}

/// Every tool a peer may call: the linked tools of the domains this registry serves itself.
pub(crate) fn tools_served(registry: &ToolRegistry) -> Vec<Arc<ToolDescriptor>> {
    let local = local_domains(registry);
    registry
        .list()
        .into_iter()
        .filter(|tool| is_served(tool, &local))
        .collect()
}

/// The tool `name`, if a peer may call it.
pub(crate) fn tool_served(registry: &ToolRegistry, name: &str) -> Option<Arc<ToolDescriptor>> {
    registry
        .find(name)
        .filter(|tool| is_served(tool, &local_domains(registry)))
}

/// The domains this registry serves itself (not through a link).
fn local_domains(registry: &ToolRegistry) -> Vec<String> {
    registry
        .domains()
        .into_iter()
        .filter(|domain| domain.placement == IN_PROCESS)
        .map(|domain| domain.name)
        .collect()
}

fn is_served(tool: &ToolDescriptor, local: &[String]) -> bool {
    matches!(tool.origin, ToolOrigin::Linked { .. })
        && local.iter().any(|domain| *domain == tool.domain)
}

/// The answer to a statement refused for `reason`, logged with `peer` (`None`: the session
/// is not a peer's), `tool` and the statement's id when known.
pub(crate) fn refuse(
    peer: Option<&str>,
    tool: &str,
    statement_id: Option<uuid::Uuid>,
    reason: &dyn std::fmt::Display,
) -> ErrorData {
    let statement_id = statement_id.map(|id| id.to_string());
    // The name is the client's: logged no longer than a tool name may be.
    let tool: String = tool.chars().take(switchboard_core::MAX_ID_LEN).collect();
    tracing::warn!(
        peer = peer.unwrap_or("-"),
        %tool,
        statement_id = statement_id.as_deref().unwrap_or("-"),
        "refused an identity statement: {reason}"
    );
    ErrorData::invalid_request(REFUSED_MESSAGE, None)
}

impl McpServer {
    /// `-32601` for the method `M` in a session offered no prompts (a peer's).
    pub(super) fn prompts_offered<M: rmcp::model::ConstString>(&self) -> Result<(), ErrorData> {
        match self.peer {
            None => Ok(()),
            Some(_) => Err(ErrorData::method_not_found::<M>()),
        }
    }

    /// `tools/list` in a peer session: one page of [`tools_served`].
    pub(super) fn list_peer_tools(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListToolsResult, ErrorData> {
        tools::page(&self.catalog, tools_served(&self.registry), cursor)
    }

    /// `tools/call` in the session of `peer`: verified, then served as the statement's caller.
    pub(super) async fn answer_peer_call(
        &self,
        peer: &PeerSession,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name;
        let refused =
            |id, reason: &dyn std::fmt::Display| refuse(Some(&peer.name), &name, id, reason);
        let Some(statement) = context.meta.0.0.get(IDENTITY_META_KEY) else {
            return Err(refused(
                None,
                &"the call of a peer session carries no statement",
            ));
        };
        let Some(statement) = statement.as_str() else {
            return Err(refused(None, &"the statement is not a string"));
        };
        let Some(verifier) = &peer.verifier else {
            return Err(refused(
                None,
                &"this server verifies no statements (no peer keys are configured)",
            ));
        };
        let Some(tool) = tool_served(&self.registry, &name) else {
            return Err(refused(
                None,
                &"the tool is not one this node serves to its peers",
            ));
        };
        let params = Value::Object(request.arguments.unwrap_or_default());
        let expected = Expected {
            tool: &name,
            domain: &tool.domain,
            params: &params,
        };
        let verified = verifier
            .verify(&peer.name, statement, expected)
            .map_err(|refusal| refused(refusal.statement_id(), &refusal))?;
        tracing::debug!(
            peer = %peer.name,
            tool = %name,
            statement_id = %verified.statement_id,
            "serving a peer's call"
        );
        let serving =
            self.registry
                .serve_linked(&name, params, &verified.context, verified.action.as_ref());
        let outcome = tokio::select! {
            outcome = serving => outcome,
            () = context.ct.cancelled() => {
                tracing::info!(peer = %peer.name, tool = %name, "a peer's call was cancelled");
                return Err(ErrorData::internal_error("the request was cancelled", None));
            }
        };
        match outcome {
            Ok(output) => result::call_result(Ok(output), || tool.returns_content()),
            // Every failure, an unknown tool's included, as `isError` with the error in `_meta`:
            // the peer sorts it by kind.
            Err(error) => Ok(result::failure(&error)),
        }
        .map(Into::into)
    }
}

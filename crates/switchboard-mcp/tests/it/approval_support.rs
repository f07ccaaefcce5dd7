//! Helpers for the approval tests: a client whose user answers elicitations, in-memory
//! connections in every protocol revision, one-round calls and retries, and the proposals and
//! audit records to check.

use std::sync::{Arc, Mutex};

use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt as _, ErrorData, RoleClient, RoleServer,
    ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
        ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode, Implementation,
        InputRequiredResult, InputResponses, ProtocolVersion,
    },
    service::{RequestContext, RunningService, ServiceError},
};
use serde_json::{Value, json};
use switchboard_audit::{ActionEvent, AuditQuery, AuditRecord};
use switchboard_core::{CallContext, Initiator, ProposalId};
use switchboard_mcp::{Identity, McpServer};
use switchboard_registry::{Proposal, ToolRegistry};

use crate::common::{bounded, error_of};

/// The mutation the agent asks for: assign Sam to a Tuesday shift.
pub(crate) const ASSIGN: &str = "roster_assign_shift";

pub(crate) fn assignment() -> Value {
    json!({"shift_id": "acme-2026-11-24-pm", "user_id": "sam"})
}

/// Alice (acme admin) behind an agent that may have its mutations approved by elicitation.
pub(crate) fn alice() -> Identity {
    Identity::agent("acme", "alice")
        .with_role("admin")
        .with_agent_type("planner")
        .with_approval_by_elicitation(true)
}

/// A client whose user answers every elicitation with `answer`, and that records the
/// questions. It speaks `version` and declares elicitation unless `can_elicit` is false.
#[derive(Debug, Clone)]
pub(crate) struct Human {
    answer: ElicitResult,
    version: ProtocolVersion,
    can_elicit: bool,
    can_sample: bool,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Human {
    pub(crate) fn answering(answer: ElicitResult, version: ProtocolVersion) -> Self {
        Self {
            answer,
            version,
            can_elicit: true,
            can_sample: false,
            asked: Arc::default(),
        }
    }

    pub(crate) fn approving(version: ProtocolVersion) -> Self {
        Self::answering(decision(json!({"decision": "approve"})), version)
    }

    pub(crate) fn without_elicitation(version: ProtocolVersion) -> Self {
        Self {
            can_elicit: false,
            ..Self::approving(version)
        }
    }

    /// The same client, declaring sampling too (it answers no sampling request itself: a test
    /// answers the rounds by hand).
    pub(crate) fn with_sampling(mut self) -> Self {
        self.can_sample = true;
        self
    }

    /// The messages of the questions asked so far.
    pub(crate) fn asked(&self) -> Vec<String> {
        self.asked.lock().expect("not poisoned").clone()
    }
}

impl ClientHandler for Human {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = if self.can_elicit {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        if self.can_sample {
            #[allow(deprecated)] // rmcp 3 marks the MCP sampling types deprecated (SEP-2577).
            let sampling = ClientCapabilities::builder()
                .enable_sampling()
                .build()
                .sampling;
            capabilities.sampling = sampling;
        }
        ClientConfig::new(capabilities, Implementation::new("approver", "1.0"))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let message = match request {
            ElicitRequestParams::FormElicitationParams { message, .. }
            | ElicitRequestParams::UrlElicitationParams { message, .. } => message,
            _ => String::new(),
        };
        self.asked.lock().expect("not poisoned").push(message);
        Ok(self.answer.clone())
    }
}

pub(crate) fn decision(content: Value) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

pub(crate) type Client = RunningService<RoleClient, Human>;
pub(crate) type Server = RunningService<RoleServer, McpServer>;

/// A client speaking `human.version` connected in memory to a server acting as `identity`:
/// 2026-07-28 discovers (no `initialize`), the 2025 revisions shake hands.
pub(crate) async fn connect(
    registry: &ToolRegistry,
    identity: Identity,
    human: Human,
) -> (Client, Server) {
    connect_to(McpServer::new(registry.clone(), identity), human).await
}

/// [`connect`] to a handler configured beforehand.
pub(crate) async fn connect_to(server: McpServer, human: Human) -> (Client, Server) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    if human.version >= ProtocolVersion::V_2026_07_28 {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![human.version.clone()],
        };
        // Without `initialize`, the server settles on its lifecycle at the first request
        // after `server/discover`: a `tools/list` here.
        let server = tokio::spawn(server.serve(server_io));
        let client = bounded(
            "server/discover",
            human.serve_with_lifecycle(client_io, lifecycle),
        )
        .await
        .expect("the client connects");
        bounded("tools/list", client.list_all_tools())
            .await
            .expect("tools/list");
        let server = bounded("the server starting", server)
            .await
            .expect("the server task")
            .expect("the server accepts");
        (client, server)
    } else {
        let handshakes =
            Box::pin(async { tokio::join!(server.serve(server_io), human.serve(client_io)) });
        let (server, client) = bounded("the handshake", handshakes).await;
        (
            client.expect("the client connects"),
            server.expect("the server accepts"),
        )
    }
}

pub(crate) fn request(tool: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default())
}

/// A call, its `input_required` rounds driven by the client's handler.
pub(crate) async fn call(
    client: &Client,
    params: CallToolRequestParams,
) -> Result<CallToolResult, ServiceError> {
    bounded("a tools/call", client.call_tool(params)).await
}

/// One round of a call, as the server answered it.
pub(crate) async fn call_once(
    client: &Client,
    params: CallToolRequestParams,
) -> Result<CallToolResponse, ServiceError> {
    bounded("one tools/call round", client.call_tool_once(params)).await
}

/// The `input_required` answer to the first round of `params`.
pub(crate) async fn input_required(
    client: &Client,
    params: CallToolRequestParams,
) -> InputRequiredResult {
    match call_once(client, params).await.expect("an answer") {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// The retry of `params` with `answer` to the approval question and `state`.
pub(crate) fn retry(
    params: &CallToolRequestParams,
    answer: &ElicitResult,
    state: &str,
) -> CallToolRequestParams {
    let mut responses = InputResponses::new();
    responses.insert(
        "approval".to_owned(),
        serde_json::to_value(answer).expect("an answer serialises"),
    );
    params
        .clone()
        .with_input_responses(responses)
        .with_request_state(state)
}

pub(crate) fn kind(result: &CallToolResult) -> &str {
    error_of(result)["kind"].as_str().unwrap_or_default()
}

pub(crate) fn proposal_id_of(result: &CallToolResult) -> ProposalId {
    let error = error_of(result);
    ProposalId::new(error["proposal_id"].as_str().expect("a proposal id"))
}

pub(crate) fn invalid_params(outcome: Result<CallToolResponse, ServiceError>) -> String {
    match outcome {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
            error.message.into_owned()
        }
        other => panic!("expected a -32602 error, got {other:?}"),
    }
}

/// A human of acme with the admin role, as `switchboard approve` would act.
pub(crate) fn human_admin() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .session("cli")
        .correlation("cli-approve")
        .role("admin")
        .initiator(Initiator::Human)
        .build()
}

pub(crate) async fn proposals(registry: &ToolRegistry) -> Vec<Proposal> {
    bounded("listing proposals", registry.proposals(&human_admin()))
        .await
        .expect("the proposals")
}

pub(crate) async fn only_proposal(registry: &ToolRegistry) -> Proposal {
    let mut all = proposals(registry).await;
    assert_eq!(all.len(), 1, "{all:#?}");
    all.remove(0)
}

pub(crate) async fn records_of(registry: &ToolRegistry, tool: &str) -> Vec<AuditRecord> {
    let records = bounded("an audit query", registry.audit().query(&AuditQuery::all()))
        .await
        .expect("the audit store answers");
    records
        .into_iter()
        .filter(|record| &*record.tool == tool)
        .collect()
}

/// How many times the tool actually ran: records of an approval run that ended well.
pub(crate) async fn runs(registry: &ToolRegistry) -> usize {
    records_of(registry, ASSIGN)
        .await
        .iter()
        .filter(|record| {
            record.outcome.is_ok()
                && record
                    .action
                    .as_ref()
                    .is_some_and(|action| action.event == ActionEvent::Approved)
        })
        .count()
}

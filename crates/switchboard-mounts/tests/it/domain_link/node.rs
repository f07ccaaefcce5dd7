//! "node-b" for the link's tests: a plain rmcp server over streamable HTTP, in this process,
//! that announces the `depot` domain's tools and answers each call as the test says. Answering
//! correctly, it does what a serving node does: it verifies the call's identity statement with
//! a `StatementVerifier`, and runs the call from what the statement says on a registry that
//! holds the domain (`ToolRegistry::serve_linked`), answering the output as structured content
//! or the error under `_meta["switchboard/error"]`. Otherwise it answers garbage, slowly, with
//! a JSON-RPC error, or not at all (frozen: every request, pings included, hangs).

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        MetaObject, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::{NotificationContext, Peer, RequestContext},
    transport::streamable_http_server::StreamableHttpServerConfig,
};
use serde_json::{Value, json};
use switchboard_link::{Expected, IDENTITY_META_KEY, StatementVerifier};
use switchboard_registry::ToolRegistry;
use tokio::{sync::watch, task::JoinHandle};

use crate::fixture_server::mcp_route;

/// How node-b answers a `tools/call`.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// As a serving node does.
    Correctly,
    /// With this result, whatever the call.
    Result(Value),
    /// Correctly, after this long.
    After(Duration),
    /// With a JSON-RPC error, as a node that refuses the statement does.
    RpcError,
}

/// What every session of node-b shares.
struct Shared {
    back: ToolRegistry,
    verifier: StatementVerifier,
    tools: Mutex<Vec<Tool>>,
    answer: Mutex<Answer>,
    /// While true, every request hangs (a process stopped with SIGSTOP: its port still
    /// accepts).
    frozen: watch::Sender<bool>,
    /// How many of the next pings fail (a ping that fails ends the connection: the client
    /// connects again).
    failing_pings: Mutex<u32>,
    /// Each call's statement, and whether it verified.
    statements: Mutex<Vec<(String, bool)>>,
    /// The tools of the calls that reached it, in order.
    calls: Mutex<Vec<String>>,
    peers: Mutex<Vec<Peer<RoleServer>>>,
}

/// node-b, serving on a loopback port until dropped or stopped.
pub(crate) struct NodeB {
    address: SocketAddr,
    shared: Arc<Shared>,
    serving: Option<JoinHandle<()>>,
}

impl NodeB {
    /// node-b serving `back`'s `depot` tools, trusting node-a's statements checked by
    /// `verifier`.
    pub(crate) async fn start(back: ToolRegistry, verifier: StatementVerifier) -> Self {
        let tools = announced(&back);
        let shared = Arc::new(Shared {
            back,
            verifier,
            tools: Mutex::new(tools),
            answer: Mutex::new(Answer::Correctly),
            frozen: watch::channel(false).0,
            failing_pings: Mutex::new(0),
            statements: Mutex::default(),
            calls: Mutex::default(),
            peers: Mutex::default(),
        });
        let (address, serving) = crate::fixture_server::serve_on_loopback(route(&shared)).await;
        Self {
            address,
            shared,
            serving: Some(serving),
        }
    }

    /// Where it serves MCP.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Answers every call so from now on.
    pub(crate) fn answer(&self, answer: Answer) {
        *lock(&self.shared.answer) = answer;
    }

    /// Freezes it (every request hangs), or thaws it.
    pub(crate) fn freeze(&self, frozen: bool) {
        self.shared.frozen.send_replace(frozen);
    }

    /// Fails the next ping, which ends the client's connection (it connects again).
    pub(crate) fn fail_next_ping(&self) {
        *lock(&self.shared.failing_pings) = 1;
    }

    /// Stops serving: its port refuses connections.
    pub(crate) fn stop(&mut self) {
        if let Some(serving) = self.serving.take() {
            serving.abort();
        }
    }

    /// Serves again on the same port.
    pub(crate) async fn restart(&mut self) {
        self.stop();
        let listener = loop {
            match tokio::net::TcpListener::bind(self.address).await {
                Ok(listener) => break listener,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        let app = route(&self.shared);
        self.serving = Some(tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        }));
    }

    /// Announces `tools` from now on and tells the connected clients.
    pub(crate) async fn announce(&self, tools: Vec<Tool>) {
        *lock(&self.shared.tools) = tools;
        let peers = lock(&self.shared.peers).clone();
        for peer in peers {
            let _ = peer.notify_tool_list_changed().await;
        }
    }

    /// What it announces now.
    pub(crate) fn tools(&self) -> Vec<Tool> {
        lock(&self.shared.tools).clone()
    }

    /// Each statement it received, and whether it verified.
    pub(crate) fn statements(&self) -> Vec<(String, bool)> {
        lock(&self.shared.statements).clone()
    }

    /// How many calls reached it.
    pub(crate) fn calls(&self) -> usize {
        lock(&self.shared.calls).len()
    }
}

impl Drop for NodeB {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn route(shared: &Arc<Shared>) -> axum::Router {
    mcp_route(
        Handler {
            shared: Arc::clone(shared),
        },
        StreamableHttpServerConfig::default(),
    )
}

/// The `depot` tools as a serving node announces them: each descriptor's MCP form.
fn announced(back: &ToolRegistry) -> Vec<Tool> {
    back.list()
        .iter()
        .filter(|descriptor| descriptor.domain == "depot")
        .map(|descriptor| serde_json::from_value(descriptor.mcp()).expect("an MCP tool"))
        .collect()
}

#[derive(Clone)]
struct Handler {
    shared: Arc<Shared>,
}

impl Handler {
    /// Waits while node-b is frozen.
    async fn thawed(&self) {
        let mut frozen = self.shared.frozen.subscribe();
        let _ = frozen.wait_for(|frozen| !*frozen).await;
    }

    /// The call as a serving node runs it.
    async fn serve(
        &self,
        request: CallToolRequestParams,
        meta: &MetaObject,
    ) -> Result<CallToolResult, ErrorData> {
        let refused = || ErrorData::invalid_request("the identity statement was refused", None);
        let Some(statement) = meta.0.get(IDENTITY_META_KEY).and_then(Value::as_str) else {
            return Err(refused());
        };
        let params = Value::Object(request.arguments.clone().unwrap_or_default());
        let verified = self.shared.verifier.verify(
            "node-a",
            statement,
            Expected {
                tool: &request.name,
                domain: "depot",
                params: &params,
            },
        );
        lock(&self.shared.statements).push((statement.to_owned(), verified.is_ok()));
        let verified = verified.map_err(|_| refused())?;
        let outcome = self
            .shared
            .back
            .serve_linked(
                &request.name,
                params,
                &verified.context,
                verified.action.as_ref(),
            )
            .await;
        Ok(match outcome {
            Ok(Value::Object(output)) => CallToolResult::structured(Value::Object(output)),
            Ok(other) => CallToolResult::structured(json!({ "result": other })),
            Err(error) => {
                let mut result = CallToolResult::error(vec![ContentBlock::text(error.to_string())]);
                let mut meta = MetaObject::default();
                meta.0.insert(
                    "switchboard/error".to_owned(),
                    serde_json::to_value(&error).expect("an error serializes"),
                );
                result.meta = Some(meta);
                result
            }
        })
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn ping(&self, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.thawed().await;
        let mut failing = lock(&self.shared.failing_pings);
        if *failing > 0 {
            *failing -= 1;
            return Err(ErrorData::internal_error("told to fail this ping", None));
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.thawed().await;
        Ok(ListToolsResult::with_all_items(
            lock(&self.shared.tools).clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.thawed().await;
        lock(&self.shared.calls).push(request.name.to_string());
        let answer = lock(&self.shared.answer).clone();
        let result = match answer {
            Answer::Correctly => self.serve(request, &context.meta).await?,
            Answer::After(delay) => {
                tokio::time::sleep(delay).await;
                self.serve(request, &context.meta).await?
            }
            Answer::Result(result) => serde_json::from_value(result)
                .map_err(|error| ErrorData::internal_error(error.to_string(), None))?,
            Answer::RpcError => {
                return Err(ErrorData::invalid_request(
                    "the identity statement was refused",
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        lock(&self.shared.peers).push(context.peer);
    }
}

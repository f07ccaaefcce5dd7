//! The stdio MCP server every part of the benchmark mounts and calls directly, and how to start
//! it.
//!
//! By default it is this benchmark binary re-executed with [`CHILD_ENV`] set: a plain rmcp
//! server with one tool, `echo`, that answers its `message` as one text block, on rmcp's
//! `stdio_pipes()`. It answers in microseconds and starts in a few milliseconds, so what the
//! mount adds is not hidden behind the server's own work. `MOUNTS_BENCH_SERVER=everything`
//! measures npm's `@modelcontextprotocol/server-everything` instead (its `echo` tool, same
//! arguments; installed under `target/mcp-servers` by `cargo xtask test --prepare`): a real
//! server nobody here wrote, on Node, slower to answer and far slower to start.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, sync::Arc};

use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
        Tool, ToolAnnotations,
    },
    service::RequestContext,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};

/// The environment variable that makes the benchmark binary the echo server.
pub(crate) const CHILD_ENV: &str = "MOUNTS_BENCH_CHILD";

/// The environment variable choosing the server: `tiny` (the default) or `everything`.
pub(crate) const SERVER_ENV: &str = "MOUNTS_BENCH_SERVER";

/// The tool every part calls, by the server's name for it.
pub(crate) const TOOL: &str = "echo";

/// The mounted server's id, so the registry's name of the tool is `bench_echo`.
pub(crate) const SERVER_ID: &str = "bench";

/// The arguments of every call.
pub(crate) fn arguments() -> JsonObject {
    let Value::Object(arguments) = json!({"message": "hello"}) else {
        unreachable!("an object literal")
    };
    arguments
}

/// Which server the benchmark mounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EchoServer {
    /// This binary re-executed as a plain rmcp server.
    Tiny,
    /// npm's server-everything.
    Everything,
}

/// How to start a server: program, arguments and added environment.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: BTreeMap<String, String>,
}

impl EchoServer {
    /// The server `MOUNTS_BENCH_SERVER` names.
    pub(crate) fn from_env() -> Self {
        match std::env::var(SERVER_ENV).as_deref() {
            Err(_) | Ok("tiny") => EchoServer::Tiny,
            Ok("everything") => EchoServer::Everything,
            Ok(other) => panic!("{SERVER_ENV}={other}: choose `tiny` or `everything`"),
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            EchoServer::Tiny => "a plain rmcp stdio server (this binary re-executed)",
            EchoServer::Everything => "npm's server-everything on Node",
        }
    }

    pub(crate) fn launch(self) -> Launch {
        match self {
            EchoServer::Tiny => {
                let this = std::env::current_exe().expect("the benchmark's own path");
                Launch {
                    program: this.to_string_lossy().into_owned(),
                    args: Vec::new(),
                    env: BTreeMap::from([(CHILD_ENV.to_owned(), "stdio".to_owned())]),
                }
            }
            EchoServer::Everything => {
                let program = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../../target/mcp-servers/node_modules/.bin/mcp-server-everything");
                assert!(
                    program.exists(),
                    "{} is missing: `cargo xtask test --prepare` installs it",
                    program.display()
                );
                Launch {
                    program: program.to_string_lossy().into_owned(),
                    args: Vec::new(),
                    env: BTreeMap::new(),
                }
            }
        }
    }
}

impl Launch {
    /// The command that starts the server directly, its stderr discarded.
    pub(crate) fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .envs(&self.env)
            .stderr(std::process::Stdio::null());
        command
    }

    /// A mounts file mounting the server as [`SERVER_ID`], its tools read tools.
    pub(crate) fn mounts_toml(&self) -> String {
        let mut text = format!(
            "[[server]]\nid = {SERVER_ID:?}\ncommand = {:?}\nargs = {:?}\ncategory = \"read\"\nstart_timeout = \"60s\"\n",
            self.program, self.args
        );
        if !self.env.is_empty() {
            text.push_str("[server.env]\n");
            for (name, value) in &self.env {
                text.push_str(&format!("{name} = {value:?}\n"));
            }
        }
        text
    }
}

/// Runs the echo server if this process was started as one (`stdio`: on its stdin and stdout;
/// `http`: on streamable HTTP at a free loopback port, announced on stdout as `listening on
/// URL`), or the plain proxy in front of it (`proxy`, see `proxy.rs`); `false` otherwise.
pub(crate) fn run_if_child() -> bool {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return false;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        match mode.as_str() {
            "stdio" => {
                let running = Echo::new()
                    .serve(rmcp::transport::stdio_pipes())
                    .await
                    .expect("the client initializes");
                let _ = running.waiting().await;
            }
            "http" => serve_http().await,
            "proxy" => crate::proxy::serve_stdio().await,
            other => panic!("{CHILD_ENV}={other}: not a mode of this benchmark"),
        }
    });
    true
}

/// Serves the echo server on streamable HTTP with rmcp's default configuration, until killed.
async fn serve_http() {
    let service = StreamableHttpService::new(
        || Ok(Echo::new()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("a loopback port");
    let address = listener.local_addr().expect("a bound address");
    println!("listening on http://{address}/mcp");
    axum::serve(listener, app).await.expect("the server runs");
}

/// A plain rmcp server with one read-only tool, `echo`.
#[derive(Debug, Clone)]
struct Echo {
    tool: Arc<Tool>,
}

impl Echo {
    fn new() -> Self {
        let Value::Object(schema) = json!({
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        }) else {
            unreachable!("an object literal")
        };
        let tool = Tool::new(TOOL, "Answers the message it is given.", schema)
            .with_annotations(ToolAnnotations::new().read_only(true));
        Self {
            tool: Arc::new(tool),
        }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bench-echo", "0.0.0"))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == self.tool.name).then(|| Tool::clone(&self.tool))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![Tool::clone(
            &self.tool,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        }
        let message = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("message"))
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("`message` must be a string", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(message)]).into())
    }
}

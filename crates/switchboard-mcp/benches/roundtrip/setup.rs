//! Everything the variants call, started once: the registry, our server and the plain one on
//! each transport, and the rmcp clients connected to them.
//!
//! - duplex: one `tokio::io::duplex` pipe per client, each with its own server handler
//!   ([`McpServer::new`] or [`PlainServer`]) served by rmcp's own transport in this process.
//!   Two diagnostics use duplex pipes too: our stdio entry point [`serve_io`] (our server behind
//!   our guarded line transport, as `serve --stdio` runs it) and [`InvokeServer`];
//! - stdio: one child process each. Ours is the real `switchboard serve --stdio` binary
//!   (found or built by [`switchboard_binary`]); the plain one is this benchmark binary
//!   re-executed as a server (`child.rs`) on the same rmcp transport ours uses
//!   (`stdio_pipes()`), as is the diagnostic on rmcp's blocking `stdio()`. The rmcp client
//!   talks to them through `TokioChildProcess`, i.e. real OS pipes;
//! - HTTP: ours from [`serve_http`] (our guard middleware, sessions, the operator identity),
//!   the plain one from [`plain::serve_plain_http`], both on `127.0.0.1:0`; each client is its
//!   own rmcp streamable-HTTP client, so its own session and connection. The same servers
//!   are measured again with clients speaking 2026-07-28, which has no session: each request
//!   stands alone, and rmcp looks the tool's input schema up on every `tools/call` (to check
//!   the `Mcp-Param-*` headers that revision defines).

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use rmcp::{
    ClientLifecycleMode, ClientServiceExt as _, RoleClient, ServerHandler, ServiceExt as _,
    model::{CallToolRequestParams, JsonObject, ProtocolVersion, Tool},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use switchboard_core::{CallContext, Initiator};
use switchboard_mcp::{HttpServer, Identity, McpServer, serve_http, serve_io};
use switchboard_registry::ToolRegistry;
use tokio::task::JoinHandle;

use crate::{
    CLIENTS, TOOL, child,
    plain::{self, InvokeServer, PlainHttp, PlainServer},
};

/// An rmcp client with no handler of its own.
pub(crate) type Client = RunningService<RoleClient, ()>;

/// The longest any setup or teardown step may take.
const LIMIT: Duration = Duration::from_secs(60);

/// Awaits `future`, panicking with `what` if it takes longer than [`LIMIT`].
async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {LIMIT:?}"))
}

/// The servers and clients of every variant.
pub(crate) struct Fixture {
    pub(crate) registry: ToolRegistry,
    /// The in-process call's context: the identity our MCP server acts as.
    pub(crate) context: CallContext,
    pub(crate) ours_duplex: Vec<Client>,
    pub(crate) plain_duplex: Vec<Client>,
    /// Diagnostic: our server through `serve_io` (the guarded transport of `serve --stdio`).
    pub(crate) guarded_duplex: Vec<Client>,
    /// Diagnostic: the plain handler calling `registry.invoke`.
    pub(crate) invoke_duplex: Vec<Client>,
    /// `serve --stdio` as a user starts it: its audit in SQLite (`STATE_DIR/audit.db`), each
    /// call acknowledged once its record is stored (strict durability).
    pub(crate) ours_stdio: Client,
    /// Diagnostic: the same with `--audit memory`, to tell the durable audit from the rest.
    pub(crate) ours_stdio_memory: Client,
    pub(crate) plain_stdio: Client,
    /// Diagnostic: the plain server on rmcp's blocking `stdio()`.
    pub(crate) plain_blocking: Client,
    /// The process ids of the stdio servers, for their CPU time.
    pub(crate) ours_stdio_pid: Option<u32>,
    pub(crate) ours_stdio_memory_pid: Option<u32>,
    /// The stdio servers' state directories, removed at shutdown.
    state_dirs: Vec<std::path::PathBuf>,
    pub(crate) plain_stdio_pid: Option<u32>,
    pub(crate) plain_blocking_pid: Option<u32>,
    pub(crate) ours_http: Vec<Client>,
    pub(crate) plain_http: Vec<Client>,
    /// Clients speaking 2026-07-28: no session, every request stands alone.
    pub(crate) ours_http_stateless: Vec<Client>,
    pub(crate) plain_http_stateless: Vec<Client>,
    duplex_servers: Vec<JoinHandle<()>>,
    ours_http_server: HttpServer,
    plain_http_server: PlainHttp,
}

/// Who every call acts as: alice, admin of acme, an agent (what an MCP client is by default).
fn identity() -> Identity {
    Identity::agent("acme", "alice").with_role("admin")
}

impl Fixture {
    /// Starts everything; `switchboard` is the binary for our stdio server.
    pub(crate) async fn start(switchboard: &Path) -> Self {
        let registry = bounded("starting the registry", ToolRegistry::start())
            .await
            .expect("the registry starts");
        let context = CallContext::builder()
            .org("acme")
            .user("alice")
            .session("bench-session")
            .correlation("bench-correlation")
            .role("admin")
            .initiator(Initiator::Agent)
            .build();
        let descriptor = registry.find(TOOL).expect("the core domain is linked");
        let tool: Tool = serde_json::from_value(descriptor.mcp()).expect("an MCP tool shape");
        let plain = PlainServer::new(tool.clone());

        let mut duplex_servers = Vec::new();
        let mut ours_duplex = Vec::new();
        let mut plain_duplex = Vec::new();
        let mut invoke_duplex = Vec::new();
        let mut guarded_duplex = Vec::new();
        for _ in 0..CLIENTS {
            let (client, server) = duplex(McpServer::new(registry.clone(), identity())).await;
            ours_duplex.push(client);
            duplex_servers.push(server);
            let (client, server) = duplex(plain.clone()).await;
            plain_duplex.push(client);
            duplex_servers.push(server);
            let (client, server) =
                duplex(InvokeServer::new(registry.clone(), context.clone())).await;
            invoke_duplex.push(client);
            duplex_servers.push(server);
            let (client, server) = guarded(&registry).await;
            guarded_duplex.push(client);
            duplex_servers.push(server);
        }

        let state_dirs: Vec<std::path::PathBuf> = ["durable", "memory"]
            .iter()
            .map(|name| {
                std::env::temp_dir().join(format!(
                    "switchboard-roundtrip-{}-{name}",
                    std::process::id()
                ))
            })
            .collect();
        let serve = |state_dir: &std::path::Path, extra: &[&str]| {
            let mut command = tokio::process::Command::new(switchboard);
            command
                .args([
                    "serve", "--stdio", "--org", "acme", "--user", "alice", "--role", "admin",
                ])
                .arg("--state-dir")
                .arg(state_dir)
                .args(extra);
            command
        };
        let (ours_stdio, ours_stdio_pid) = child(serve(&state_dirs[0], &[])).await;
        let (ours_stdio_memory, ours_stdio_memory_pid) =
            child(serve(&state_dirs[1], &["--audit", "memory"])).await;
        let tool_json = serde_json::to_string(&tool).expect("JSON");
        let (plain_stdio, plain_stdio_pid) = child(this_as(child::PLAIN_STDIO, &tool_json)).await;
        let (plain_blocking, plain_blocking_pid) =
            child(this_as(child::PLAIN_STDIO_BLOCKING, &tool_json)).await;

        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let ours_http_server = bounded(
            "starting our HTTP server",
            serve_http(registry.clone(), identity(), loopback),
        )
        .await
        .expect("our HTTP server starts");
        let plain_http_server = plain::serve_plain_http(plain).await;
        let mut ours_http = Vec::new();
        let mut plain_http = Vec::new();
        let mut ours_http_stateless = Vec::new();
        let mut plain_http_stateless = Vec::new();
        for _ in 0..CLIENTS {
            ours_http.push(http(&ours_http_server.url()).await);
            plain_http.push(http(&plain_http_server.url).await);
            ours_http_stateless.push(http_stateless(&ours_http_server.url()).await);
            plain_http_stateless.push(http_stateless(&plain_http_server.url).await);
        }

        let fixture = Self {
            registry,
            context,
            ours_duplex,
            plain_duplex,
            guarded_duplex,
            invoke_duplex,
            ours_stdio,
            ours_stdio_memory,
            plain_stdio,
            plain_blocking,
            ours_stdio_pid,
            ours_stdio_memory_pid,
            state_dirs,
            plain_stdio_pid,
            plain_blocking_pid,
            ours_http,
            plain_http,
            ours_http_stateless,
            plain_http_stateless,
            duplex_servers,
            ours_http_server,
            plain_http_server,
        };
        fixture.check_same_answers().await;
        fixture
    }

    /// Every variant must answer the same JSON, or the comparison means nothing.
    async fn check_same_answers(&self) {
        let expected = self
            .registry
            .invoke(TOOL, json!({}), &self.context)
            .await
            .expect("the in-process call works");
        let clients = [
            ("ours, duplex", &self.ours_duplex[0]),
            ("plain, duplex", &self.plain_duplex[0]),
            ("ours via serve_io, duplex", &self.guarded_duplex[0]),
            ("plain + invoke, duplex", &self.invoke_duplex[0]),
            ("ours, stdio", &self.ours_stdio),
            ("ours, stdio, memory audit", &self.ours_stdio_memory),
            ("plain, stdio", &self.plain_stdio),
            ("plain, blocking stdio", &self.plain_blocking),
            ("ours, HTTP", &self.ours_http[0]),
            ("plain, HTTP", &self.plain_http[0]),
            ("ours, HTTP 2026-07-28", &self.ours_http_stateless[0]),
            ("plain, HTTP 2026-07-28", &self.plain_http_stateless[0]),
        ];
        for (name, client) in clients {
            let answer = call(client).await;
            assert_eq!(answer, expected, "{name} answers differently");
        }
    }

    /// Closes every client, then stops the servers and the registry.
    pub(crate) async fn shutdown(self) {
        let clients = self
            .ours_duplex
            .into_iter()
            .chain(self.plain_duplex)
            .chain(self.guarded_duplex)
            .chain(self.invoke_duplex)
            .chain(self.ours_http)
            .chain(self.plain_http)
            .chain(self.ours_http_stateless)
            .chain(self.plain_http_stateless)
            .chain([
                self.ours_stdio,
                self.ours_stdio_memory,
                self.plain_stdio,
                self.plain_blocking,
            ]);
        for client in clients {
            let _ = bounded("closing a client", client.cancel()).await;
        }
        for server in self.duplex_servers {
            let _ = bounded("a duplex server ending", server).await;
        }
        let _ = bounded("our HTTP server stopping", self.ours_http_server.shutdown()).await;
        bounded(
            "the plain HTTP server stopping",
            self.plain_http_server.shutdown(),
        )
        .await;
        self.registry.shutdown().await;
        for dir in self.state_dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// One `tools/call` of the benchmarked tool; returns its `structuredContent`.
pub(crate) async fn call(client: &Client) -> Value {
    let request = CallToolRequestParams::new(TOOL).with_arguments(JsonObject::new());
    let result = client.call_tool(request).await.expect("tools/call answers");
    assert_ne!(result.is_error, Some(true), "the call failed: {result:?}");
    result
        .structured_content
        .expect("a result with structuredContent")
}

/// A client connected to `server` through an in-memory pipe; the server runs in a task.
async fn duplex<S: ServerHandler>(server: S) -> (Client, JoinHandle<()>) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let task = tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = bounded("a duplex handshake", Box::pin(().serve(client_io)))
        .await
        .expect("the duplex client connects");
    (client, task)
}

/// A client of our server run by [`serve_io`] (guarded line transport) over an in-memory pipe.
async fn guarded(registry: &ToolRegistry) -> (Client, JoinHandle<()>) {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    let registry = registry.clone();
    let task = tokio::spawn(async move {
        let _ = Box::pin(serve_io(registry, identity(), read, write)).await;
    });
    let client = bounded("a serve_io handshake", Box::pin(().serve(client_io)))
        .await
        .expect("the serve_io client connects");
    (client, task)
}

/// This benchmark binary, to be started as the stdio server `mode` (see `child.rs`).
fn this_as(mode: &str, tool_json: &str) -> tokio::process::Command {
    let this = std::env::current_exe().expect("the benchmark's own path");
    let mut command = tokio::process::Command::new(this);
    command
        .env(child::CHILD_ENV, mode)
        .env(child::TOOL_ENV, tool_json);
    command
}

/// A client of a server spawned as a child process speaking MCP on its stdin and stdout, and
/// the child's process id.
async fn child(command: tokio::process::Command) -> (Client, Option<u32>) {
    let transport = TokioChildProcess::new(command).expect("the child process spawns");
    let pid = transport.id();
    let client = bounded("a stdio handshake", Box::pin(().serve(transport)))
        .await
        .expect("the stdio client connects");
    (client, pid)
}

/// A streamable-HTTP client of `url` speaking 2026-07-28: it discovers the server instead of
/// initializing a session, and every request stands alone (its own connection).
async fn http_stateless(url: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = bounded(
        "a 2026-07-28 discovery",
        Box::pin(().serve_with_lifecycle(transport, lifecycle)),
    )
    .await
    .expect("the 2026-07-28 client connects");
    let negotiated = client.peer_info().map(|info| info.protocol_version.clone());
    assert_eq!(negotiated, Some(ProtocolVersion::V_2026_07_28), "{url}");
    client
}

/// A streamable-HTTP client of `url` (its own session and connection).
async fn http(url: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    bounded("an HTTP handshake", Box::pin(().serve(transport)))
        .await
        .expect("the HTTP client connects")
}

/// The `switchboard` binary for `serve --stdio`, built with this benchmark's profile.
///
/// Cargo gives benchmarks no `CARGO_BIN_EXE_*` (the binary lives in another package,
/// `switchboard-cli`), so: `SWITCHBOARD_BIN` if set; otherwise run `cargo build -p
/// switchboard-cli --bin switchboard` with this benchmark's profile and target directory (a
/// no-op when it is up to date) and take the binary next to this benchmark's `deps/` folder.
pub(crate) fn switchboard_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("SWITCHBOARD_BIN") {
        return PathBuf::from(path);
    }
    let this = std::env::current_exe().expect("the benchmark's own path");
    // <target>/<profile dir>/deps/roundtrip-<hash>
    let profile_dir = this
        .parent()
        .and_then(Path::parent)
        .expect("the benchmark runs from <target>/<profile>/deps");
    let target_dir = profile_dir
        .parent()
        .expect("the profile directory is inside the target directory");
    let profile = match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("release") => "bench",
        Some("debug") => "dev",
        Some(other) => other,
        None => "bench",
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args([
            "build",
            "--profile",
            profile,
            "-p",
            "switchboard-cli",
            "--bin",
            "switchboard",
        ])
        .env("CARGO_TARGET_DIR", target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "building the switchboard binary failed; build it yourself and set SWITCHBOARD_BIN"
    );
    let binary = profile_dir.join(format!("switchboard{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.is_file(),
        "no switchboard binary at {}; set SWITCHBOARD_BIN",
        binary.display()
    );
    binary
}

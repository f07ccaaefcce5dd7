//! The config file's `[limits]`, seen from a real MCP client over streamable HTTP: a call
//! over a limit is a tool result with `isError: true` whose `_meta` error says
//! `rate_limited`, the limit as configured and `retry_after_ms`, and another user is not
//! limited by it; a malformed limit or one naming no tool stops the start with a usage error
//! naming the key. Every wait is bounded by `common::LIMIT`.

use std::net::SocketAddr;

use rmcp::{
    RoleClient, ServiceExt as _,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};

use crate::{
    common::{StateDir, bounded, switchboard},
    http_client::Server,
};

const TOKENS: &str = r#"
[[token]]
sha256 = "462adc12851b4611cc0aae9267f9bfb60cd008bb47555820618a6c2af3f72c5e"
org = "acme"
user = "mark"
roles = ["admin"]

[[token]]
sha256 = "7aabe9c53aba4013979114d3efffc5509fa2aed4fb70886b0fafea525dff75c6"
org = "acme"
user = "sam"
roles = ["admin"]
"#;
/// Mark's token and Sam's (their SHA-256 hashes are above).
const MARK: &str = "agent-mark-token";
const SAM: &str = "sam-person-token";

async fn client(addr: SocketAddr, token: &str) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp"))
            .auth_header(token),
    );
    bounded("an MCP client connects", ().serve(transport))
        .await
        .expect("the MCP handshake")
}

async fn whoami(client: &RunningService<RoleClient, ()>) -> CallToolResult {
    bounded(
        "a tools/call",
        client.call_tool(CallToolRequestParams::new("core_get_current_user")),
    )
    .await
    .expect("a tool result")
}

/// Writes `text` as the config file and the tokens file; answers their paths.
fn files(state: &StateDir, config: &str) -> (String, String) {
    std::fs::create_dir_all(&state.0).expect("the state directory");
    let config_path = state.0.join("switchboard.toml");
    std::fs::write(&config_path, config).expect("config written");
    let tokens_path = state.0.join("tokens.toml");
    std::fs::write(&tokens_path, TOKENS).expect("tokens written");
    let path = |path: std::path::PathBuf| path.to_str().expect("UTF-8").to_owned();
    (path(config_path), path(tokens_path))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_over_a_limit_is_an_mcp_error_result_with_the_retry_after() {
    let state = StateDir::new();
    let (config, tokens) = files(&state, "[limits]\nper_user = \"2/min\"\n");
    let server = Server::start(&["--config", &config, "--tokens", &tokens]).await;
    let mark = client(server.addr, MARK).await;
    for _ in 0..2 {
        let result = whoami(&mark).await;
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    let refused = whoami(&mark).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let meta = refused.meta.as_ref().expect("the error's JSON in `_meta`");
    let error = &meta["switchboard/error"];
    assert_eq!(error["kind"], "rate_limited", "{error}");
    assert_eq!(error["limit"], "2 calls per 60 s per user", "{error}");
    let retry_after_ms = error["retry_after_ms"].as_u64().expect("a retry-after");
    assert!(
        (1..=30_000).contains(&retry_after_ms),
        "one call every 30 s: {error}"
    );

    // Sam, of the same organisation, has a limit of his own.
    let sam = client(server.addr, SAM).await;
    let result = whoami(&sam).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_limit_stops_the_start_naming_its_key() {
    for (config, says) in [
        (
            "[limits]\nper_user = \"60/mn\"\n",
            "`per_user` in [limits]: `60/mn` is not a rate: `mn` is not a period",
        ),
        (
            "[limits.tools]\nroster_asign_shift = \"10/min\"\n",
            "`tools.roster_asign_shift` in [limits] of the config file names no tool",
        ),
    ] {
        let state = StateDir::new();
        let (config, _) = files(&state, config);
        let output = bounded(
            "the refusal",
            switchboard(&[
                "serve", "--stdio", "--org", "acme", "--user", "alice", "--config", &config,
            ])
            .output(),
        )
        .await
        .expect("the binary runs");
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{stderr}");
    }
}

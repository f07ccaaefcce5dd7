//! `initialize` answers with the configured [`ServerInfo`]: its name and version as
//! `serverInfo`, its instructions as the opening paragraph of `instructions` (the paragraphs
//! an application adds still follow), over stdio (`serve_io_with` over a pipe) and over
//! streamable HTTP ([`HttpConfig::with_server_info`]); without one, `switchboard`.

use serde_json::{Value, json};
use switchboard_mcp::{HttpAuth, HttpConfig, McpServer, ServerInfo};
use switchboard_registry::ToolRegistry;

use crate::{
    common::{admin, bounded, registry},
    http_support::{http, initialize, loopback, message_of, post, start},
    stdio_support::StdioClient,
};

/// The application's own name, version and instructions.
fn rota_service() -> ServerInfo {
    ServerInfo::new("rota-service", "1.4.2").with_instructions("Shift rosters of Acme.")
}

/// The `result` of `initialize`, asked over a pipe of [`serve_io_with`] serving `server`.
async fn initialize_over_stdio(server: McpServer) -> Value {
    let mut client = StdioClient::serve(server);
    let answer = client.request(&initialize()).await;
    client.finish().await;
    answer["result"].clone()
}

/// The `result` of `initialize`, posted to an endpoint configured with `config`.
async fn initialize_over_http(registry: &ToolRegistry, config: HttpConfig) -> Value {
    let server = start(registry, config).await;
    let response = post(&http(), &server.url(), &[], &initialize()).await;
    assert_eq!(response.status(), 200, "{response:?}");
    let text = bounded("the answer", response.text())
        .await
        .expect("a body");
    bounded("stopping the server", server.shutdown())
        .await
        .expect("stops");
    message_of(&text).expect("a JSON-RPC answer")["result"].clone()
}

/// `serverInfo`'s name and version, and the paragraphs of `instructions`.
fn introduced(result: &Value) -> (Value, Vec<String>) {
    let instructions = result["instructions"]
        .as_str()
        .unwrap_or_else(|| panic!("no instructions: {result}"));
    let paragraphs = instructions.split("\n\n").map(str::to_owned).collect();
    let server_info = &result["serverInfo"];
    (
        json!({"name": server_info["name"], "version": server_info["version"]}),
        paragraphs,
    )
}

#[tokio::test]
async fn stdio_initialize_answers_the_configured_name_version_and_instructions() {
    let registry = registry().await;
    let server = McpServer::new(registry.clone(), admin())
        .with_server_info(rota_service())
        .with_instructions("Lazy servers: none.");
    let (server_info, paragraphs) = introduced(&initialize_over_stdio(server).await);
    assert_eq!(
        server_info,
        json!({"name": "rota-service", "version": "1.4.2"})
    );
    assert_eq!(
        paragraphs,
        ["Shift rosters of Acme.", "Lazy servers: none."],
        "the configured paragraph opens, the added one follows"
    );

    let (default_info, default_paragraphs) =
        introduced(&initialize_over_stdio(McpServer::new(registry.clone(), admin())).await);
    assert_eq!(
        default_info,
        json!({"name": "switchboard", "version": env!("CARGO_PKG_VERSION")})
    );
    assert_eq!(default_paragraphs.len(), 1, "{default_paragraphs:?}");
    assert!(
        default_paragraphs[0].contains("audited"),
        "{default_paragraphs:?}"
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn http_initialize_answers_the_configured_name_version_and_instructions() {
    let registry = registry().await;
    let config = HttpConfig::new(loopback(), HttpAuth::Operator(admin()))
        .expect("a loopback configuration")
        .with_server_info(rota_service());
    let (server_info, paragraphs) = introduced(&initialize_over_http(&registry, config).await);
    assert_eq!(
        server_info,
        json!({"name": "rota-service", "version": "1.4.2"})
    );
    assert_eq!(paragraphs, ["Shift rosters of Acme."]);

    let config =
        HttpConfig::new(loopback(), HttpAuth::Operator(admin())).expect("a loopback configuration");
    let (default_info, _) = introduced(&initialize_over_http(&registry, config).await);
    assert_eq!(
        default_info,
        json!({"name": "switchboard", "version": env!("CARGO_PKG_VERSION")})
    );
    registry.shutdown().await;
}

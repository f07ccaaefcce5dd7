//! `switchboard serve --stdio` seen from a real MCP client (rmcp): the test spawns the built
//! binary, speaks MCP over its stdin and stdout, and checks that the process ends by itself once
//! the client closes stdin. Every wait is bounded by `common::LIMIT`; the child is killed on drop if
//! anything goes wrong.

use crate::common::{bounded, catalog_tool_names, exit_of, stdio_client, switchboard};
use std::process::Stdio;

use rmcp::{
    model::{CallToolRequestParams, ErrorCode},
    service::ServiceError,
};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stdio_lists_and_calls_tools_then_exits_when_stdin_closes() {
    let (mut child, client) = crate::common::serve_stdio_client(&[]).await;
    let info = client.peer_info().expect("the server introduced itself");
    let server_name = info.server_info.as_ref().map(|server| server.name.as_str());
    assert_eq!(server_name, Some("switchboard"));

    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let names: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
    // tools/list sorts by name; the catalog by domain, then name.
    let mut catalog = catalog_tool_names();
    catalog.sort();
    assert_eq!(names, catalog, "tools/list serves the catalog's tools");

    let me = bounded(
        "tools/call",
        client.call_tool(CallToolRequestParams::new("core_get_current_user")),
    )
    .await
    .expect("a result");
    assert_ne!(me.is_error, Some(true), "{me:?}");
    let structured = me.structured_content.expect("structuredContent");
    assert_eq!(structured["org_id"], json!("acme"), "{structured}");
    assert_eq!(structured["user_id"], json!("alice"), "{structured}");

    let unknown = bounded(
        "tools/call of an unknown tool",
        client.call_tool(CallToolRequestParams::new("no_such_tool")),
    )
    .await;
    match unknown {
        Err(ServiceError::McpError(error)) => assert_eq!(error.code, ErrorCode::INVALID_PARAMS),
        other => panic!("expected -32602, got {other:?}"),
    }

    // Closing the client closes the child's stdin: the server must end on its own.
    bounded("closing the client", client.cancel())
        .await
        .expect("the client closes");
    let status = exit_of("the server exiting", &mut child).await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_to_start_without_an_organisation_and_a_user() {
    let output = bounded(
        "the refusal",
        switchboard(&["serve", "--stdio", "--role", "admin"])
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(
        output.stdout.is_empty(),
        "stdout is the protocol channel: {output:?}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--org") && stderr.contains("--user"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_navigation_only_offers_the_two_meta_tools_and_the_pages() {
    let (mut child, client) = stdio_client(&[
        "serve",
        "--stdio",
        "--navigation",
        "only",
        "--org",
        "acme",
        "--user",
        "sam",
        "--role",
        "staff",
    ])
    .await;
    let info = client.peer_info().expect("the server introduced itself");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(instructions.contains("navigate('/')"), "{instructions}");

    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let mut names: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["execute_action", "navigate"]);

    let arguments = json!({"url": "/roster"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let page = bounded(
        "navigate",
        client.call_tool(CallToolRequestParams::new("navigate").with_arguments(arguments)),
    )
    .await
    .expect("a result");
    assert_ne!(page.is_error, Some(true), "{page:?}");
    let structured = page.structured_content.expect("structuredContent");
    assert_eq!(structured["route"], json!("/roster"), "{structured}");

    let resources = bounded("resources/list", client.list_resources(None))
        .await
        .expect("resources/list");
    assert!(
        resources
            .resources
            .iter()
            .any(|resource| resource.uri == "switchboard:///roster"),
        "{resources:?}"
    );

    bounded("closing the client", client.cancel())
        .await
        .expect("the client closes");
    let status = exit_of("the server exiting", &mut child).await;
    assert!(status.success(), "{status:?}");
}

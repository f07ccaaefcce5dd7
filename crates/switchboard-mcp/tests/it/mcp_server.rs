//! The MCP server seen from a real rmcp client: over an in-memory duplex pipe and over
//! streamable HTTP on `127.0.0.1` (port 0). Every wait is bounded by `common::LIMIT`, and every
//! server and client started here is stopped before the test ends.

use rmcp::{
    model::{CallToolRequestParams, CallToolResult, ErrorCode, PaginatedRequestParams},
    service::ServiceError,
};
use serde_json::{Value, json};
use switchboard_audit::{AuditQuery, AuditRecord};
use switchboard_core::schema::STANDARD_FORMATS;
use switchboard_mcp::Identity;
use switchboard_registry::ToolRegistry;

use crate::common::{
    Client, admin, bounded, close_http, connect_http, connect_in_memory, disconnect, error_of,
    registry, serve_http_as_admin,
};

async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    bounded(
        "a tools/call",
        client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)),
    )
    .await
}

async fn audit(registry: &ToolRegistry) -> Vec<AuditRecord> {
    bounded("an audit query", registry.audit().query(&AuditQuery::all()))
        .await
        .expect("the audit store answers")
}

fn invalid_params(outcome: Result<CallToolResult, ServiceError>) -> String {
    match outcome {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "error: {error:?}");
            error.message.into_owned()
        }
        other => panic!("expected a -32602 error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_shows_the_permitted_tools_sorted_in_the_mcp_shape() {
    let registry = registry().await;
    let (client, server) = connect_in_memory(&registry, admin()).await;

    let info = client.peer_info().expect("the server introduced itself");
    let server_info = info.server_info.as_ref().expect("server info");
    assert_eq!(server_info.name, "switchboard");
    let tools_capability = info.capabilities.tools.clone().expect("tools capability");
    assert_eq!(tools_capability.list_changed, Some(true));

    let page = bounded("tools/list", client.list_tools(None))
        .await
        .expect("tools/list");
    assert_eq!(page.next_cursor, None, "fewer tools than one page");
    let names: Vec<String> = page
        .tools
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let expected: Vec<String> = registry
        .list()
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, expected, "an admin may call every tool");

    let shifts = serde_json::to_value(
        page.tools
            .iter()
            .find(|tool| tool.name == "roster_list_shifts")
            .expect("roster_list_shifts is listed"),
    )
    .expect("a tool serialises");
    assert!(shifts["inputSchema"]["$schema"].is_string(), "{shifts}");
    assert_eq!(
        shifts["annotations"]["readOnlyHint"],
        json!(true),
        "{shifts}"
    );
    assert_eq!(
        shifts["_meta"]["switchboard/category"],
        json!("read"),
        "{shifts}"
    );

    let bad_cursor = bounded(
        "tools/list with a bad cursor",
        client.list_tools(Some(
            PaginatedRequestParams::default().with_cursor(Some("not-ours".to_owned())),
        )),
    )
    .await;
    invalid_params(bad_cursor.map(|_| CallToolResult::success(Vec::new())));

    disconnect(client, server, registry).await;
}

/// Every `format` keyword in `schema`, at any depth.
fn formats_in(schema: &Value, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(format)) = map.get("format") {
                found.push(format.clone());
            }
            map.values().for_each(|child| formats_in(child, found));
        }
        Value::Array(items) => items.iter().for_each(|child| formats_in(child, found)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_schemas_use_only_the_formats_json_schema_2020_12_defines() {
    let registry = registry().await;
    let (client, server) = connect_in_memory(&registry, admin()).await;
    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let mut found = Vec::new();
    for tool in &tools {
        let tool = serde_json::to_value(tool).expect("a tool serialises");
        formats_in(&tool["inputSchema"], &mut found);
        formats_in(&tool["outputSchema"], &mut found);
    }
    // Strict clients (Ajv, the MCP Inspector) warn about or refuse any other format.
    let unknown: Vec<&String> = found
        .iter()
        .filter(|format| !STANDARD_FORMATS.contains(&format.as_str()))
        .collect();
    assert!(unknown.is_empty(), "non-standard formats: {unknown:?}");
    assert!(found.iter().any(|format| format == "date"), "{found:?}");
    // Nullable fields are `anyOf` branches of one type each: several clients read `type` as a
    // single string, and the MCP Inspector warns about every `type` array.
    let mut type_arrays = Vec::new();
    let mut nullable_branches = 0;
    for tool in &tools {
        let tool = serde_json::to_value(tool).expect("a tool serialises");
        for key in ["inputSchema", "outputSchema"] {
            let path = format!("{}/{key}", tool["name"]);
            find_types(&tool[key], &path, &mut type_arrays, &mut nullable_branches);
        }
    }
    assert!(type_arrays.is_empty(), "`type` arrays at {type_arrays:?}");
    assert!(
        nullable_branches > 0,
        "the roster tools have nullable fields"
    );
    disconnect(client, server, registry).await;
}

/// The paths of every `type` array in `schema`, and how many `{"type": "null"}` schemas it has.
fn find_types(schema: &Value, path: &str, arrays: &mut Vec<String>, nulls: &mut usize) {
    match schema {
        Value::Object(map) => {
            match map.get("type") {
                Some(Value::Array(_)) => arrays.push(path.to_owned()),
                Some(Value::String(name)) if name == "null" => *nulls += 1,
                _ => {}
            }
            for (key, child) in map {
                find_types(child, &format!("{path}/{key}"), arrays, nulls);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                find_types(child, &format!("{path}/{index}"), arrays, nulls);
            }
        }
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staff_member_sees_only_the_tools_staff_may_call() {
    let registry = registry().await;
    let staff = Identity::agent("acme", "sam").with_role("staff");
    let (client, server) = connect_in_memory(&registry, staff).await;
    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert!(names.contains(&"roster_list_shifts"), "{names:?}");
    assert!(!names.contains(&"roster_clear_roster"), "{names:?}");
    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_answer_results_tool_errors_and_protocol_errors_each_audited_once() {
    let registry = registry().await;
    let (client, server) = connect_in_memory(&registry, admin()).await;
    let session_id = server.service().minted_session_id().to_owned();

    let ok = call(&client, "core_get_current_user", json!({}))
        .await
        .expect("a result");
    assert_ne!(ok.is_error, Some(true), "{ok:?}");
    let structured = ok.structured_content.clone().expect("structuredContent");
    assert_eq!(structured["org_id"], json!("acme"), "{structured}");
    let text = ok
        .content
        .first()
        .and_then(|block| block.as_text())
        .expect("a text block");
    let from_text: Value = serde_json::from_str(&text.text).expect("the text is the JSON");
    assert_eq!(from_text, structured);

    let refused = call(
        &client,
        "core_get_current_user",
        json!({"org_id": "globex"}),
    )
    .await
    .expect("a tool error, not a protocol error");
    let error = error_of(&refused);
    assert_eq!(error["kind"], json!("org_id_not_allowed"), "{error}");

    let message = invalid_params(call(&client, "no_such_tool", json!({})).await);
    assert!(message.contains("no_such_tool"), "{message}");

    let records = audit(&registry).await;
    assert_eq!(records.len(), 3, "one record per call: {records:#?}");
    for record in &records {
        let recorded = record.session_id.as_ref().map(|id| id.as_str());
        assert_eq!(recorded, Some(session_id.as_str()), "{record:?}");
    }

    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_may_not_execute_but_a_configured_human_may() {
    let registry = registry().await;
    let params = json!({"shift_id": "no-such-shift", "user_id": "sam"});

    let (client, server) = connect_in_memory(&registry, admin()).await;
    let refused = call(&client, "roster_assign_shift", params.clone())
        .await
        .expect("a tool error");
    let error = error_of(&refused);
    assert_eq!(error["kind"], json!("category_denied"), "{error}");
    bounded("closing the client", client.cancel())
        .await
        .expect("closes");
    bounded("the server ending", server.waiting())
        .await
        .expect("ends");

    let human = admin().with_initiator(switchboard_core::Initiator::Human);
    let (client, server) = connect_in_memory(&registry, human).await;
    let answer = call(&client, "roster_assign_shift", params)
        .await
        .expect("a result or a tool error");
    let kind = answer
        .meta
        .as_ref()
        .and_then(|meta| meta.get(switchboard_mcp::ERROR_META_KEY))
        .and_then(|error| error.get("kind").cloned());
    assert_ne!(
        kind,
        Some(json!("category_denied")),
        "a human passes the category check"
    );
    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_calls_are_audited_under_each_client_session() {
    let registry = registry().await;
    let server = serve_http_as_admin(&registry).await;
    assert!(server.local_addr().ip().is_loopback());

    let mut clients = Vec::new();
    for _ in 0..2 {
        clients.push(connect_http(&server, ()).await);
    }
    for client in &clients {
        for _ in 0..2 {
            let ok = call(client, "core_get_current_user", json!({}))
                .await
                .expect("a result");
            assert_ne!(ok.is_error, Some(true), "{ok:?}");
        }
        invalid_params(call(client, "no_such_tool", json!({})).await);
    }

    let records = audit(&registry).await;
    assert_eq!(records.len(), 6, "one record per call: {records:#?}");
    let mut sessions: Vec<&str> = records
        .iter()
        .map(|record| record.session_id.as_ref().map_or("", |id| id.as_str()))
        .collect();
    sessions.sort_unstable();
    sessions.dedup();
    assert_eq!(sessions.len(), 2, "one session per client: {sessions:?}");
    assert!(sessions.iter().all(|session| !session.is_empty()));

    close_http(clients, server, registry).await;
}

//! A `tools/call` refused by the MCP layer itself, before the navigator or the registry is
//! asked, leaves one audit record, as their refusals do: `execute_action` with a `page_state`
//! that does not open or with `params` that are not an object (the exact frames of the
//! report, over stdio), `navigate` without its `url`, a call whose `_meta` names a malformed
//! thread, and a plain tool hidden by `--navigation only`.

use serde_json::{Value, json};
use switchboard_audit::{AuditQuery, AuditRecord};
use switchboard_core::Initiator;
use switchboard_mcp::{Identity, McpServer, NavigationMode, StateKey, THREAD_META_KEY};
use switchboard_navigation::Navigator;
use switchboard_registry::ToolRegistry;

use crate::{
    common::{bounded, registry},
    stdio_support::StdioClient,
};

/// The exact frame of the report: a made-up `page_state`.
const MADE_UP_PAGE_STATE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_action","arguments":{"url":"/roster/shifts/acme-2026-11-28-am","action":"assign","params":{"user_id":"sam"},"page_state":"x"}}}"#;

/// The exact frame of the report: `params` that are not an object, and no `page_state`.
const PARAMS_NOT_AN_OBJECT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_action","arguments":{"url":"/roster/shifts/acme-2026-11-28-am","action":"assign","params":1}}}"#;

/// mark, acme's manager, at the client as a person.
fn mark() -> Identity {
    Identity::agent("acme", "mark")
        .with_role("manager")
        .with_initiator(Initiator::Human)
}

/// A stdio session with a server offering navigation in `mode` to [`mark`].
async fn connect(registry: &ToolRegistry, mode: NavigationMode) -> StdioClient {
    let navigator = Navigator::new(registry.clone()).expect("the sample pages are valid");
    let key = StateKey::from_bytes(vec![7; 32]).expect("a valid key");
    let server = McpServer::new(registry.clone(), mark())
        .with_state_key(key)
        .with_navigation(navigator, mode);
    StdioClient::initialized(server).await
}

async fn records(registry: &ToolRegistry) -> Vec<AuditRecord> {
    bounded("an audit query", registry.audit().query(&AuditQuery::all()))
        .await
        .expect("the audit store answers")
}

/// Sends `frame` and returns its answer and the audit records it added.
async fn refused(
    client: &mut StdioClient,
    registry: &ToolRegistry,
    frame: &Value,
) -> (Value, Vec<AuditRecord>) {
    let before: Vec<_> = records(registry)
        .await
        .into_iter()
        .map(|record| record.id)
        .collect();
    let answer = client.request(frame).await;
    let added = records(registry)
        .await
        .into_iter()
        .filter(|record| !before.contains(&record.id))
        .collect();
    (answer, added)
}

/// The error kind of a refused call's result (`isError`, the JSON in `_meta`).
fn tool_error_kind(answer: &Value) -> &str {
    let result = &answer["result"];
    assert_eq!(result["isError"], json!(true), "{answer}");
    result["_meta"][switchboard_mcp::ERROR_META_KEY]["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("no error kind: {answer}"))
}

/// The one record a refusal added: its tool and its outcome.
fn one_record(added: &[AuditRecord], what: &str) -> (String, String) {
    assert_eq!(added.len(), 1, "{what}: one record, got {added:#?}");
    let record = &added[0];
    assert_eq!(
        record.user_id.as_ref().map(|user| user.as_str()),
        Some("mark"),
        "{what}: {record:?}"
    );
    (record.tool.to_string(), record.outcome.as_str().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reported_execute_action_frames_are_refused_and_each_audited_once() {
    let registry = registry().await;
    let mut client = connect(&registry, NavigationMode::Beside).await;

    let frame: Value = serde_json::from_str(MADE_UP_PAGE_STATE).expect("JSON");
    let (answer, added) = refused(&mut client, &registry, &frame).await;
    assert_eq!(tool_error_kind(&answer), "invalid_page_state");
    assert_eq!(
        one_record(&added, "a made-up page_state"),
        ("assign".to_owned(), "gate_refused".to_owned()),
        "recorded under the action, as the navigator records its refusals"
    );

    let frame: Value = serde_json::from_str(PARAMS_NOT_AN_OBJECT).expect("JSON");
    let (answer, added) = refused(&mut client, &registry, &frame).await;
    assert_eq!(tool_error_kind(&answer), "invalid_input");
    assert_eq!(
        one_record(&added, "params that are not an object"),
        ("execute_action".to_owned(), "invalid_input".to_owned())
    );

    client.finish().await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigate_without_a_url_and_a_malformed_thread_are_each_audited_once() {
    let registry = registry().await;
    let mut client = connect(&registry, NavigationMode::Beside).await;

    let frame = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "navigate", "arguments": {"path": "/"}}
    });
    let (answer, added) = refused(&mut client, &registry, &frame).await;
    assert_eq!(tool_error_kind(&answer), "invalid_input");
    assert_eq!(
        one_record(&added, "navigate without a url"),
        ("navigate".to_owned(), "invalid_input".to_owned())
    );

    for tool in ["execute_action", "roster_list_shifts"] {
        let frame = json!({
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {
                "name": tool,
                "arguments": {"url": "/roster", "action": "clear_week"},
                "_meta": {THREAD_META_KEY: "not an id!"}
            }
        });
        let (answer, added) = refused(&mut client, &registry, &frame).await;
        assert_eq!(answer["error"]["code"], json!(-32602), "{tool}: {answer}");
        assert_eq!(
            one_record(&added, "a malformed thread"),
            (tool.to_owned(), "invalid_input".to_owned())
        );
    }

    client.finish().await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_tool_hidden_by_navigation_only_is_refused_and_audited_once() {
    let registry = registry().await;
    let mut client = connect(&registry, NavigationMode::Only).await;

    let frame = json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "roster_list_shifts", "arguments": {}}
    });
    let (answer, added) = refused(&mut client, &registry, &frame).await;
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
    assert_eq!(
        one_record(&added, "a hidden plain tool"),
        ("roster_list_shifts".to_owned(), "tool_not_found".to_owned())
    );

    client.finish().await;
    registry.shutdown().await;
}

//! `serve --disable SELECTOR` / `--enable SELECTOR` and the config file's
//! `[serve] disabled_tools`, seen from a real MCP client over stdio: the tools they switch off
//! are not listed and are refused as unknown, each is audited as the operator's, and a selector
//! naming no tool stops the start with a usage error naming it. Every wait is bounded by
//! `common::LIMIT`.

use rmcp::{
    model::{CallToolRequestParams, ErrorCode},
    service::ServiceError,
};

use crate::common::{
    StateDir, bounded, catalog_tool_names, catalog_tool_names_of, exit_of, switchboard,
};

const NOTICES: [&str; 2] = ["roster_list_notices", "roster_post_notice"];

/// The tools `serve --stdio` with `extra` flags lists, and the answer to a call of
/// `roster_list_notices`: `Ok(())` if it ran, else the JSON-RPC error code.
async fn served_tools(extra: &[&str]) -> (Vec<String>, Result<(), ErrorCode>) {
    let (mut child, client) = crate::common::serve_stdio_client(extra).await;
    let tools = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let names = tools.iter().map(|tool| tool.name.to_string()).collect();
    let called = bounded(
        "tools/call",
        client.call_tool(CallToolRequestParams::new("roster_list_notices")),
    )
    .await;
    let called = match called {
        Ok(result) => {
            assert_ne!(result.is_error, Some(true), "{result:?}");
            Ok(())
        }
        Err(ServiceError::McpError(error)) => Err(error.code),
        Err(other) => panic!("expected a result or an MCP error, got {other:?}"),
    };
    bounded("closing the client", client.cancel())
        .await
        .expect("the client closes");
    let status = exit_of("the server exiting", &mut child).await;
    assert!(status.success(), "{status:?}");
    (names, called)
}

/// The catalog's tools but `left_out`, sorted as `tools/list` sorts them.
fn catalog_without(left_out: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = catalog_tool_names()
        .into_iter()
        .filter(|name| !left_out.contains(&name.as_str()))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_disable_tag_hides_the_tagged_tools_and_refuses_their_calls() {
    let (names, called) = served_tools(&["--disable", "tag:notices"]).await;
    assert_eq!(names, catalog_without(&NOTICES));
    assert_eq!(called, Err(ErrorCode::INVALID_PARAMS), "refused as unknown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_enable_turns_back_on_what_the_config_file_disabled() {
    let state = StateDir::new();
    std::fs::create_dir_all(&state.0).expect("the state directory");
    let config = state.0.join("switchboard.toml");
    std::fs::write(&config, "[serve]\ndisabled_tools = [\"domain:roster\"]\n")
        .expect("config written");
    let config = config.to_str().expect("a UTF-8 temp path");
    let roster = catalog_tool_names_of("roster");
    assert!(roster.len() > NOTICES.len(), "{roster:?}");

    let (names, called) = served_tools(&["--config", config]).await;
    let roster_names: Vec<&str> = roster.iter().map(String::as_str).collect();
    assert_eq!(names, catalog_without(&roster_names));
    assert_eq!(called, Err(ErrorCode::INVALID_PARAMS));

    let (names, called) = served_tools(&["--config", config, "--enable", "tag:notices"]).await;
    let still_off: Vec<&str> = roster_names
        .iter()
        .copied()
        .filter(|name| !NOTICES.contains(name))
        .collect();
    assert_eq!(names, catalog_without(&still_off));
    assert_eq!(called, Ok(()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switches_of_a_start_are_audited_as_the_operators() {
    let state = StateDir::new();
    std::fs::create_dir_all(&state.0).expect("the state directory");
    let config = state.0.join("switchboard.toml");
    std::fs::write(&config, "[serve]\ndisabled_tools = [\"domain:roster\"]\n")
        .expect("config written");
    let audit = format!("sqlite:{}", state.0.join("audit.db").display());
    let config = config.to_str().expect("a UTF-8 temp path");
    let (_, called) = served_tools(&[
        "--config",
        config,
        "--enable",
        "tag:notices",
        "--audit",
        &audit,
    ])
    .await;
    assert_eq!(called, Ok(()));

    let output = bounded(
        "switchboard audit",
        switchboard(&[
            "audit",
            "--audit",
            &audit,
            "--tool",
            "registry.switch",
            "--json",
        ])
        .output(),
    )
    .await
    .expect("the binary runs");
    assert!(output.status.success(), "{output:?}");
    let records: Vec<serde_json::Value> =
        serde_json::from_slice(&output.stdout).expect("a JSON array");
    let [enabled, disabled] = records.as_slice() else {
        panic!("one record per switch: {records:#?}");
    };
    let roster = catalog_tool_names_of("roster");
    assert_eq!(
        disabled["switch"],
        serde_json::json!({"action": "disable", "selector": "domain:roster", "changed": roster})
    );
    assert_eq!(disabled["session_id"], "serve-config", "{disabled}");
    assert_eq!(
        enabled["switch"],
        serde_json::json!({"action": "enable", "selector": "tag:notices", "changed": NOTICES})
    );
    assert_eq!(enabled["session_id"], "serve-flags", "{enabled}");
    for record in records.iter() {
        assert_eq!(record["user_id"], "operator", "{record}");
        assert_eq!(record["initiator"], "human", "{record}");
        assert_eq!(record["org_id"], serde_json::Value::Null, "{record}");
        assert_eq!(record["outcome"], "ok", "{record}");
        assert!(
            record["correlation_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("serve-start-")),
            "{record}"
        );
    }
    assert_eq!(enabled["correlation_id"], disabled["correlation_id"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_to_start_with_a_selector_naming_no_tool() {
    let output = bounded(
        "the refusal",
        switchboard(&[
            "serve",
            "--stdio",
            "--org",
            "acme",
            "--user",
            "alice",
            "--disable",
            "tag:notice",
        ])
        .output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "no tool matches `tag:notice`; did you mean `tag:notices`? (given with --disable)"
        ),
        "{stderr}"
    );

    let output = bounded(
        "the refusal",
        switchboard(&[
            "serve",
            "--stdio",
            "--org",
            "acme",
            "--user",
            "alice",
            "--disable",
            "notices",
        ])
        .output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--disable") && stderr.contains("notices"),
        "{stderr}"
    );
}

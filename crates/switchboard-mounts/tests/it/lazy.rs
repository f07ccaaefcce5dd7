//! A lazy server in process: PyPI's time server mounted with `lazy = true` is unlisted, the
//! meta-tools reach it through the registry with the caller's own context (two audit records
//! with one correlation id), and `mcp_connect` lists it only in a session that opened a list
//! of its own.

use serde_json::{Value, json};
use switchboard_audit::AuditQuery;
use switchboard_core::{ErrorKind, Initiator, Role};
use switchboard_registry::Exposure;

use crate::servers::{caller, install_dir, mounted};

fn text_of(output: &Value) -> String {
    output["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazy_server_is_reached_through_the_meta_tools_with_the_callers_context() {
    let server = install_dir().join("venv/bin/mcp-server-time");
    assert!(
        server.exists(),
        "{} is missing: `cargo xtask test --prepare` installs it",
        server.display()
    );
    // The same server twice: lazy as `time`, listed as `clock`.
    let command = server.display().to_string();
    let text = format!(
        "[[server]]\nid = \"time\"\ncommand = {command:?}\nstart_timeout = \"60s\"\nlazy = true\n\
         description = \"Time and time zones\"\n\n\
         [[server]]\nid = \"clock\"\ncommand = {command:?}\nstart_timeout = \"60s\"\n",
    );
    let (registry, mounts) = mounted(&text).await;
    let admin = [Role::from("admin")];
    assert_eq!(
        registry.exposure("time_get_current_time"),
        Some(Exposure::Unlisted)
    );
    let listed: Vec<String> = registry
        .list_permitted(&admin)
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert!(listed.contains(&"mcp_call".to_owned()), "{listed:?}");
    assert!(
        !listed.iter().any(|name| name.starts_with("time_")),
        "{listed:?}"
    );
    let instructions = mounts.instructions().await.expect("a lazy server started");
    assert!(instructions.contains("\n- time: "), "{instructions}");

    let found = registry
        .invoke(
            "mcp_search",
            json!({"query": "current TIME"}),
            &caller(Initiator::Agent, false),
        )
        .await
        .expect("a search");
    let found = text_of(&found);
    assert!(found.contains("time/get_current_time: "), "{found}");
    assert!(
        found.contains("(listed: call `clock_get_current_time` directly)"),
        "{found}"
    );
    assert!(!instructions.contains("clock"), "{instructions}");

    let context = caller(Initiator::Agent, false);
    let now = registry
        .invoke(
            "mcp_call",
            json!({"server": "time", "tool": "get_current_time",
                   "arguments": {"timezone": "UTC"}}),
            &context,
        )
        .await
        .expect("the time in UTC");
    assert!(now.to_string().contains("UTC"), "{now}");
    let records = registry
        .audit()
        .query(&AuditQuery {
            correlation_id: context.correlation_id.clone(),
            ..AuditQuery::all()
        })
        .await
        .expect("the audit store answers");
    let mut tools: Vec<&str> = records.iter().map(|record| &*record.tool).collect();
    tools.sort_unstable();
    assert_eq!(tools, ["mcp_call", "time_get_current_time"], "{records:?}");
    assert!(
        records
            .iter()
            .all(|record| record.session_id == context.session_id
                && record.initiator == Initiator::Agent),
        "{records:?}"
    );

    // The target's refusals are the caller's: an unknown tool says what it may mean; a
    // native tool cannot be called through mcp_call.
    let missed = registry
        .invoke(
            "mcp_call",
            json!({"server": "time", "tool": "get_current_tim", "arguments": {}}),
            &context,
        )
        .await
        .expect_err("no such tool");
    assert_eq!(missed.kind(), ErrorKind::ToolFailed, "{missed}");
    assert!(
        missed
            .to_string()
            .contains("did you mean `get_current_time`"),
        "{missed}"
    );
    let native = registry
        .invoke(
            "mcp_call",
            json!({"server": "core", "tool": "get_current_user", "arguments": {}}),
            &context,
        )
        .await
        .expect_err("only mounted servers");
    assert!(
        native.to_string().contains("no mounted server `core`"),
        "{native}"
    );

    // An in-process caller lists the server's tools once it opened a session list.
    let session = context.session_id.clone().expect("a session");
    let refused = registry
        .invoke("mcp_connect", json!({"server": "time"}), &context)
        .await
        .expect_err("no session list");
    assert!(refused.to_string().contains("mcp_call"), "{refused}");
    let open = registry.open_session(session.as_str());
    registry
        .invoke("mcp_connect", json!({"server": "time"}), &context)
        .await
        .expect("connects");
    assert!(
        registry
            .list_permitted_in(&admin, open.session())
            .iter()
            .any(|tool| tool.name == "time_get_current_time")
    );

    mounts.close().await;
    assert!(registry.find("mcp_call").is_none(), "unregistered on close");
    registry.shutdown().await;
}

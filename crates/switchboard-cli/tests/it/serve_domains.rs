//! `switchboard serve --domains`, seen from a real MCP client over stdio: the node serves the
//! named linked domains and the core domain, and leaves every other one out with its tools,
//! intent prompts, pages and the exported workflows that need it; the start does not fail on
//! what went with a domain. A name that is not a linked domain stops the start with exit code 2,
//! naming the linked ones. Every wait is bounded by `common::LIMIT`.

use rmcp::{
    RoleClient, ServiceError,
    model::{CallToolRequestParams, CallToolResult, ErrorCode},
    service::RunningService,
};
use serde_json::{Value, json};

use crate::common::{bounded, catalog_tool_names_of, exit_of, switchboard};

/// A `serve --stdio` child acting as acme's admin with `extra` flags, and its client.
struct Served {
    child: tokio::process::Child,
    client: RunningService<RoleClient, ()>,
}

impl Served {
    async fn start(extra: &[&str]) -> Self {
        let (child, client) = crate::common::serve_stdio_client(extra).await;
        Self { child, client }
    }

    /// The names tools/list gives, sorted.
    async fn tool_names(&self) -> Vec<String> {
        let tools = bounded("tools/list", self.client.list_all_tools())
            .await
            .expect("tools/list");
        tools.iter().map(|tool| tool.name.to_string()).collect()
    }

    /// The names prompts/list gives.
    async fn prompt_names(&self) -> Vec<String> {
        let prompts = bounded("prompts/list", self.client.list_all_prompts())
            .await
            .expect("prompts/list");
        prompts.into_iter().map(|prompt| prompt.name).collect()
    }

    /// The result of calling `tool` with `arguments`, or the JSON-RPC error.
    async fn call(&self, tool: &str, arguments: Value) -> Result<CallToolResult, rmcp::ErrorData> {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object");
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        match bounded("tools/call", self.client.call_tool(params)).await {
            Ok(result) => Ok(result),
            Err(ServiceError::McpError(error)) => Err(error),
            Err(other) => panic!("a result or an MCP error, not {other:?}"),
        }
    }

    async fn stop(mut self) {
        bounded("closing the client", self.client.cancel())
            .await
            .expect("the client closes");
        let status = exit_of("the server exiting", &mut self.child).await;
        assert!(status.success(), "{status:?}");
    }
}

/// The structured content of a successful result.
fn structured(result: &CallToolResult) -> &Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

/// The error kind of a result with `isError`.
fn error_kind(result: &CallToolResult) -> &Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result
        .meta
        .as_ref()
        .and_then(|meta| meta.get("switchboard/error"))
        .map_or(&Value::Null, |error| &error["kind"])
}

/// The tools of the named domains, sorted.
fn tools_of(domains: &[&str]) -> Vec<String> {
    let mut tools: Vec<String> = domains
        .iter()
        .flat_map(|domain| catalog_tool_names_of(domain))
        .collect();
    tools.sort();
    tools
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_the_roster_lists_the_roster_core_and_workflow_tools_only() {
    let served = Served::start(&["--domains", "roster"]).await;

    let names = served.tool_names().await;
    let linked: Vec<String> = names
        .iter()
        .filter(|name| !["roster_swap_shifts", "workflows_answer"].contains(&name.as_str()))
        .cloned()
        .collect();
    let shifts = served
        .call(
            "roster_list_shifts",
            json!({"from": "2026-11-23", "to": "2026-11-29"}),
        )
        .await
        .expect("a roster tool is served");
    served.stop().await;

    assert_eq!(linked, tools_of(&["core", "roster"]), "{names:?}");
    assert!(
        names.contains(&"roster_swap_shifts".to_owned()),
        "{names:?}"
    );
    assert!(structured(&shifts)["shifts"].is_array(), "{shifts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_left_out_domain_s_tools_prompts_pages_and_workflows_go_with_it() {
    let served = Served::start(&[
        "--domains",
        "core",
        "--navigation",
        "beside",
        "--intent-prompts",
    ])
    .await;

    let names = served.tool_names().await;
    let prompts = served.prompt_names().await;
    let roster = served
        .call(
            "roster_list_shifts",
            json!({"from": "2026-11-23", "to": "2026-11-29"}),
        )
        .await
        .expect_err("the roster is left out");
    let me = served
        .call("navigate", json!({"url": "/me"}))
        .await
        .expect("the core domain's page is served");
    let roster_page = served
        .call("navigate", json!({"url": "/roster"}))
        .await
        .expect("a navigation answer");
    served.stop().await;

    let served_tools: Vec<&String> = names
        .iter()
        .filter(|name| !["navigate", "execute_action", "workflows_answer"].contains(&name.as_str()))
        .collect();
    assert_eq!(
        served_tools,
        tools_of(&["core"]).iter().collect::<Vec<_>>(),
        "only the core tools, and no roster workflow: {names:?}"
    );
    assert_eq!(roster.code, ErrorCode::INVALID_PARAMS, "{roster:?}");
    assert_eq!(
        roster.data.as_ref().map(|data| &data["kind"]),
        Some(&json!("tool_not_found")),
        "{roster:?}"
    );
    assert!(
        prompts.iter().any(|name| name.starts_with("intent_core_")),
        "{prompts:?}"
    );
    assert!(
        !prompts.iter().any(|name| name.contains("roster")),
        "{prompts:?}"
    );
    assert!(structured(&me).to_string().contains("alice"), "{me:?}");
    assert_eq!(error_kind(&roster_page), &json!("no_such_page"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_domain_stays_what_conformance_makes_it() {
    let served = Served::start(&["--domains", "core", "--conformance"]).await;

    let names = served.tool_names().await;
    served.stop().await;

    assert!(
        names.iter().any(|name| name.starts_with("test_")),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|name| name.starts_with("roster_")),
        "{names:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_domain_stops_the_start_with_the_linked_ones() {
    let output = bounded(
        "the refusal",
        switchboard(&[
            "serve",
            "--stdio",
            "--org",
            "acme",
            "--user",
            "alice",
            "--domains",
            "core,rostr",
        ])
        .output(),
    )
    .await
    .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);

    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`rostr`"), "{stderr}");
    assert!(stderr.contains("did you mean `roster`?"), "{stderr}");
    assert!(
        stderr.contains("The linked domains: core, roster."),
        "{stderr}"
    );
}

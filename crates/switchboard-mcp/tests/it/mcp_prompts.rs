//! Prompts seen from a real rmcp client: the conformance domain's reference prompts listed,
//! rendered with their arguments, refused as the spec says (`-32602` for an unknown prompt or
//! a missing argument), and completed, over a 2025-11-25 session and over 2026-07-28.

use rmcp::{
    ClientLifecycleMode, ClientServiceExt as _,
    model::{ErrorCode, GetPromptRequestParams, GetPromptResult, ProtocolVersion},
    service::ServiceError,
};
use serde_json::{Map, Value, json};
use switchboard_mcp::McpServer;

use crate::common::{Client, admin, bounded, connect_in_memory, disconnect};

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments are an object, not {other}"),
    }
}

async fn get(
    client: &Client,
    name: &str,
    args: Option<Value>,
) -> Result<GetPromptResult, ServiceError> {
    let mut params = GetPromptRequestParams::new(name);
    if let Some(args) = args {
        params = params.with_arguments(arguments(args));
    }
    bounded("prompts/get", client.get_prompt(params)).await
}

fn refused(answer: Result<GetPromptResult, ServiceError>) -> (ErrorCode, String, Value) {
    match answer {
        Err(ServiceError::McpError(error)) => (
            error.code,
            error.message.to_string(),
            error.data.unwrap_or(Value::Null),
        ),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

async fn lists_gets_refuses_and_completes(client: &Client) {
    let listed = bounded("prompts/list", client.list_all_prompts())
        .await
        .expect("listed");
    let with_arguments = listed
        .iter()
        .find(|prompt| prompt.name == "test_prompt_with_arguments")
        .unwrap_or_else(|| panic!("listed: {listed:?}"));
    let argument_names: Vec<_> = with_arguments
        .arguments
        .iter()
        .flatten()
        .map(|argument| (argument.name.as_str(), argument.required))
        .collect();
    assert_eq!(argument_names, [("arg1", Some(true)), ("arg2", Some(true))]);
    for name in [
        "test_simple_prompt",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
    ] {
        assert!(
            listed.iter().any(|prompt| prompt.name == name),
            "{name}: {listed:?}"
        );
    }

    let rendered = get(
        client,
        "test_prompt_with_arguments",
        Some(json!({"arg1": "hello", "arg2": "world"})),
    )
    .await
    .expect("rendered");
    assert_eq!(rendered.messages.len(), 1);
    assert_eq!(
        serde_json::to_value(&rendered.messages[0]).expect("serialises"),
        json!({"role": "user", "content": {
            "type": "text",
            "text": "Prompt with arguments: arg1='hello', arg2='world'"
        }})
    );
    let image = get(client, "test_prompt_with_image", None)
        .await
        .expect("rendered");
    assert_eq!(
        serde_json::to_value(&image.messages[0].content).expect("serialises")["type"],
        "image"
    );

    let (code, message, data) = refused(
        get(
            client,
            "test_prompt_with_arguments",
            Some(json!({"arg1": "hello"})),
        )
        .await,
    );
    assert_eq!(code, ErrorCode::INVALID_PARAMS);
    assert!(message.contains("`arg2`"), "{message}");
    assert_eq!(data, json!({"kind": "missing_argument"}));
    let (code, message, data) = refused(get(client, "test_no_such_prompt", None).await);
    assert_eq!(code, ErrorCode::INVALID_PARAMS);
    assert!(message.contains("`test_no_such_prompt`"), "{message}");
    assert_eq!(data, json!({"kind": "prompt_not_found"}));

    let completed = bounded(
        "completion/complete",
        client.complete_prompt_argument("test_prompt_with_arguments", "arg1", "pa", None),
    )
    .await
    .expect("completed");
    assert_eq!(completed.values, ["paris", "park", "party"]);
    let nothing = bounded(
        "completion/complete",
        client.complete_resource_argument("test://template/{id}/data", "id", "1", None),
    )
    .await
    .expect("completed");
    assert!(nothing.values.is_empty(), "{nothing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_client_lists_gets_and_completes_prompts() {
    let registry = crate::common::registry().await;
    let (client, server) = connect_in_memory(&registry, admin()).await;
    let capabilities = &client.peer_info().expect("initialized").capabilities;
    assert!(capabilities.prompts.is_some() && capabilities.completions.is_some());
    lists_gets_refuses_and_completes(&client).await;
    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_client_lists_gets_and_completes_prompts() {
    let registry = crate::common::registry().await;
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let server = tokio::spawn(rmcp::ServiceExt::serve(
        McpServer::new(registry.clone(), admin()),
        server_io,
    ));
    let client = bounded(
        "server/discover",
        ().serve_with_lifecycle(client_io, lifecycle),
    )
    .await
    .expect("the client connects");
    lists_gets_refuses_and_completes(&client).await;
    let server = bounded("the server starting", server)
        .await
        .expect("the server task")
        .expect("the server accepts");
    disconnect(client, server, registry).await;
}

//! Navigation over MCP, seen from a real rmcp client: the `navigate` and `execute_action`
//! meta-tools, their `page_state`, the `--navigation only` tool list, and the pages as
//! resources.
//!
//! The seeded roster week (Monday 2026-11-23) has open shifts: Tuesday's evening shift
//! `acme-2026-11-24-pm` is one. `sam` is staff in acme.

use rmcp::{
    model::{
        CallToolRequestParams, CallToolResult, ContentBlock, ErrorCode, ReadResourceRequestParams,
        ResourceContents,
    },
    service::ServiceError,
};
use serde_json::{Value, json};
use switchboard_core::Initiator;
use switchboard_mcp::{Identity, McpServer, NavigationMode, StateKey};
use switchboard_navigation::Navigator;
use switchboard_registry::ToolRegistry;

use crate::common::{Client, Server, bounded, close, disconnect, error_of, registry};

const OPEN_SHIFT: &str = "/roster/shifts/acme-2026-11-24-pm";

/// sam, staff of acme, at the client as a person: a claim runs when asked.
fn sam() -> Identity {
    Identity::agent("acme", "sam")
        .with_role("staff")
        .with_initiator(Initiator::Human)
}

/// A client connected in memory to a server offering navigation in `mode`.
async fn connect(
    registry: &ToolRegistry,
    identity: Identity,
    mode: NavigationMode,
) -> (Client, Server) {
    let navigator = Navigator::new(registry.clone()).expect("the sample pages are valid");
    let key = StateKey::from_bytes(vec![42; 32]).expect("a valid key");
    let server = McpServer::new(registry.clone(), identity)
        .with_state_key(key)
        .with_navigation(navigator, mode);
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let handshakes = Box::pin(async {
        tokio::join!(
            rmcp::ServiceExt::serve(server, server_io),
            rmcp::ServiceExt::serve((), client_io)
        )
    });
    let (server, client) = bounded("the handshake", handshakes).await;
    (
        client.expect("the client connects"),
        server.expect("the server accepts"),
    )
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    bounded(
        "a tools/call",
        client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)),
    )
    .await
    .expect("a tool result")
}

fn structured(result: &CallToolResult) -> &Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("structuredContent: {result:?}"))
}

fn text(result: &CallToolResult) -> &str {
    result
        .content
        .iter()
        .find_map(|block| block.as_text())
        .map(|text| text.text.as_str())
        .unwrap_or_else(|| panic!("a text block: {result:?}"))
}

fn action_names(page: &Value) -> Vec<&str> {
    page["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|action| action["name"].as_str())
        .collect()
}

fn page_state(page: &Value) -> String {
    page["page_state"]
        .as_str()
        .unwrap_or_else(|| panic!("a page_state: {page}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigate_home_lists_the_pages_and_the_server_says_how_to_navigate() {
    let registry = registry().await;
    let (client, server) = connect(&registry, sam(), NavigationMode::Beside).await;

    let info = client.peer_info().expect("the server introduced itself");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(instructions.contains("navigate('/')"), "{instructions}");
    assert!(info.capabilities.resources.is_some(), "resources on");

    let tools = bounded("tools/list", client.list_tools(None))
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools.tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert!(
        names.contains(&"navigate") && names.contains(&"execute_action"),
        "{names:?}"
    );
    assert!(
        names.contains(&"roster_claim_shift"),
        "beside the plain tools: {names:?}"
    );

    let home = call(&client, "navigate", json!({"url": "/"})).await;
    let page = structured(&home);
    assert_eq!(page["route"], "/");
    assert!(page["page_state"].is_string(), "{page}");
    let markdown = text(&home);
    assert!(markdown.starts_with("# Home\n"), "{markdown}");
    for link in ["(/me)", "(/roster)"] {
        assert!(markdown.contains(link), "{link} in {markdown}");
    }
    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claiming_an_open_shift_through_its_page_answers_the_next_page_and_a_link() {
    let registry = registry().await;
    let (client, server) = connect(&registry, sam(), NavigationMode::Only).await;

    let shown = call(&client, "navigate", json!({"url": OPEN_SHIFT})).await;
    let page = structured(&shown);
    assert_eq!(page["route"], "/roster/shifts/{shift_id}");
    assert_eq!(action_names(page), ["claim"]);
    assert!(text(&shown).contains("## Available actions"));

    let claimed = call(
        &client,
        "execute_action",
        json!({"url": OPEN_SHIFT, "action": "claim", "page_state": page_state(page)}),
    )
    .await;
    let outcome = structured(&claimed);
    assert_eq!(outcome["tool"], "roster_claim_shift");
    assert_eq!(outcome["result"]["assignee"], "sam");
    assert_eq!(outcome["next_url"], OPEN_SHIFT);
    assert_eq!(
        action_names(&outcome["next"]),
        ["propose_swap"],
        "claim is gone"
    );
    assert!(outcome["next"]["page_state"].is_string(), "{outcome}");
    assert!(
        text(&claimed).contains("`propose_swap`"),
        "the next page's actions inline"
    );
    let link = claimed
        .content
        .iter()
        .find_map(|block| match block {
            ContentBlock::ResourceLink(link) => Some(link),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a resource_link: {claimed:?}"));
    assert_eq!(link.uri, format!("switchboard://{OPEN_SHIFT}"));

    // The same page_state again: the page has changed since (sam holds the shift now).
    let again = call(
        &client,
        "execute_action",
        json!({"url": OPEN_SHIFT, "action": "claim", "page_state": page_state(page)}),
    )
    .await;
    assert_eq!(error_of(&again)["kind"], "page_changed");
    disconnect(client, server, registry).await;
}

/// What `navigate` and `execute_action` answer as structuredContent validates against the
/// outputSchema that tools/list advertises: pages, an action that ran, and one that became a
/// proposal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_meta_tools_answer_what_their_output_schemas_advertise() {
    let registry = registry().await;
    let manager_agent = Identity::agent("acme", "mark").with_role("manager");
    let (agent, agent_server) = connect(&registry, manager_agent, NavigationMode::Only).await;
    let (person, person_server) = connect(&registry, sam(), NavigationMode::Only).await;

    let tools = bounded("tools/list", agent.list_tools(None))
        .await
        .expect("tools/list");
    let validator = |name: &str| {
        let tool = tools
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"));
        let schema = Value::Object((*tool.output_schema.clone().expect("an outputSchema")).clone());
        jsonschema::validator_for(&schema).unwrap_or_else(|error| panic!("{name}: {error}"))
    };
    let (navigate, execute_action) = (validator("navigate"), validator("execute_action"));
    let conforms = |validator: &jsonschema::Validator, result: &CallToolResult| {
        let answer = structured(result);
        let errors: Vec<String> = validator
            .iter_errors(answer)
            .map(|error| format!("{} at {}", error, error.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:?} in {answer}");
    };

    conforms(
        &navigate,
        &call(&agent, "navigate", json!({"url": "/"})).await,
    );
    let shown = call(&agent, "navigate", json!({"url": OPEN_SHIFT})).await;
    conforms(&navigate, &shown);
    let proposed = call(
        &agent,
        "execute_action",
        json!({"url": OPEN_SHIFT, "action": "assign", "params": {"user_id": "sam"}, "page_state": page_state(structured(&shown))}),
    )
    .await;
    assert!(
        structured(&proposed)["proposal"].is_object(),
        "{proposed:?}"
    );
    conforms(&execute_action, &proposed);

    let claimed = call(
        &person,
        "execute_action",
        json!({"url": OPEN_SHIFT, "action": "claim"}),
    )
    .await;
    assert!(
        structured(&claimed).get("proposal").is_none(),
        "{claimed:?}"
    );
    conforms(&execute_action, &claimed);

    close(person, person_server).await;
    disconnect(agent, agent_server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_page_state_is_refused_and_nothing_runs() {
    let registry = registry().await;
    let (client, server) = connect(&registry, sam(), NavigationMode::Beside).await;

    let shown = call(&client, "navigate", json!({"url": OPEN_SHIFT})).await;
    let token = page_state(structured(&shown));
    // The shift changes behind the page's back, through the plain tool.
    let claimed = call(
        &client,
        "roster_claim_shift",
        json!({"shift_id": "acme-2026-11-24-pm"}),
    )
    .await;
    assert_ne!(claimed.is_error, Some(true), "{claimed:?}");

    let refused = call(
        &client,
        "execute_action",
        json!({"url": OPEN_SHIFT, "action": "propose_swap", "page_state": token}),
    )
    .await;
    let error = error_of(&refused);
    assert_eq!(error["kind"], "page_changed");
    assert!(
        !error["changed"].as_array().expect("changed").is_empty(),
        "{error}"
    );
    assert!(
        text(&refused).contains("navigate to it again"),
        "{refused:?}"
    );
    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_state_for_another_url_or_garbage_is_refused() {
    let registry = registry().await;
    let (client, server) = connect(&registry, sam(), NavigationMode::Only).await;

    let roster = call(&client, "navigate", json!({"url": "/roster"})).await;
    let token = page_state(structured(&roster));
    for token in [token.as_str(), "not-a-page-state"] {
        let refused = call(
            &client,
            "execute_action",
            json!({"url": OPEN_SHIFT, "action": "claim", "page_state": token}),
        )
        .await;
        assert_eq!(error_of(&refused)["kind"], "invalid_page_state");
        assert!(text(&refused).contains(OPEN_SHIFT), "{refused:?}");
    }
    // Nothing ran: the shift is still open to claim.
    let shown = call(&client, "navigate", json!({"url": OPEN_SHIFT})).await;
    assert_eq!(action_names(structured(&shown)), ["claim"]);

    let unknown = call(&client, "navigate", json!({"url": "/rooster"})).await;
    assert_eq!(error_of(&unknown)["kind"], "no_such_page");
    let malformed = call(&client, "navigate", json!({"path": "/"})).await;
    assert_eq!(error_of(&malformed)["kind"], "invalid_input");
    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_mode_lists_exactly_the_two_meta_tools() {
    let registry = registry().await;
    let (client, server) = connect(&registry, sam(), NavigationMode::Only).await;

    let tools = bounded("tools/list", client.list_tools(None))
        .await
        .expect("tools/list");
    let mut names: Vec<&str> = tools.tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["execute_action", "navigate"]);
    assert_eq!(tools.next_cursor, None);
    assert!(tools.tools.iter().all(|tool| tool.output_schema.is_some()));

    let plain = bounded(
        "a plain tools/call",
        client.call_tool(CallToolRequestParams::new("core_get_current_user")),
    )
    .await;
    match plain {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
            assert!(error.message.contains("navigate"), "{error:?}");
        }
        other => panic!("expected -32602, got {other:?}"),
    }
    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_resources_listed_templated_and_read_as_markdown() {
    let registry = registry().await;
    let (client, server) = connect(&registry, sam(), NavigationMode::Only).await;

    let listed = bounded("resources/list", client.list_resources(None))
        .await
        .expect("resources/list");
    let uris: Vec<&str> = listed
        .resources
        .iter()
        .map(|resource| resource.uri.as_str())
        .collect();
    for uri in [
        "switchboard:///",
        "switchboard:///roster",
        "switchboard:///me",
    ] {
        assert!(uris.contains(&uri), "{uri} in {uris:?}");
    }
    assert!(uris.iter().all(|uri| !uri.contains('{')), "{uris:?}");

    let templates = crate::common::template_uris(&client).await;
    assert!(
        templates
            .iter()
            .any(|template| template == "switchboard:///roster/shifts/{shift_id}"),
        "{templates:?}"
    );

    let uri = format!("switchboard://{OPEN_SHIFT}");
    let read = bounded(
        "resources/read",
        client.read_resource(ReadResourceRequestParams::new(uri.clone())),
    )
    .await
    .expect("resources/read");
    let [
        ResourceContents::TextResourceContents {
            uri: read_uri,
            mime_type,
            text,
            ..
        },
    ] = read.contents.as_slice()
    else {
        panic!("one text resource: {read:?}");
    };
    assert_eq!(read_uri, &uri);
    assert_eq!(mime_type.as_deref(), Some("text/markdown"));
    assert!(text.contains("`claim`"), "{text}");

    let missing = bounded(
        "resources/read of no page",
        client.read_resource(ReadResourceRequestParams::new("switchboard:///nowhere")),
    )
    .await;
    match missing {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::RESOURCE_NOT_FOUND, "{error:?}");
        }
        other => panic!("expected -32002, got {other:?}"),
    }
    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_off_offers_neither_the_tools_nor_resources() {
    let registry = registry().await;
    let (client, server) = connect(&registry, sam(), NavigationMode::Off).await;
    let info = client.peer_info().expect("the server introduced itself");
    assert!(info.capabilities.resources.is_none());
    let tools = bounded("tools/list", client.list_tools(None))
        .await
        .expect("tools/list");
    assert!(tools.tools.iter().all(|tool| tool.name != "navigate"));
    let listed = bounded("resources/list", client.list_resources(None))
        .await
        .expect("resources/list answers, empty, as before navigation existed");
    assert!(listed.resources.is_empty());
    disconnect(client, server, registry).await;
}

/// Over streamable HTTP with 2026-07-28 (no sessions, a handler per request), sam as an agent:
/// the page_state sealed by one request opens in the next, and the claim becomes a proposal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stateless_http_an_agent_s_assignment_through_its_page_becomes_a_proposal() {
    use rmcp::{
        ClientLifecycleMode, ClientServiceExt as _,
        model::ProtocolVersion,
        transport::{
            StreamableHttpClientTransport,
            streamable_http_client::StreamableHttpClientTransportConfig,
        },
    };

    use crate::http_support::{ALICE_TOKEN, start, token_config};

    let registry = registry().await;
    let navigator = Navigator::new(registry.clone()).expect("the sample pages are valid");
    let config = token_config().navigation(navigator, NavigationMode::Beside);
    let server = start(&registry, config).await;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url()).auth_header(ALICE_TOKEN),
    );
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = bounded("discovering", ().serve_with_lifecycle(transport, lifecycle))
        .await
        .expect("the 2026-07-28 client connects");

    let shown = call(&client, "navigate", json!({"url": OPEN_SHIFT})).await;
    let page = structured(&shown);
    // An agent never claims (a claim runs as whoever runs it): it proposes an assignment.
    let assign = &page["actions"][0];
    assert_eq!(assign["name"], "assign");
    assert_eq!(assign["mode"], "propose", "an agent proposes: {page}");

    let proposed = call(
        &client,
        "execute_action",
        json!({"url": OPEN_SHIFT, "action": "assign", "params": {"user_id": "sam"}, "page_state": page_state(page)}),
    )
    .await;
    let outcome = structured(&proposed);
    assert!(outcome["proposal"]["id"].is_string(), "{outcome}");
    assert!(text(&proposed).contains("proposal"), "{proposed:?}");
    assert_eq!(server.session_count(), 0, "no session in 2026-07-28");

    let resources = bounded("resources/list", client.list_resources(None))
        .await
        .expect("resources/list");
    assert!(!resources.resources.is_empty());

    bounded("closing the client", client.cancel())
        .await
        .expect("closes");
    bounded("stopping the server", server.shutdown())
        .await
        .expect("stops");
    registry.shutdown().await;
}

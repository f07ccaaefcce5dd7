//! Resources served by read tools (the conformance domain's `test://` fixtures) and resource
//! subscriptions, seen from a real rmcp client: listed by the caller's permissions, read as
//! calls of their tools, and `notifications/resources/updated` after a write changes what a
//! subscriber reads, over 2025 sessions (`resources/subscribe`) and over 2026-07-28
//! (`subscriptions/listen`).

// `resources/subscribe` is what 2025 clients send; rmcp marks it deprecated for 2026-07-28.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient,
    model::{
        CallToolRequestParams, ErrorCode, ProtocolVersion, ReadResourceRequestParams,
        ResourceContents, ResourceUpdatedNotificationParam, ServerNotification,
        SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
    },
    service::{NotificationContext, ServiceError},
};
use serde_json::{Value, json};
use switchboard_audit::AuditQuery;
use switchboard_core::Initiator;
use switchboard_mcp::{Identity, McpServer, NavigationMode};
use switchboard_navigation::Navigator;
use switchboard_registry::ToolRegistry;

use crate::common::{admin, bounded, connect_in_memory, disconnect};

/// The page of an open shift, and the same page as a resource.
const OPEN_SHIFT: &str = "/roster/shifts/acme-2026-11-24-pm";
const OPEN_SHIFT_URI: &str = "switchboard:///roster/shifts/acme-2026-11-24-pm";

/// sam, staff of acme, at the client as a person: a claim runs when asked.
fn sam() -> Identity {
    Identity::agent("acme", "sam")
        .with_role("staff")
        .with_initiator(Initiator::Human)
}

/// The URIs of `resources/updated` notifications, in the order they came.
#[derive(Debug, Clone, Default)]
struct Updates(Arc<Mutex<Vec<String>>>);

impl Updates {
    fn seen(&self) -> Vec<String> {
        self.0.lock().expect("not poisoned").clone()
    }
}

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().expect("not poisoned").push(params.uri);
    }
}

async fn read(
    client: &rmcp::service::Peer<RoleClient>,
    uri: &str,
) -> Result<Vec<ResourceContents>, ServiceError> {
    bounded(
        "resources/read",
        client.read_resource(ReadResourceRequestParams::new(uri.to_owned())),
    )
    .await
    .map(|read| read.contents)
}

fn json_of(contents: &[ResourceContents]) -> Value {
    serde_json::to_value(contents).expect("contents serialise")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_resources_are_listed_and_read_through_their_tools() {
    let registry = crate::common::registry().await;
    let (client, server) = connect_in_memory(&registry, admin()).await;
    let info = client.peer_info().expect("the server introduced itself");
    let resources = info.capabilities.resources.as_ref().expect("resources");
    assert_eq!(resources.subscribe, Some(true));

    let listed = bounded("resources/list", client.list_resources(None))
        .await
        .expect("resources/list");
    let uris: Vec<&str> = listed.resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "test://static-binary",
            "test://static-text",
            "test://watched-resource"
        ]
    );
    assert_eq!(
        crate::common::template_uris(&client).await,
        ["test://template/{id}/data"]
    );

    assert_eq!(
        json_of(&read(&client, "test://static-text").await.expect("read")),
        json!([{
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }])
    );
    let binary = json_of(&read(&client, "test://static-binary").await.expect("read"));
    assert_eq!(binary[0]["mimeType"], "image/png");
    assert!(
        binary[0]["blob"]
            .as_str()
            .is_some_and(|blob| blob.starts_with("iVBOR")),
        "{binary}"
    );
    let data = json_of(
        &read(&client, "test://template/123/data")
            .await
            .expect("read"),
    );
    assert_eq!(data[0]["uri"], "test://template/123/data");
    assert_eq!(data[0]["mimeType"], "application/json");
    let text: Value =
        serde_json::from_str(data[0]["text"].as_str().expect("text")).expect("JSON text");
    assert_eq!(
        text,
        json!({"id": "123", "templateTest": true, "data": "Data for ID: 123"})
    );

    // Each read was a call of its tool, with its audit record.
    let records = bounded("an audit query", registry.audit().query(&AuditQuery::all()))
        .await
        .expect("the audit store answers");
    let tools: Vec<&str> = records.iter().map(|record| &*record.tool).collect();
    for tool in [
        "test_resource_static_text",
        "test_resource_static_binary",
        "test_resource_template_data",
    ] {
        assert_eq!(
            tools.iter().filter(|name| **name == tool).count(),
            1,
            "{tool} in {tools:?}"
        );
    }

    for missing in [
        "test://nowhere",
        "test://template//data",
        "switchboard:///roster",
    ] {
        match read(&client, missing).await {
            Err(ServiceError::McpError(error)) => {
                assert_eq!(
                    error.code,
                    ErrorCode::RESOURCE_NOT_FOUND,
                    "{missing}: {error:?}"
                );
            }
            other => panic!("{missing}: expected -32002, got {other:?}"),
        }
    }
    disconnect(client, server, registry).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_without_the_tools_permission_is_offered_no_resources() {
    let registry = crate::common::registry().await;
    let (client, server) = connect_in_memory(&registry, sam()).await;
    let info = client.peer_info().expect("the server introduced itself");
    assert!(info.capabilities.resources.is_none(), "{info:?}");
    let listed = bounded("resources/list", client.list_resources(None))
        .await
        .expect("resources/list answers, empty");
    assert!(listed.resources.is_empty());
    disconnect(client, server, registry).await;
}

/// A client connected in memory, with navigation beside the tools, recording updates.
async fn connect_navigating(
    registry: &ToolRegistry,
    identity: Identity,
) -> (
    rmcp::service::RunningService<RoleClient, Updates>,
    Updates,
    crate::common::Server,
) {
    let updates = Updates::default();
    let navigator = Navigator::new(registry.clone()).expect("the sample pages are valid");
    let server = McpServer::new(registry.clone(), identity)
        .with_navigation(navigator, NavigationMode::Beside);
    let (client, server) = crate::common::connect_server(server, updates.clone()).await;
    (client, updates, server)
}

async fn claim(client: &rmcp::service::Peer<RoleClient>) {
    let arguments = json!({"url": OPEN_SHIFT, "action": "claim", "params": {}});
    let result = bounded(
        "execute_action claim",
        client.call_tool(
            CallToolRequestParams::new("execute_action")
                .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
        ),
    )
    .await
    .expect("a tool result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribed_page_is_notified_when_a_write_changes_it() {
    let registry = crate::common::registry().await;
    let (client, updates, server) = connect_navigating(&registry, sam()).await;
    for uri in [OPEN_SHIFT_URI, "switchboard:///proposals"] {
        bounded(
            "resources/subscribe",
            client.subscribe(SubscribeRequestParams::new(uri)),
        )
        .await
        .expect("the subscription is accepted");
    }
    let refused = bounded(
        "resources/subscribe to no resource",
        client.subscribe(SubscribeRequestParams::new("switchboard:///nowhere")),
    )
    .await;
    match refused {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::RESOURCE_NOT_FOUND, "{error:?}");
        }
        other => panic!("expected -32002, got {other:?}"),
    }

    claim(&client).await;
    crate::common::eventually("resources/updated for the shift", || {
        !updates.seen().is_empty()
    })
    .await;
    // The claim changed the shift, not the proposals: only the shift was notified.
    assert_eq!(updates.seen(), [OPEN_SHIFT_URI]);

    bounded(
        "resources/unsubscribe",
        client.unsubscribe(UnsubscribeRequestParams::new(OPEN_SHIFT_URI)),
    )
    .await
    .expect("unsubscribed");
    crate::common::close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2026_07_28_a_listen_subscription_carries_resource_updates() {
    let registry = crate::common::registry().await;
    let navigator = Navigator::new(registry.clone()).expect("the sample pages are valid");
    let server =
        McpServer::new(registry.clone(), sam()).with_navigation(navigator, NavigationMode::Beside);
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let server = tokio::spawn(rmcp::ServiceExt::serve(server, server_io));
    let client = bounded(
        "server/discover",
        ().serve_with_lifecycle(client_io, lifecycle),
    )
    .await
    .expect("the client connects");
    let filter = SubscriptionFilter::builder()
        .resource_subscriptions([OPEN_SHIFT_URI])
        .build();
    let mut subscription = bounded("subscriptions/listen", client.listen(filter))
        .await
        .expect("the subscription is acknowledged");
    let server = bounded("the server starting", server)
        .await
        .expect("the server task")
        .expect("the server accepts");
    assert_eq!(
        subscription.acknowledged().resource_subscriptions,
        Some(vec![OPEN_SHIFT_URI.to_owned()])
    );

    claim(&client).await;
    let notification = bounded("resources/updated", subscription.next())
        .await
        .expect("the subscription is open")
        .expect("a notification");
    match notification {
        ServerNotification::ResourceUpdatedNotification(update) => {
            assert_eq!(update.params.uri, OPEN_SHIFT_URI);
        }
        other => panic!("expected resources/updated, got {other:?}"),
    }

    bounded("cancelling the subscription", subscription.cancel())
        .await
        .expect("the cancellation is sent");
    // A round trip, so that the server has handled the cancellation before the client goes.
    bounded("resources/list", client.list_resources(None))
        .await
        .expect("lists");
    crate::common::disconnect(client, server, registry).await;
}

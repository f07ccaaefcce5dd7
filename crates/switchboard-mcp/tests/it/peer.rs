//! Peer sessions over streamable HTTP: a real rmcp client with a peer token calls the real
//! server, each call carrying an identity statement signed as another node would sign it.
//! A statement that verifies runs the tool as its caller; every other case is refused with
//! one JSON-RPC error, and the tool does not run (the audit count stays, the directory is
//! unchanged).

use std::{sync::Arc, time::Duration};

use rmcp::{
    ServiceError,
    model::{CallToolRequestParams, CallToolResult, ErrorCode, RequestMetaObject},
};
use serde_json::{Map, Value, json};
use switchboard_audit::{AuditQuery, Outcome};
use switchboard_core::{
    ActionId, ActionKey, CallContext, Caller, IdempotencyKey, Initiator, digest_json,
};
use switchboard_link::{
    Audience, IDENTITY_META_KEY, SigningKeys, StatementSigner, StatementVerifier,
    generate_signing_key_pem,
};
use switchboard_mcp::{HttpAuth, HttpConfig, HttpServer, TokenTable};
use switchboard_registry::{LinkedCall, ToolRegistry};

use crate::{
    common::{Client, bounded, registry},
    http_support::{
        ALICE_TOKEN, audit_count, audit_count_reaching, connect, http, initialize, loopback, post,
        start,
    },
};

/// The front node's token on this server.
const PEER_TOKEN: &str = "node-a-peer-token";
/// The front node.
const FRONT: &str = "node-a";
/// This server's node.
const SERVING: &str = "node-b";
/// The tool every test calls: a mutation of the directory (`core` domain).
const ADD_MEMBER: &str = "core_add_member";

/// Alice's token and the front node's peer token.
fn tokens() -> TokenTable {
    let hash = switchboard_mcp::token_sha256_hex;
    let file = format!(
        r#"
        [[token]]
        sha256 = "{alice}"
        org = "acme"
        user = "alice"
        roles = ["admin"]

        [[token]]
        sha256 = "{peer}"
        name = "front node"
        peer = "{FRONT}"
        "#,
        alice = hash(ALICE_TOKEN),
        peer = hash(PEER_TOKEN),
    );
    TokenTable::from_toml(&file, "tokens.toml").expect("a valid token file")
}

/// A server that accepts statements from [`FRONT`] signed by `front`'s keys.
struct Peered {
    registry: ToolRegistry,
    server: HttpServer,
    front: StatementSigner,
}

async fn peered() -> Peered {
    let registry = registry().await;
    let keys = SigningKeys::from_pems(&[generate_signing_key_pem().expect("a key").as_bytes()])
        .expect("a ring");
    let verifier = StatementVerifier::new(SERVING).peer(FRONT, keys.verifying_keys());
    let config = HttpConfig::new(loopback(), HttpAuth::Tokens(tokens()))
        .expect("a valid configuration")
        .link_verifier(Arc::new(verifier));
    let server = start(&registry, config).await;
    Peered {
        registry,
        server,
        front: StatementSigner::new(FRONT, keys),
    }
}

/// Bob at acme, an administrator clicking through a human's session.
fn bob() -> Caller {
    CallContext::builder()
        .org("acme")
        .user("bob")
        .session("front-session-1")
        .correlation("front-corr-42")
        .role("admin")
        .initiator(Initiator::Human)
        .build()
        .verify()
        .expect("a complete context")
}

fn adding(user_id: &str) -> Map<String, Value> {
    json!({"user_id": user_id, "name": "Nina Novak", "roles": ["staff"]})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

fn action() -> ActionKey {
    ActionKey {
        org_id: "acme".into(),
        key: IdempotencyKey::new("front-key-1"),
        action_id: ActionId::new("front-action-1"),
    }
}

/// A statement for a call of `tool` with `arguments` by [`bob`], as `signer` signs it.
fn statement(
    registry: &ToolRegistry,
    signer: &StatementSigner,
    tool: &str,
    arguments: &Map<String, Value>,
) -> String {
    let descriptor = registry.find(tool).expect("a linked tool");
    let params = Value::Object(arguments.clone());
    let caller = bob();
    let action = action();
    let call = LinkedCall::new(
        &descriptor,
        Arc::new(params.clone()),
        digest_json(&params).expect("a digest"),
        &caller,
        Some(&action),
        tokio::time::Instant::now() + Duration::from_secs(12),
    );
    let audience = Audience::new(SERVING, descriptor.domain.to_string());
    signer.sign(&audience, &call).expect("signed")
}

/// `tools/call` of `tool` with `arguments`, and `statement` in `_meta` if given.
async fn call(
    client: &Client,
    tool: &'static str,
    arguments: Map<String, Value>,
    statement: Option<&str>,
) -> Result<CallToolResult, ServiceError> {
    let mut request = CallToolRequestParams::new(tool).with_arguments(arguments);
    if let Some(statement) = statement {
        let mut meta = Map::new();
        meta.insert(IDENTITY_META_KEY.to_owned(), json!(statement));
        request.meta = Some(RequestMetaObject::from(meta));
    }
    bounded("tools/call", client.call_tool(request)).await
}

/// Asserts `answer` is the one refusal of a statement.
fn assert_refused(answer: Result<CallToolResult, ServiceError>) {
    match answer {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_REQUEST, "{error:?}");
            assert_eq!(error.message, "the identity statement was refused");
            assert_eq!(error.data, None, "nothing else: {error:?}");
        }
        other => panic!("expected the statement's refusal, got {other:?}"),
    }
}

/// Whether acme's directory has `user_id`.
async fn has_member(registry: &ToolRegistry, user_id: &str) -> bool {
    let context = CallContext::builder()
        .org("acme")
        .user("alice")
        .session("check")
        .correlation("check")
        .role("admin")
        .build();
    let listed = bounded(
        "core_list_users",
        registry.invoke("core_list_users", json!({}), &context),
    )
    .await
    .expect("lists");
    listed["users"]
        .as_array()
        .is_some_and(|users| users.iter().any(|user| user["user_id"] == user_id))
}

/// Asserts that nothing ran: no audit record since `before`, and no member `user_id`.
async fn assert_nothing_ran(peered: &Peered, before: u64, user_id: &str) {
    // Give a record that should not exist the time to arrive.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(audit_count(&peered.registry).await, before, "no call ran");
    assert!(!has_member(&peered.registry, user_id).await, "{user_id}");
}

async fn peer_client(server: &HttpServer) -> Client {
    connect(server, Some(PEER_TOKEN))
        .await
        .expect("the peer connects")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_statement_runs_the_tool_as_its_caller_under_its_ids() {
    let peered = peered().await;
    let client = peer_client(&peered.server).await;

    // The peer sees the served tools, whatever its (absent) roles.
    let listed: Vec<String> = bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list")
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    assert!(listed.contains(&ADD_MEMBER.to_owned()), "{listed:?}");
    assert!(
        listed.contains(&"roster_assign_shift".to_owned()),
        "{listed:?}"
    );

    let arguments = adding("nina");
    let jws = statement(&peered.registry, &peered.front, ADD_MEMBER, &arguments);
    let before = audit_count(&peered.registry).await;
    let answer = call(&client, ADD_MEMBER, arguments, Some(&jws))
        .await
        .expect("a result");
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    let member = answer.structured_content.expect("structured content");
    assert_eq!(member["org_id"], "acme");
    assert_eq!(member["user_id"], "nina");
    assert!(has_member(&peered.registry, "nina").await);

    audit_count_reaching(&peered.registry, before + 1).await;
    let records = bounded("audit", peered.registry.audit().query(&AuditQuery::all()))
        .await
        .expect("the audit store answers");
    let record = records
        .iter()
        .find(|record| &*record.tool == ADD_MEMBER)
        .expect("the call's record");
    assert_eq!(record.outcome, Outcome::Ok, "{record:?}");
    assert_eq!(record.user_id.as_ref().map(|id| id.as_str()), Some("bob"));
    assert_eq!(
        record.session_id.as_ref().map(|id| id.as_str()),
        Some("front-session-1")
    );
    assert_eq!(
        record.correlation_id.as_ref().map(|id| id.as_str()),
        Some("front-corr-42")
    );
    assert_eq!(
        record.action.as_ref().map(|action| action.id.as_str()),
        Some("front-action-1")
    );
    let _ = client.cancel().await;
    let _ = peered.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_the_endpoint_answers_401() {
    let peered = peered().await;
    let refused = connect(&peered.server, None)
        .await
        .expect_err("no token, no session");
    assert!(refused.to_string().contains("Auth required"), "{refused}");
    let answer = post(&http(), &peered.server.url(), &[], &initialize()).await;
    assert_eq!(answer.status(), 401);
    let _ = peered.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_from_a_user_session_is_refused() {
    let peered = peered().await;
    let alice = connect(&peered.server, Some(ALICE_TOKEN))
        .await
        .expect("alice connects");
    let arguments = adding("olga");
    let jws = statement(&peered.registry, &peered.front, ADD_MEMBER, &arguments);
    let before = audit_count(&peered.registry).await;
    assert_refused(call(&alice, ADD_MEMBER, arguments, Some(&jws)).await);
    assert_nothing_ran(&peered, before, "olga").await;
    let _ = alice.cancel().await;
    let _ = peered.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_call_without_a_statement_is_refused() {
    let peered = peered().await;
    let client = peer_client(&peered.server).await;
    let before = audit_count(&peered.registry).await;
    assert_refused(call(&client, ADD_MEMBER, adding("pia"), None).await);
    assert_nothing_ran(&peered, before, "pia").await;
    let _ = client.cancel().await;
    let _ = peered.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_signed_by_an_unknown_key_is_refused() {
    let peered = peered().await;
    let client = peer_client(&peered.server).await;
    let stranger = StatementSigner::new(
        FRONT,
        SigningKeys::from_pems(&[generate_signing_key_pem().expect("a key").as_bytes()])
            .expect("a ring"),
    );
    let arguments = adding("quinn");
    let forged = statement(&peered.registry, &stranger, ADD_MEMBER, &arguments);
    let before = audit_count(&peered.registry).await;
    assert_refused(call(&client, ADD_MEMBER, arguments, Some(&forged)).await);
    assert_nothing_ran(&peered, before, "quinn").await;
    let _ = client.cancel().await;
    let _ = peered.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_statement_is_refused_and_the_tool_ran_once() {
    let peered = peered().await;
    let client = peer_client(&peered.server).await;
    let arguments = adding("rita");
    let jws = statement(&peered.registry, &peered.front, ADD_MEMBER, &arguments);
    let before = audit_count(&peered.registry).await;
    let first = call(&client, ADD_MEMBER, arguments.clone(), Some(&jws))
        .await
        .expect("the first call runs");
    assert_ne!(first.is_error, Some(true), "{first:?}");
    let ran = audit_count_reaching(&peered.registry, before + 1).await;
    assert_eq!(ran, before + 1);
    assert_refused(call(&client, ADD_MEMBER, arguments, Some(&jws)).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(audit_count(&peered.registry).await, before + 1, "ran once");
    let _ = client.cancel().await;
    let _ = peered.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_for_another_tool_is_refused() {
    let peered = peered().await;
    let client = peer_client(&peered.server).await;
    let arguments = adding("sara");
    // Signed for a read of the same domain, sent with the mutation.
    let for_a_read = statement(
        &peered.registry,
        &peered.front,
        "core_list_users",
        &arguments,
    );
    let before = audit_count(&peered.registry).await;
    assert_refused(call(&client, ADD_MEMBER, arguments, Some(&for_a_read)).await);
    assert_nothing_ran(&peered, before, "sara").await;
    let _ = client.cancel().await;
    let _ = peered.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn params_altered_after_signing_are_refused() {
    let peered = peered().await;
    let client = peer_client(&peered.server).await;
    let jws = statement(&peered.registry, &peered.front, ADD_MEMBER, &adding("tess"));
    let mut altered = adding("tess");
    altered.insert("roles".to_owned(), json!(["manager"]));
    let before = audit_count(&peered.registry).await;
    assert_refused(call(&client, ADD_MEMBER, altered, Some(&jws)).await);
    assert_nothing_ran(&peered, before, "tess").await;
    let _ = client.cancel().await;
    let _ = peered.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_session_offers_no_prompts_or_resources() {
    let peered = peered().await;
    let client = peer_client(&peered.server).await;
    let info = client.peer_info().expect("the server's info");
    assert!(
        info.capabilities.prompts.is_none(),
        "{:?}",
        info.capabilities
    );
    assert!(
        info.capabilities.resources.is_none(),
        "{:?}",
        info.capabilities
    );
    let prompts = bounded("prompts/list", client.list_all_prompts()).await;
    assert!(prompts.is_ok_and(|prompts| prompts.is_empty()));
    let resources = bounded("resources/list", client.list_all_resources()).await;
    assert!(resources.is_ok_and(|resources| resources.is_empty()));
    let prompt = bounded(
        "prompts/get",
        client.get_prompt(rmcp::model::GetPromptRequestParams::new(
            "intent_core_add_member",
        )),
    )
    .await;
    assert!(
        matches!(&prompt, Err(ServiceError::McpError(error)) if error.code == ErrorCode::METHOD_NOT_FOUND),
        "{prompt:?}"
    );
    let _ = client.cancel().await;
    let _ = peered.server.shutdown().await;
}

#[test]
fn a_token_entry_that_is_both_a_peer_and_a_user_is_refused_by_name() {
    let file = format!(
        r#"
        [[token]]
        sha256 = "{hash}"
        name = "confused"
        peer = "node-a"
        org = "acme"
        user = "alice"
        "#,
        hash = switchboard_mcp::token_sha256_hex("t"),
    );
    let error = TokenTable::from_toml(&file, "tokens.toml")
        .expect_err("both a peer and a user")
        .to_string();
    assert!(
        error.contains("token #1") && error.contains("\"confused\"") && error.contains("org, user"),
        "{error}"
    );
}

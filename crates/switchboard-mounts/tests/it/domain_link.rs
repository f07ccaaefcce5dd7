//! A domain served by another node over MCP (`McpDomainLink`): node-a's front registry holds
//! the `depot` domain (defined here, for these tests) as a remote domain, and each call goes
//! to node-b ([`node`]), a plain rmcp server in this process that answers as each test says.
//! What the tests check is what a caller of node-a sees: the remote output, or an error sorted
//! by what is known of the remote run, fast, and never a panic or a hang.

mod node;

use std::{
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use switchboard_core::{
    CallContext, IdempotencyKey, Initiator, InvokeError, NoInput, ToolContext, ToolError,
    digest_json, tool,
};
use switchboard_link::{SigningKeys, StatementSigner, StatementVerifier, generate_signing_key_pem};
use switchboard_mounts::{DomainLinkConfig, McpDomainLink, StartError};
use switchboard_registry::{DomainLink, LinkError, LinkHealth, LinkedCall, ToolRegistry};

use self::node::{Answer, NodeB};
use crate::servers::caller;

/// The depot's stock, shared by the tools of the registry that holds the domain.
#[derive(Debug, Clone)]
struct DepotState {
    units: Arc<AtomicU32>,
    /// The keys the reservations ran under, in order.
    keys: Arc<Mutex<Vec<Option<String>>>>,
}

impl DepotState {
    fn stocked() -> Self {
        Self {
            units: Arc::new(AtomicU32::new(10)),
            keys: Arc::default(),
        }
    }
}

switchboard_core::domain! {
    /// A depot with a stock of units: the domain node-b serves.
    Depot { name: "depot", state: DepotState = DepotState::stocked }
}

/// How many units are in stock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct StockCount {
    units: u32,
}

/// Counts the units in stock.
#[tool(domain = Depot, category = read, permission = "depot.read", timeout_ms = 1000)]
async fn stock(ctx: &ToolContext<DepotState>, _input: NoInput) -> Result<StockCount, ToolError> {
    Ok(StockCount {
        units: ctx.state().units.load(Ordering::SeqCst),
    })
}

/// What a reservation left, and the key it ran under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct Reserved {
    left: u32,
    key: Option<String>,
}

/// Takes one unit out of stock.
#[tool(domain = Depot, category = execute, permission = "depot.reserve", timeout_ms = 1000)]
async fn reserve(ctx: &ToolContext<DepotState>, _input: NoInput) -> Result<Reserved, ToolError> {
    let left = ctx.state().units.fetch_sub(1, Ordering::SeqCst) - 1;
    let key = ctx.action().map(|action| action.key.to_string());
    ctx.state()
        .keys
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(key.clone());
    Ok(Reserved { left, key })
}

/// How often node-b is pinged in these tests, and how long a ping may take.
const PING_EVERY: Duration = Duration::from_millis(200);
const PING_DEADLINE: Duration = Duration::from_millis(200);

/// node-a's front registry holding `depot` through a link to node-b, node-b, and the link.
struct Nodes {
    front: ToolRegistry,
    node_b: NodeB,
    link: Arc<McpDomainLink>,
}

/// node-b serving the depot, node-a linked to it, node-a's statements trusted by node-b.
async fn nodes() -> Nodes {
    nodes_pinging_every(PING_EVERY).await
}

/// [`nodes`], node-b pinged every `every`.
async fn nodes_pinging_every(every: Duration) -> Nodes {
    let pem = generate_signing_key_pem().expect("a key");
    let keys = SigningKeys::from_pems(&[pem.as_bytes()]).expect("the key loads");
    let verifier = StatementVerifier::new("node-b").peer("node-a", keys.verifying_keys());
    let signer = Arc::new(StatementSigner::new("node-a", keys));
    let back = ToolRegistry::builder()
        .start()
        .await
        .expect("node-b's registry starts");
    let node_b = NodeB::start(back, verifier).await;
    let config = DomainLinkConfig::new("depot", node_b.url(), "node-b")
        .health_checks(every, PING_DEADLINE)
        .cool_down(Duration::from_millis(500));
    let link = Arc::new(
        McpDomainLink::start(config, signer)
            .await
            .expect("the link starts"),
    );
    let front = ToolRegistry::builder()
        .remote_domain("depot", Arc::clone(&link) as Arc<dyn DomainLink>)
        .start()
        .await
        .expect("node-a's registry starts");
    Nodes {
        front,
        node_b,
        link,
    }
}

/// alice's call on node-a, under `key` if given.
fn alice(key: Option<&str>) -> CallContext {
    let mut context = caller(Initiator::Human, true);
    context.idempotency_key = key.map(IdempotencyKey::new);
    context
}

/// Waits up to `patience` for the link's health to satisfy `wanted`.
async fn health_becomes(
    link: &McpDomainLink,
    patience: Duration,
    wanted: impl Fn(&LinkHealth) -> bool,
) -> LinkHealth {
    let deadline = Instant::now() + patience;
    loop {
        let health = link.health();
        if wanted(&health) || Instant::now() > deadline {
            return health;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn is_open(health: &LinkHealth) -> bool {
    matches!(health, LinkHealth::Open { .. })
}

/// The code of a tool failure, or the kind of another error.
/// A call through the front is refused with `domain_unavailable` at once, the link open.
async fn refused_at_once(nodes: &Nodes) {
    let started = Instant::now();
    let error = nodes
        .front
        .invoke("depot_stock", json!({}), &alice(None))
        .await
        .expect_err("refused");
    assert!(
        matches!(error, InvokeError::DomainUnavailable { .. }),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(250),
        "refused at once"
    );
}

/// The link comes back up by itself within `within`, and a call through the front is served.
async fn served_again_within(nodes: &Nodes, within: Duration) {
    let health = health_becomes(&nodes.link, within, |health| *health == LinkHealth::Up).await;
    assert_eq!(health, LinkHealth::Up, "back by itself");
    nodes
        .front
        .invoke("depot_stock", json!({}), &alice(None))
        .await
        .expect("served again");
}

fn code(error: &InvokeError) -> String {
    match error {
        InvokeError::ToolFailed { error, .. } => error.code().to_owned(),
        other => other.kind().to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_on_node_b_as_their_signed_statements_say() {
    let nodes = nodes().await;
    assert_eq!(nodes.link.health(), LinkHealth::Up);

    let stock = nodes
        .front
        .invoke("depot_stock", json!({}), &alice(None))
        .await
        .expect("the read runs on node-b");
    assert_eq!(stock, json!({"units": 10}));
    let reserved = nodes
        .front
        .invoke("depot_reserve", json!({}), &alice(Some("reserve-1")))
        .await
        .expect("the mutation runs on node-b");
    assert_eq!(reserved, json!({"left": 9, "key": "link.reserve-1"}));
    let replayed = nodes
        .front
        .invoke("depot_reserve", json!({}), &alice(Some("reserve-1")))
        .await
        .expect("the retry is answered");
    assert_eq!(replayed, reserved, "the same key runs once");

    let statements = nodes.node_b.statements();
    assert_eq!(statements.len(), 2, "one statement per call sent");
    assert!(
        statements.iter().all(|(_, verified)| *verified),
        "every statement verifies on node-b"
    );
    assert_ne!(
        statements[0].0, statements[1].0,
        "a fresh statement per call"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_started_while_node_b_is_away_is_open_and_closes_when_it_comes() {
    let pem = generate_signing_key_pem().expect("a key");
    let keys = SigningKeys::from_pems(&[pem.as_bytes()]).expect("the key loads");
    let verifier = StatementVerifier::new("node-b").peer("node-a", keys.verifying_keys());
    let signer = Arc::new(StatementSigner::new("node-a", keys));
    let back = ToolRegistry::builder()
        .start()
        .await
        .expect("node-b's registry");
    let mut node_b = NodeB::start(back, verifier).await;
    node_b.stop();
    let config = DomainLinkConfig::new("depot", node_b.url(), "node-b")
        .health_checks(PING_EVERY, PING_DEADLINE)
        .start_timeout(Duration::from_secs(2));
    let unset = config
        .clone()
        .bearer_token_env("SWITCHBOARD_TEST_UNSET_PEER_TOKEN");
    let refused = McpDomainLink::start(unset, Arc::clone(&signer)).await;
    assert!(
        matches!(&refused, Err(StartError::Credential { variable, .. }) if variable == "SWITCHBOARD_TEST_UNSET_PEER_TOKEN"),
        "{refused:?}"
    );

    let started = Instant::now();
    let link = McpDomainLink::start(config, signer)
        .await
        .expect("a node that is away does not stop the start");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "a refused connection is not waited on"
    );
    let health = link.health();
    let LinkHealth::Open { reason } = &health else {
        panic!("open without node-b: {health:?}");
    };
    assert!(reason.contains("node-b is unreachable"), "{reason}");

    node_b.restart().await;
    let health = health_becomes(&link, Duration::from_secs(10), |health| {
        *health == LinkHealth::Up
    })
    .await;
    assert_eq!(health, LinkHealth::Up, "closed once node-b answers");
    link.close().await;
    assert!(is_open(&link.health()), "a closed link refuses calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_statement_is_domain_unavailable_naming_node_b() {
    let nodes = nodes().await;
    nodes.node_b.answer(Answer::RpcError);
    let error = nodes
        .front
        .invoke("depot_stock", json!({}), &alice(None))
        .await
        .expect_err("refused");
    let InvokeError::DomainUnavailable { reason, .. } = &error else {
        panic!("expected domain_unavailable, got {error:?}");
    };
    assert!(
        reason.contains("node-b refused the call")
            && reason.contains("the identity statement was refused"),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_answers_are_errors_and_in_doubt_when_they_do_not_decode() {
    let nodes = nodes().await;
    let cases = [
        // A success whose output is not the tool's: the front's output check refuses it.
        (
            json!({"content": [], "structuredContent": {"units": "many"}}),
            "remote_answer_invalid",
        ),
        // A success without the output.
        (
            json!({"content": [{"type": "text", "text": "ok"}]}),
            "remote_outcome_unknown",
        ),
        // An error without the registry's error.
        (
            json!({"content": [], "isError": true}),
            "remote_outcome_unknown",
        ),
        // An error whose registry error does not decode.
        (
            json!({"content": [], "isError": true, "_meta": {"switchboard/error": {"kind": "tool_failed"}}}),
            "remote_outcome_unknown",
        ),
    ];
    for (result, expected) in cases {
        nodes.node_b.answer(Answer::Result(result.clone()));
        let error = nodes
            .front
            .invoke("depot_stock", json!({}), &alice(None))
            .await
            .expect_err("garbage is an error");
        assert_eq!(code(&error), expected, "{result}: {error}");
        // A good answer in between keeps the breaker closed.
        nodes.node_b.answer(Answer::Correctly);
        nodes
            .front
            .invoke("depot_stock", json!({}), &alice(None))
            .await
            .expect("the link still serves");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_past_the_deadline_is_in_doubt_without_a_hang() {
    let nodes = nodes().await;
    nodes.node_b.answer(Answer::After(Duration::from_secs(30)));
    let started = Instant::now();
    let error = tokio::time::timeout(
        Duration::from_secs(10),
        nodes
            .front
            .invoke("depot_reserve", json!({}), &alice(Some("slow-1"))),
    )
    .await
    .expect("no hang")
    .expect_err("no answer in time");
    // The tool's timeout (1 s) plus the front's margin (2 s).
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(code(&error), "remote_outcome_unknown", "{error}");
    assert!(error.is_in_doubt(), "{error}");
}

/// A call of `tool` straight through the link, as node-a's registry makes it, with `within`
/// to answer.
async fn through_link(nodes: &Nodes, tool: &str, within: Duration) -> Result<Value, LinkError> {
    let descriptor = nodes.front.find(tool).expect("a depot tool");
    let params = Arc::new(json!({}));
    let input = digest_json(&params).expect("a digest");
    let caller = alice(None).verify().expect("a whole context");
    let call = LinkedCall::new(
        &descriptor,
        params,
        input,
        &caller,
        None,
        tokio::time::Instant::now() + within,
    );
    tokio::time::timeout(Duration::from_secs(10), nodes.link.call(call))
        .await
        .expect("no hang")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_end_at_their_deadline_and_three_without_an_answer_open_the_link_for_a_while() {
    let nodes = nodes().await;
    nodes.node_b.answer(Answer::After(Duration::from_secs(30)));
    for _ in 0..3 {
        let started = Instant::now();
        let answer = through_link(&nodes, "depot_stock", Duration::from_millis(300)).await;
        assert!(
            matches!(answer, Err(LinkError::InDoubt { .. })),
            "{answer:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }
    let LinkHealth::Open { reason } = nodes.link.health() else {
        panic!("three calls without an answer leave the link up");
    };
    assert!(reason.contains("3 calls in a row"), "{reason}");
    let sent = nodes.node_b.calls();
    let started = Instant::now();
    let answer = through_link(&nodes, "depot_stock", Duration::from_secs(5)).await;
    assert!(
        matches!(answer, Err(LinkError::NotSent { .. })),
        "{answer:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(250),
        "refused at once"
    );
    assert_eq!(nodes.node_b.calls(), sent, "nothing was sent");

    // After its cool-down (500 ms here) one call goes through, and an answer closes it.
    nodes.node_b.answer(Answer::Correctly);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let answer = through_link(&nodes, "depot_stock", Duration::from_secs(5)).await;
    assert_eq!(answer.ok(), Some(json!({"units": 10})));
    assert_eq!(nodes.link.health(), LinkHealth::Up);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_whose_connection_is_lost_is_sent_again_on_the_next_one_and_an_unkeyed_mutation_is_not()
 {
    // A new connection may take a while on a loaded machine; a call waits for one up to a
    // ping interval.
    let nodes = nodes_pinging_every(Duration::from_secs(1)).await;
    // The first attempt is still running on node-b when its connection ends.
    nodes.node_b.answer(Answer::After(Duration::from_secs(20)));
    let front = nodes.front.clone();
    let read =
        tokio::spawn(async move { front.invoke("depot_stock", json!({}), &alice(None)).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    nodes.node_b.answer(Answer::Correctly);
    nodes.node_b.fail_next_ping();
    let answer = tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("no hang")
        .expect("the call's task");
    assert_eq!(
        answer.ok(),
        Some(json!({"units": 10})),
        "sent again, and answered"
    );
    assert_eq!(nodes.node_b.calls(), 2, "two attempts reached node-b");

    // A mutation without a key (only a caller of the link itself can make one) is not.
    nodes.node_b.answer(Answer::After(Duration::from_secs(20)));
    let call = through_link(&nodes, "depot_reserve", Duration::from_secs(5));
    let fail = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        nodes.node_b.answer(Answer::Correctly);
        nodes.node_b.fail_next_ping();
    };
    let (answer, ()) = tokio::join!(call, fail);
    assert!(
        matches!(answer, Err(LinkError::InDoubt { .. })),
        "{answer:?}"
    );
    assert_eq!(nodes.node_b.calls(), 3, "sent once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_announced_with_another_schema_opens_the_link_until_it_matches_again() {
    let nodes = nodes().await;
    let good = nodes.node_b.tools();
    let mut skewed = good.clone();
    for tool in &mut skewed {
        if tool.name == "depot_reserve" {
            let mut schema = (*tool.input_schema).clone();
            schema.insert("required".to_owned(), json!(["units"]));
            tool.input_schema = Arc::new(schema);
        }
    }
    nodes.node_b.announce(skewed).await;
    let health = health_becomes(&nodes.link, Duration::from_secs(5), is_open).await;
    let LinkHealth::Open { reason } = &health else {
        panic!("the link stays up: {health:?}");
    };
    assert!(
        reason.contains("node-b announces another schema for depot_reserve"),
        "{reason}"
    );
    let calls = nodes.node_b.calls();
    refused_at_once(&nodes).await;
    assert_eq!(nodes.node_b.calls(), calls, "nothing was sent");

    nodes.node_b.announce(good).await;
    served_again_within(&nodes, Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_node_opens_the_link_within_a_ping_and_ends_calls_in_flight_at_once() {
    let nodes = nodes().await;
    // A call node-b is still working on when it freezes.
    nodes.node_b.answer(Answer::After(Duration::from_secs(20)));
    let front = nodes.front.clone();
    let in_flight = tokio::spawn(async move {
        let started = Instant::now();
        let answer = front
            .invoke("depot_reserve", json!({}), &alice(Some("frozen-1")))
            .await;
        (answer, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let frozen_at = Instant::now();
    nodes.node_b.freeze(true);

    let health = health_becomes(&nodes.link, Duration::from_secs(5), is_open).await;
    let noticed = frozen_at.elapsed();
    assert!(is_open(&health), "{health:?}");
    // A ping is sent every PING_EVERY and may take PING_DEADLINE; some slack for the loaded
    // machines tests run on.
    assert!(
        noticed < PING_EVERY + PING_DEADLINE + Duration::from_millis(800),
        "noticed after {noticed:?}"
    );
    let (answer, took) = in_flight.await.expect("the call's task");
    let error = answer.expect_err("the call in flight is lost");
    assert_eq!(code(&error), "remote_outcome_unknown", "{error}");
    assert!(
        took < Duration::from_secs(2),
        "ended when its connection was lost, not at its deadline: {took:?}"
    );

    refused_at_once(&nodes).await;

    nodes.node_b.answer(Answer::Correctly);
    nodes.node_b.freeze(false);
    served_again_within(&nodes, Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_node_is_refused_at_once_and_served_again_when_it_returns() {
    let mut nodes = nodes().await;
    nodes.node_b.stop();
    let health = health_becomes(
        &nodes.link,
        PING_EVERY + PING_DEADLINE + Duration::from_millis(800),
        is_open,
    )
    .await;
    assert!(is_open(&health), "{health:?}");
    refused_at_once(&nodes).await;

    nodes.node_b.restart().await;
    served_again_within(&nodes, Duration::from_secs(10)).await;
}

/// A result node-b might send: any JSON in the places a result has.
fn garbage_result() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z_]{0,12}".prop_map(Value::from),
    ];
    let json = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    });
    (json.clone(), any::<Option<bool>>(), json).prop_map(|(structured, is_error, error)| {
        json!({
            "content": [],
            "structuredContent": structured,
            "isError": is_error,
            "_meta": {"switchboard/error": error},
        })
    })
}

#[test]
fn garbage_results_are_always_errors_and_never_panic_or_hang() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let nodes = runtime.block_on(nodes());
    let config = ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let case = AtomicU32::new(0);
    proptest!(config, |(result in garbage_result())| {
        runtime.block_on(async {
            nodes.node_b.answer(Answer::Result(result.clone()));
            // A key of its own: a failure the front keeps under a key would be replayed.
            let key = format!("garbage-{}", case.fetch_add(1, Ordering::SeqCst));
            let answer = tokio::time::timeout(
                Duration::from_secs(10),
                nodes.front.invoke("depot_reserve", json!({}), &alice(Some(&key))),
            )
            .await
            .map_err(|_| TestCaseError::fail("the call hung"))?;
            // node-b may not decode what it is told to send (no `content` list): a JSON-RPC
            // error then, which is an error too.
            prop_assert!(answer.is_err(), "{} answered {:?}", result, answer);
            nodes.node_b.answer(Answer::Correctly);
            let good = nodes.front.invoke("depot_stock", json!({}), &alice(None)).await;
            prop_assert!(good.is_ok(), "the link serves after garbage: {:?}", good);
            Ok(())
        })?;
    });
}

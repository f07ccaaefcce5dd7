//! Approvals over MCP, seen from real rmcp clients: an agent's mutation becomes a proposal and
//! the client's user decides on it through elicitation: in an `input_required` result with a
//! sealed `requestState` (2026-07-28), or with `elicitation/create` mid-call (2025-11-25).
//! Also what cannot work (a tampered, replayed or foreign `requestState`), what stays as it
//! was (a client that cannot elicit, an identity that did not opt in), and the thread and
//! project a request names in its `_meta`. Every wait is bounded by `common::LIMIT`.

use std::net::SocketAddr;

use rmcp::{
    ClientLifecycleMode, ClientServiceExt as _, ServiceExt as _,
    model::{
        CallToolResponse, ElicitResult, ElicitationAction, InputRequest, ProtocolVersion,
        RequestMetaObject,
    },
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use switchboard_audit::ActionEvent;
use switchboard_core::{Initiator, ProposalId};
use switchboard_mcp::{
    Identity, McpServer, PROJECT_META_KEY, StateKey, THREAD_META_KEY, serve_http,
};
use switchboard_registry::{AgentMutations, ProposalStatus, RegistryConfig, ToolRegistry};

use crate::approval_support::{
    ASSIGN, Human, alice, assignment, call, call_once, connect, connect_to, decision, human_admin,
    input_required, invalid_params, kind, only_proposal, proposal_id_of, proposals, records_of,
    request, retry, runs,
};
use crate::common::{bounded, close, error_of, registry};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2026_07_28_the_user_approves_in_an_input_required_round_and_the_tool_runs_once() {
    let registry = registry().await;
    let human = Human::approving(ProtocolVersion::V_2026_07_28);
    let (client, server) = connect(&registry, alice(), human.clone()).await;

    // The first round, as the server sends it: one elicitation and a sealed state.
    let first = input_required(&client, request(ASSIGN, assignment())).await;
    let requests = first.input_requests.clone().expect("input requests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["approval"]);
    let Some(InputRequest::Elicitation(question)) = requests.get("approval") else {
        panic!("an elicitation request: {requests:?}");
    };
    let question = serde_json::to_value(question).expect("serialises");
    let message = question["params"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(ASSIGN) && message.contains("acme-2026-11-24-pm"),
        "{message}"
    );
    let schema = &question["params"]["requestedSchema"];
    assert_eq!(schema["required"], json!(["decision"]), "{schema}");
    assert!(
        first
            .request_state
            .as_deref()
            .is_some_and(|s| s.starts_with("rs1."))
    );
    let abandoned = only_proposal(&registry).await;
    assert!(abandoned.status.is_pending());

    // The whole exchange, driven by the client: the user approves, the tool runs.
    let result = call(&client, request(ASSIGN, assignment()))
        .await
        .expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let shift = result.structured_content.clone().expect("the shift");
    assert_eq!(shift["assignee"], json!("sam"), "{shift}");
    let meta = result.meta.clone().expect("_meta names the proposal");
    assert_eq!(meta.0["switchboard/approved_by"], json!("alice"));
    assert_eq!(human.asked().len(), 1, "one question for the one call");

    let proposal_id = ProposalId::new(
        meta.0["switchboard/proposal_id"]
            .as_str()
            .expect("a proposal id"),
    );
    let proposal = bounded(
        "the proposal",
        registry.proposal(&proposal_id, &human_admin()),
    )
    .await
    .expect("stored");
    assert!(
        matches!(&proposal.status, ProposalStatus::Approved { by, outcome, .. }
            if by.as_str() == "alice" && outcome.as_deref() == Some("ok")),
        "{proposal:?}"
    );
    assert_eq!(
        proposal.proposer.agent_type.as_ref().map(|t| t.as_str()),
        Some("planner"),
        "the proposal carries the identity's agent type"
    );
    assert_eq!(proposal.proposer.initiator, Initiator::Agent);

    // The audit: the proposal (by the agent) and its approved run (by the human), linked by
    // the proposal's id as action id. The tool ran once.
    let linked: Vec<_> = records_of(&registry, ASSIGN)
        .await
        .into_iter()
        .filter(|record| {
            record
                .action
                .as_ref()
                .is_some_and(|action| action.id.as_str() == proposal_id.as_str())
        })
        .collect();
    // Newest first.
    let events: Vec<(ActionEvent, Initiator)> = linked
        .iter()
        .rev()
        .filter_map(|record| record.action.as_ref().map(|a| (a.event, record.initiator)))
        .collect();
    assert_eq!(
        events,
        [
            (ActionEvent::Proposed, Initiator::Agent),
            (ActionEvent::Approved, Initiator::Human)
        ],
        "{linked:#?}"
    );
    assert_eq!(runs(&registry).await, 1);

    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_closes_the_proposal_with_the_feedback_and_runs_nothing() {
    let registry = registry().await;
    let answer = decision(json!({"decision": "reject", "feedback": "Sam is off that day"}));
    let human = Human::answering(answer, ProtocolVersion::V_2026_07_28);
    let (client, server) = connect(&registry, alice(), human).await;

    let result = call(&client, request(ASSIGN, assignment()))
        .await
        .expect("a result");
    assert_eq!(kind(&result), "proposal_closed");
    let error = error_of(&result);
    assert_eq!(error["status"], json!("rejected"), "{error}");
    assert_eq!(error["feedback"], json!("Sam is off that day"));
    let text = serde_json::to_string(&result.content).expect("serialises");
    assert!(text.contains("Sam is off that day"), "{text}");

    let proposal = only_proposal(&registry).await;
    assert!(
        matches!(&proposal.status, ProposalStatus::Rejected { by, feedback, .. }
            if by.as_str() == "alice" && feedback == "Sam is off that day"),
        "{proposal:?}"
    );
    assert_eq!(runs(&registry).await, 0);
    let rejected = records_of(&registry, ASSIGN)
        .await
        .into_iter()
        .filter(|record| {
            record
                .action
                .as_ref()
                .is_some_and(|action| action.event == ActionEvent::Rejected)
        })
        .count();
    assert_eq!(rejected, 1);

    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declining_leaves_the_proposal_pending_for_the_cli_or_the_api() {
    for version in [ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25] {
        let registry = registry().await;
        let human = Human::answering(
            ElicitResult::new(ElicitationAction::Decline),
            version.clone(),
        );
        let (client, server) = connect(&registry, alice(), human.clone()).await;

        let result = call(&client, request(ASSIGN, assignment()))
            .await
            .expect("a result");
        assert_eq!(kind(&result), "approval_required", "{version:?}");
        assert_eq!(human.asked().len(), 1, "{version:?}");
        let proposal_id = proposal_id_of(&result);
        assert!(only_proposal(&registry).await.status.is_pending());
        assert_eq!(runs(&registry).await, 0);

        // Still decidable elsewhere, as any proposal is.
        let approved = bounded("approving", registry.approve(&proposal_id, &human_admin()))
            .await
            .expect("a human approves it later");
        assert_eq!(approved.output["assignee"], json!("sam"));
        assert_eq!(runs(&registry).await, 1);

        close(client, server).await;
        registry.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2025_11_25_the_user_is_asked_mid_call() {
    let registry = registry().await;
    let human = Human::approving(ProtocolVersion::V_2025_11_25);
    let (client, server) = connect(&registry, alice(), human.clone()).await;
    assert_eq!(
        client.peer_info().map(|info| info.protocol_version.clone()),
        Some(ProtocolVersion::V_2025_11_25)
    );

    let result = call(&client, request(ASSIGN, assignment()))
        .await
        .expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(
        result.structured_content.expect("the shift")["assignee"],
        json!("sam")
    );
    let asked = human.asked();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains(ASSIGN), "{asked:?}");
    assert_eq!(runs(&registry).await, 1);

    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restricted_tool_runs_only_when_the_user_confirms() {
    let registry = registry().await;
    let clear = || request("roster_clear_roster", json!({"week_start": "2026-11-23"}));

    // Approved without ticking `confirm`: the registry refuses, the proposal stays pending.
    let human = Human::approving(ProtocolVersion::V_2026_07_28);
    let (client, server) = connect(&registry, alice(), human.clone()).await;
    let result = call(&client, clear()).await.expect("a result");
    assert_eq!(kind(&result), "category_denied", "{result:?}");
    assert!(human.asked()[0].contains("cannot be undone"));
    assert!(only_proposal(&registry).await.status.is_pending());
    close(client, server).await;

    let confirming = Human::answering(
        decision(json!({"decision": "approve", "confirm": true})),
        ProtocolVersion::V_2026_07_28,
    );
    let (client, server) = connect(&registry, alice(), confirming).await;
    let result = call(&client, clear()).await.expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(result.structured_content.expect("cleared")["cleared"].is_number());

    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_request_state_is_refused_and_decides_nothing() {
    let registry = registry().await;
    let human = Human::approving(ProtocolVersion::V_2026_07_28);
    let (client, server) = connect(&registry, alice(), human).await;
    let params = request(ASSIGN, assignment());
    let first = input_required(&client, params.clone()).await;
    let state = first.request_state.expect("a state");
    let approve = decision(json!({"decision": "approve"}));

    let mut tampered = state.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ASCII");
    let forged = "rs1.AAAAAAAAAAB7InByb3Bvc2FsIjoicHJvcC14In0.AAAA";
    for bad in [tampered.as_str(), forged, "not-a-state"] {
        let message = invalid_params(call_once(&client, retry(&params, &approve, bad)).await);
        assert!(message.contains("nothing was decided"), "{message}");
    }
    // The same state for other arguments is refused too.
    let other = request(
        ASSIGN,
        json!({"shift_id": "acme-2026-11-25-am", "user_id": "sam"}),
    );
    invalid_params(call_once(&client, retry(&other, &approve, &state)).await);

    assert!(only_proposal(&registry).await.status.is_pending());
    assert_eq!(runs(&registry).await, 0);

    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_opens_on_another_server_with_the_same_key_and_not_with_another_key() {
    // A restart or another replica: a second server instance, given the key the first one
    // sealed the state with, decides on it; one with another key refuses it.
    const KEY: &str = "5b0c6f3d9e2a47c18f60b3a9d2e4c7f1a8b5d0e3f6a9c2b5e8d1f4a7c0b3e6d9";
    let registry = registry().await;
    let server_with = |key: StateKey| McpServer::new(registry.clone(), alice()).with_state_key(key);
    let key = || StateKey::from_hex(KEY).expect("a valid key");
    let params = request(ASSIGN, assignment());
    let approve = decision(json!({"decision": "approve"}));

    let human = Human::approving(ProtocolVersion::V_2026_07_28);
    let (first_client, first_server) = connect_to(server_with(key()), human.clone()).await;
    let state = input_required(&first_client, params.clone())
        .await
        .request_state
        .expect("a state");
    close(first_client, first_server).await;

    let (other_client, other_server) =
        connect_to(server_with(StateKey::generate()), human.clone()).await;
    let message = invalid_params(call_once(&other_client, retry(&params, &approve, &state)).await);
    assert!(message.contains("nothing was decided"), "{message}");
    assert!(only_proposal(&registry).await.status.is_pending());
    close(other_client, other_server).await;

    let (same_client, same_server) = connect_to(server_with(key()), human).await;
    let result = call_once(&same_client, retry(&params, &approve, &state))
        .await
        .expect("an answer");
    let CallToolResponse::Complete(result) = result else {
        panic!("a final result: {result:?}");
    };
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(runs(&registry).await, 1);
    close(same_client, same_server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_request_state_finds_the_proposal_closed() {
    let registry = registry().await;
    let human = Human::approving(ProtocolVersion::V_2026_07_28);
    let (client, server) = connect(&registry, alice(), human).await;
    let params = request(ASSIGN, assignment());
    let state = input_required(&client, params.clone())
        .await
        .request_state
        .expect("a state");
    let approve = decision(json!({"decision": "approve"}));

    let answered = call_once(&client, retry(&params, &approve, &state))
        .await
        .expect("an answer");
    let CallToolResponse::Complete(first) = answered else {
        panic!("a final result: {answered:?}");
    };
    assert_ne!(first.is_error, Some(true), "{first:?}");

    for answer in [approve, decision(json!({"decision": "reject"}))] {
        let replayed = call_once(&client, retry(&params, &answer, &state))
            .await
            .expect("an answer");
        let CallToolResponse::Complete(replayed) = replayed else {
            panic!("a final result: {replayed:?}");
        };
        assert_eq!(kind(&replayed), "proposal_closed");
        assert_eq!(error_of(&replayed)["status"], json!("approved"));
    }
    assert_eq!(runs(&registry).await, 1, "the tool ran once");

    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_state_from_another_identity_is_refused() {
    let registry = registry().await;
    let params = request(ASSIGN, assignment());
    let (alice_client, alice_server) = connect(
        &registry,
        alice(),
        Human::approving(ProtocolVersion::V_2026_07_28),
    )
    .await;
    let state = input_required(&alice_client, params.clone())
        .await
        .request_state
        .expect("a state");
    let approve = decision(json!({"decision": "approve"}));

    // Mark, a manager of the same organisation who could approve the tool himself, and Alice
    // behind another agent type: neither can use Alice's state.
    let mark = Identity::agent("acme", "mark")
        .with_role("manager")
        .with_agent_type("planner")
        .with_approval_by_elicitation(true);
    let other_agent = alice().with_agent_type("scheduler");
    for identity in [mark, other_agent] {
        let (client, server) = connect(
            &registry,
            identity,
            Human::approving(ProtocolVersion::V_2026_07_28),
        )
        .await;
        invalid_params(call_once(&client, retry(&params, &approve, &state)).await);
        close(client, server).await;
    }
    // Alice with approval by elicitation turned off since: refused as well.
    let (client, server) = connect(
        &registry,
        alice().with_approval_by_elicitation(false),
        Human::approving(ProtocolVersion::V_2026_07_28),
    )
    .await;
    invalid_params(call_once(&client, retry(&params, &approve, &state)).await);
    close(client, server).await;

    assert!(only_proposal(&registry).await.status.is_pending());
    assert_eq!(runs(&registry).await, 0);

    // The state still works for its own identity.
    let answered = call_once(&alice_client, retry(&params, &approve, &state))
        .await
        .expect("an answer");
    assert!(matches!(answered, CallToolResponse::Complete(ref r) if r.is_error != Some(true)));
    close(alice_client, alice_server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_elicit_gets_the_ordinary_answer() {
    // The built-in configuration refuses an agent's mutation: nothing is stored.
    let registry = registry().await;
    let human = Human::without_elicitation(ProtocolVersion::V_2026_07_28);
    let (client, server) = connect(&registry, alice(), human.clone()).await;
    let result = call(&client, request(ASSIGN, assignment()))
        .await
        .expect("a result");
    assert_eq!(kind(&result), "category_denied");
    assert!(proposals(&registry).await.is_empty());
    close(client, server).await;
    registry.shutdown().await;

    // A registry that turns agents' mutations into proposals answers with the proposal.
    let config = RegistryConfig {
        agent_mutations: AgentMutations::Propose,
        ..RegistryConfig::default()
    };
    let registry = bounded(
        "starting the registry",
        ToolRegistry::builder().config(config).start(),
    )
    .await
    .expect("starts");
    for version in [ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25] {
        let human = Human::without_elicitation(version);
        let (client, server) = connect(&registry, alice(), human.clone()).await;
        let result = call(&client, request(ASSIGN, assignment()))
            .await
            .expect("a result");
        assert_eq!(kind(&result), "approval_required");
        let proposal_id = proposal_id_of(&result);
        let proposal = bounded(
            "the proposal",
            registry.proposal(&proposal_id, &human_admin()),
        )
        .await
        .expect("stored");
        assert!(proposal.status.is_pending());
        assert!(human.asked().is_empty());
        close(client, server).await;
    }
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_opt_in_nobody_is_asked() {
    let registry = registry().await;
    for version in [ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25] {
        let human = Human::approving(version);
        let identity = alice().with_approval_by_elicitation(false);
        let (client, server) = connect(&registry, identity, human.clone()).await;
        let result = call(&client, request(ASSIGN, assignment()))
            .await
            .expect("a result");
        assert_eq!(kind(&result), "category_denied");
        assert!(human.asked().is_empty());
        close(client, server).await;
    }
    // Nor is a user who could not approve the tool anyway (Sam, staff): his agent's call goes
    // down the ordinary path.
    let sam = Identity::agent("acme", "sam")
        .with_role("staff")
        .with_approval_by_elicitation(true);
    let human = Human::approving(ProtocolVersion::V_2026_07_28);
    let (client, server) = connect(&registry, sam, human.clone()).await;
    let result = call(&client, request(ASSIGN, assignment()))
        .await
        .expect("a result");
    assert_eq!(kind(&result), "category_denied");
    assert!(human.asked().is_empty());
    assert!(proposals(&registry).await.is_empty());
    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_thread_and_project_come_from_meta_and_a_thread_belongs_to_its_first_user() {
    let registry = registry().await;
    let with_scope = |tool: &str, arguments: Value, thread: &str| {
        let mut params = request(tool, arguments);
        let meta: RequestMetaObject = serde_json::from_value(json!({
            THREAD_META_KEY: thread,
            PROJECT_META_KEY: "rollout",
        }))
        .expect("a _meta object");
        params.meta = Some(meta);
        params
    };
    let (client, server) = connect(
        &registry,
        alice(),
        Human::approving(ProtocolVersion::V_2026_07_28),
    )
    .await;
    let result = call(&client, with_scope(ASSIGN, assignment(), "chat-1"))
        .await
        .expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let proposal = only_proposal(&registry).await;
    assert_eq!(
        proposal.proposer.thread_id.as_ref().map(|t| t.as_str()),
        Some("chat-1")
    );
    assert_eq!(
        proposal.proposer.project_id.as_ref().map(|p| p.as_str()),
        Some("rollout")
    );
    let me = call(
        &client,
        with_scope("core_get_current_user", json!({}), "chat-1"),
    )
    .await
    .expect("a result");
    assert_ne!(me.is_error, Some(true), "alice owns chat-1: {me:?}");

    let bad = with_scope("core_get_current_user", json!({}), "no spaces please");
    let message = invalid_params(call_once(&client, bad).await);
    assert!(message.contains(THREAD_META_KEY), "{message}");
    close(client, server).await;

    // Sam, in the same organisation, may not use Alice's thread; his own is opened for him.
    let sam = Identity::agent("acme", "sam").with_role("staff");
    let (client, server) = connect(
        &registry,
        sam,
        Human::approving(ProtocolVersion::V_2026_07_28),
    )
    .await;
    let refused = call(
        &client,
        with_scope("core_get_current_user", json!({}), "chat-1"),
    )
    .await
    .expect("a result");
    assert_eq!(kind(&refused), "thread_not_owned");
    let own = call(
        &client,
        with_scope("core_get_current_user", json!({}), "chat-2"),
    )
    .await
    .expect("a result");
    assert_ne!(own.is_error, Some(true), "{own:?}");
    close(client, server).await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_both_revisions_ask_the_user() {
    // 2026-07-28 over streamable HTTP is stateless: every request gets a fresh handler, so the
    // retry is opened by another handler than the one that sealed its state. 2025-11-25 asks
    // on the call's own event stream, in its session.
    let registry = registry().await;
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let server = bounded("binding", serve_http(registry.clone(), alice(), addr))
        .await
        .expect("serves");
    for (round, version) in [ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25]
        .into_iter()
        .enumerate()
    {
        let human = Human::approving(version.clone());
        let transport = StreamableHttpClientTransport::from_uri(server.url());
        let client = if version >= ProtocolVersion::V_2026_07_28 {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: vec![version.clone()],
            };
            bounded(
                "discovering",
                human.clone().serve_with_lifecycle(transport, lifecycle),
            )
            .await
        } else {
            bounded("initialize", human.clone().serve(transport)).await
        }
        .expect("the client connects");
        let shift = if round == 0 {
            "acme-2026-11-24-pm"
        } else {
            "acme-2026-11-25-am"
        };
        let arguments = json!({"shift_id": shift, "user_id": "sam"});
        let result = call(&client, request(ASSIGN, arguments))
            .await
            .expect("a result");
        assert_ne!(result.is_error, Some(true), "{version:?}: {result:?}");
        assert_eq!(human.asked().len(), 1, "{version:?}");
        assert_eq!(runs(&registry).await, round + 1, "{version:?}");
        bounded("closing the client", client.cancel())
            .await
            .expect("closes");
    }
    bounded("stopping the server", server.shutdown())
        .await
        .expect("stops");
    registry.shutdown().await;
}

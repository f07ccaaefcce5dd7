//! Tools that ask the client, seen from real rmcp clients (protocol 2025-11-25): the
//! conformance domain's `test_elicitation` and `test_sampling` ask while the call waits, and
//! the client answers, declines, dismisses or refuses; a client that did not declare the
//! capability is never asked, and the tool's call fails naming what is missing. The call's one
//! audit record lists each question. Every wait is bounded by `common::LIMIT`.

#![allow(deprecated)] // rmcp 3 marks the MCP sampling types deprecated (SEP-2577).

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
        CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
        ElicitationAction, Implementation, Role, SamplingMessage,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use switchboard_core::ask::{AskKind, AskOutcome};

use crate::{
    approval_support::records_of,
    common::{admin, bounded, close, connect_handler, error_of, registry},
};

/// A client that declares what it is told to, answers forms with `form` and sampling with
/// `sampled` (an error when `None`), and counts what it was asked.
#[derive(Clone)]
struct Person {
    can_elicit: bool,
    can_sample: bool,
    form: ElicitResult,
    sampled: Option<&'static str>,
    asked: Arc<AtomicUsize>,
}

impl Person {
    fn answering(form: ElicitResult) -> Self {
        Self {
            can_elicit: true,
            can_sample: true,
            form,
            sampled: Some("a summary"),
            asked: Arc::default(),
        }
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.can_elicit {
            capabilities.elicitation = ClientCapabilities::builder()
                .enable_elicitation()
                .build()
                .elicitation;
        }
        if self.can_sample {
            capabilities.sampling = ClientCapabilities::builder()
                .enable_sampling()
                .build()
                .sampling;
        }
        ClientConfig::new(capabilities, Implementation::new("person", "1.0"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Ok(self.form.clone())
    }

    async fn create_message(
        &self,
        request: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        assert_eq!(request.max_tokens, 100);
        match self.sampled {
            Some(text) => Ok(CreateMessageResult::new(
                SamplingMessage::new(
                    Role::Assistant,
                    rmcp::model::SamplingMessageContentBlock::text(text),
                ),
                "test-model".to_owned(),
            )),
            None => Err(ErrorData::invalid_request(
                "the user refused to sample",
                None,
            )),
        }
    }
}

async fn call_as(
    person: Person,
    tool: &str,
    arguments: Value,
) -> (CallToolResult, Vec<(AskKind, AskOutcome)>) {
    let registry = registry().await;
    let (client, server) = connect_handler(&registry, admin(), person).await;
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let result = bounded(
        "tools/call",
        client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)),
    )
    .await
    .expect("the call answers");
    close(client, server).await;
    let asks = records_of(&registry, tool)
        .await
        .into_iter()
        .flat_map(|record| record.asks)
        .map(|ask| (ask.kind, ask.outcome))
        .collect();
    (result, asks)
}

fn text_of(result: &CallToolResult) -> String {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.content[0]
        .as_text()
        .map(|text| text.text.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_form_reaches_the_tool_typed_and_the_record_lists_it() {
    let person = Person::answering(
        ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({"username": "sam", "email": "sam@example.com"})),
    );
    let (result, asks) = call_as(
        person.clone(),
        "test_elicitation",
        json!({"message": "Who are you?"}),
    )
    .await;
    assert_eq!(
        text_of(&result),
        r#"User response: action=accept, content={"username":"sam","email":"sam@example.com"}"#
    );
    assert_eq!(person.asked(), 1);
    assert_eq!(asks, [(AskKind::Form, AskOutcome::Accepted)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_or_dismissed_form_is_an_answer_the_tool_handles() {
    for (action, said, outcome) in [
        (
            ElicitationAction::Decline,
            "action=decline",
            AskOutcome::Declined,
        ),
        (
            ElicitationAction::Cancel,
            "action=cancel",
            AskOutcome::Cancelled,
        ),
    ] {
        let person = Person::answering(ElicitResult::new(action));
        let (result, asks) = call_as(
            person,
            "test_elicitation",
            json!({"message": "Who are you?"}),
        )
        .await;
        assert!(text_of(&result).contains(said), "{result:?}");
        assert_eq!(asks, [(AskKind::Form, outcome)]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_does_not_fit_the_form_fails_the_call() {
    let person = Person::answering(
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"username": 7})),
    );
    let (result, _) = call_as(
        person,
        "test_elicitation",
        json!({"message": "Who are you?"}),
    )
    .await;
    assert_eq!(error_of(&result)["code"], "bad_client_answer", "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_elicit_is_never_asked_and_the_error_names_the_capability() {
    let person = Person {
        can_elicit: false,
        ..Person::answering(ElicitResult::new(ElicitationAction::Accept))
    };
    let (result, asks) = call_as(
        person.clone(),
        "test_elicitation",
        json!({"message": "Who?"}),
    )
    .await;
    let error = error_of(&result);
    assert_eq!(error["code"], "client_capability_missing", "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|message| message.contains("elicitation (form mode)")),
        "{error}"
    );
    assert_eq!(person.asked(), 0);
    assert_eq!(asks, [(AskKind::Form, AskOutcome::Failed)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_model_answers_a_sampling_request() {
    let person = Person::answering(ElicitResult::new(ElicitationAction::Cancel));
    let (result, asks) = call_as(person, "test_sampling", json!({"prompt": "Summarise."})).await;
    assert_eq!(text_of(&result), "LLM response: a summary");
    assert_eq!(asks, [(AskKind::Sampling, AskOutcome::Answered)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_sampling_request_or_a_client_without_sampling_fails_the_call() {
    let refusing = Person {
        sampled: None,
        ..Person::answering(ElicitResult::new(ElicitationAction::Cancel))
    };
    let (result, asks) = call_as(refusing, "test_sampling", json!({"prompt": "Summarise."})).await;
    let error = error_of(&result);
    assert_eq!(error["code"], "client_refused", "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|message| message.contains("the user refused to sample")),
        "{error}"
    );
    assert_eq!(asks, [(AskKind::Sampling, AskOutcome::Failed)]);

    let unable = Person {
        can_sample: false,
        ..Person::answering(ElicitResult::new(ElicitationAction::Cancel))
    };
    let (result, _) = call_as(
        unable.clone(),
        "test_sampling",
        json!({"prompt": "Summarise."}),
    )
    .await;
    assert_eq!(error_of(&result)["code"], "client_capability_missing");
    assert_eq!(unable.asked(), 0);
}

mod rounds {
    //! The same tools on protocol 2026-07-28: each question ends the call with an
    //! `input_required` result and a sealed `requestState`, and the answer comes with the next
    //! call.

    use rmcp::model::{CallToolResponse, InputResponses, ProtocolVersion};
    use serde_json::{Value, json};

    use crate::{
        approval_support::{
            Human, call, call_once, connect, input_required, invalid_params, request,
        },
        common::{admin, close, registry},
    };

    fn answered(
        params: &rmcp::model::CallToolRequestParams,
        key: &str,
        answer: Value,
        state: &str,
    ) -> rmcp::model::CallToolRequestParams {
        let mut responses = InputResponses::new();
        responses.insert(key.to_owned(), answer);
        params
            .clone()
            .with_input_responses(responses)
            .with_request_state(state)
    }

    fn text(response: CallToolResponse) -> String {
        match response {
            CallToolResponse::Complete(result) => {
                assert_ne!(result.is_error, Some(true), "{result:?}");
                result.content[0]
                    .as_text()
                    .map(|text| text.text.clone())
                    .unwrap_or_default()
            }
            other => panic!("expected a complete result, got {other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_form_is_asked_in_an_input_required_result_and_answered_by_the_next_call() {
        let registry = registry().await;
        let human = Human::answering(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"username": "sam", "email": "sam@example.com"})),
            ProtocolVersion::V_2026_07_28,
        );
        let (client, server) = connect(&registry, admin(), human.clone()).await;
        let params = request("test_elicitation", json!({"message": "Who are you?"}));

        let first = input_required(&client, params.clone()).await;
        let requests = first.input_requests.clone().expect("questions");
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["ask-1"]);
        let question = serde_json::to_value(&requests["ask-1"]).expect("serialises");
        assert_eq!(question["method"], "elicitation/create", "{question}");
        assert_eq!(question["params"]["message"], "Who are you?", "{question}");
        assert!(first.request_state.is_some());

        // The client drives the rounds itself: it asks its user and calls again.
        let result = call(&client, params).await.expect("a result");
        assert_ne!(result.is_error, Some(true), "{result:?}");
        assert_eq!(
            result.content[0].as_text().map(|text| text.text.as_str()),
            Some(
                r#"User response: action=accept, content={"username":"sam","email":"sam@example.com"}"#
            )
        );
        assert_eq!(human.asked(), ["Who are you?"]);
        close(client, server).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sampling_and_a_second_round_each_get_a_new_state_and_the_answers_of_the_first() {
        let registry = registry().await;
        let human = Human::approving(ProtocolVersion::V_2026_07_28).with_sampling();
        let (client, server) = connect(&registry, admin(), human).await;

        let params = request("test_sampling", json!({"prompt": "Capital of France?"}));
        let first = input_required(&client, params.clone()).await;
        let question = serde_json::to_value(&first.input_requests.expect("questions")["ask-1"])
            .expect("serialises");
        assert_eq!(question["method"], "sampling/createMessage", "{question}");
        assert_eq!(question["params"]["maxTokens"], 100, "{question}");
        let reply = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"});
        let state = first.request_state.expect("a state");
        let done = call_once(&client, answered(&params, "ask-1", reply, &state))
            .await
            .expect("an answer");
        assert_eq!(text(done), "LLM response: Paris");

        let params = request("test_input_required_result_multi_round", json!({}));
        let first = input_required(&client, params.clone()).await;
        let state1 = first.request_state.expect("a state");
        let second = match call_once(
            &client,
            answered(
                &params,
                "step1",
                json!({"action": "accept", "content": {"name": "Ada"}}),
                &state1,
            ),
        )
        .await
        .expect("an answer")
        {
            CallToolResponse::InputRequired(second) => second,
            other => panic!("a second round, got {other:?}"),
        };
        let keys: Vec<_> = second
            .input_requests
            .clone()
            .expect("questions")
            .into_keys()
            .collect();
        assert_eq!(keys, ["step2"]);
        let state2 = second.request_state.expect("a new state");
        assert_ne!(state1, state2);
        // The second state carries the first answer: only step2 is answered now.
        let done = call_once(
            &client,
            answered(
                &params,
                "step2",
                json!({"action": "accept", "content": {"color": "green"}}),
                &state2,
            ),
        )
        .await
        .expect("an answer");
        assert_eq!(text(done), "Ada likes green");
        close(client, server).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tampered_state_or_one_sealed_for_someone_else_is_refused() {
        let registry = registry().await;
        let (alice, alice_server) = connect(
            &registry,
            admin(),
            Human::approving(ProtocolVersion::V_2026_07_28),
        )
        .await;
        let params = request("test_input_required_result_request_state", json!({}));
        let first = input_required(&alice, params.clone()).await;
        let state = first.request_state.expect("a state");
        let yes = json!({"action": "accept", "content": {"ok": true}});

        let tampered = format!("{state}x");
        let message = invalid_params(
            call_once(&alice, answered(&params, "confirm", yes.clone(), &tampered)).await,
        );
        assert!(message.contains("requestState"), "{message}");

        let bob = switchboard_mcp::Identity::agent("acme", "bob").with_role("admin");
        let (bob, bob_server) = connect(
            &registry,
            bob,
            Human::approving(ProtocolVersion::V_2026_07_28),
        )
        .await;
        invalid_params(call_once(&bob, answered(&params, "confirm", yes.clone(), &state)).await);

        // Another tool's call cannot use it either (the state is bound to the request).
        let other = request("test_input_required_result_tampered_state", json!({}));
        invalid_params(call_once(&alice, answered(&other, "confirm", yes.clone(), &state)).await);

        let done = call_once(&alice, answered(&params, "confirm", yes, &state))
            .await
            .expect("an answer");
        assert_eq!(text(done), "state-ok: confirmed=true");
        close(alice, alice_server).await;
        close(bob, bob_server).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_declares_no_sampling_is_not_asked_for_it_but_gets_the_missing_capability_error()
     {
        let registry = registry().await;
        let (client, server) = connect(
            &registry,
            admin(),
            Human::approving(ProtocolVersion::V_2026_07_28),
        )
        .await;
        for tool in ["test_sampling", "test_missing_capability"] {
            let arguments = if tool == "test_sampling" {
                json!({"prompt": "Hi"})
            } else {
                json!({})
            };
            match call_once(&client, request(tool, arguments)).await {
                Err(rmcp::service::ServiceError::McpError(error)) => {
                    assert_eq!(
                        error.code,
                        rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                        "{tool}: {error:?}"
                    );
                    let data = error.data.expect("data");
                    assert_eq!(
                        data["requiredCapabilities"],
                        json!({"sampling": {}}),
                        "{tool}"
                    );
                }
                other => panic!("{tool}: expected -32021, got {other:?}"),
            }
        }
        close(client, server).await;
    }
}

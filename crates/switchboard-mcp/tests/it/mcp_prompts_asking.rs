//! A prompt that asks the client, seen from real rmcp clients: the conformance domain's
//! `test_input_required_result_prompt` asks the person for a context through the same asker a
//! tool call gets. On 2025-11-25 the question is a request to the client while the get waits;
//! on 2026-07-28 the first get ends with an `input_required` result and a sealed
//! `requestState`, and the answer comes with the next get; a state altered or sealed for
//! another prompt does not open, and a client that cannot answer forms gets `-32021`.

use rmcp::model::{
    ElicitResult, ElicitationAction, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InputResponses, ProtocolVersion,
};
use rmcp::service::ServiceError;
use serde_json::json;

use crate::{
    approval_support::{Client, Human, connect},
    common::{admin, bounded, close, registry},
};

const PROMPT: &str = "test_input_required_result_prompt";
const QUESTION: &str = "What context should the prompt use?";

fn said(result: &GetPromptResult) -> String {
    let message = serde_json::to_value(&result.messages[0]).expect("serialises");
    message["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn answering(context: &str, version: ProtocolVersion) -> Human {
    Human::answering(
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"context": context})),
        version,
    )
}

async fn get_once(
    client: &Client,
    params: GetPromptRequestParams,
) -> Result<GetPromptResponse, ServiceError> {
    bounded("one prompts/get round", client.get_prompt_once(params)).await
}

fn retry(params: &GetPromptRequestParams, context: &str, state: &str) -> GetPromptRequestParams {
    let mut responses = InputResponses::new();
    responses.insert(
        "ask-1".to_owned(),
        json!({"action": "accept", "content": {"context": context}}),
    );
    let mut retried = params.clone();
    retried.input_responses = Some(responses);
    retried.request_state = Some(state.to_owned());
    retried
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2025_11_25_the_prompt_asks_the_client_while_the_get_waits() {
    let registry = registry().await;
    let human = answering("sales", ProtocolVersion::V_2025_11_25);
    let (client, server) = connect(&registry, admin(), human.clone()).await;
    let result = bounded(
        "prompts/get",
        client.get_prompt(GetPromptRequestParams::new(PROMPT)),
    )
    .await
    .expect("rendered");
    assert_eq!(said(&result), "Prompt with context: sales");
    assert_eq!(human.asked(), [QUESTION]);
    close(client, server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2026_07_28_the_prompt_asks_in_an_input_required_result_answered_by_the_next_get() {
    let registry = registry().await;
    let human = answering("support", ProtocolVersion::V_2026_07_28);
    let (client, server) = connect(&registry, admin(), human.clone()).await;
    let params = GetPromptRequestParams::new(PROMPT);

    let first = match get_once(&client, params.clone()).await.expect("an answer") {
        GetPromptResponse::InputRequired(first) => first,
        other => panic!("expected input_required, got {other:?}"),
    };
    let question = serde_json::to_value(&first.input_requests.clone().expect("questions")["ask-1"])
        .expect("serialises");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(question["params"]["message"], QUESTION, "{question}");
    assert_eq!(
        question["params"]["requestedSchema"]["required"],
        json!(["context"]),
        "{question}"
    );
    let state = first.request_state.expect("a sealed state");

    let done = get_once(&client, retry(&params, "billing", &state))
        .await
        .expect("an answer");
    let GetPromptResponse::Complete(result) = done else {
        panic!("expected the rendered prompt, got {done:?}");
    };
    assert_eq!(said(&result), "Prompt with context: billing");

    // rmcp's client drives the rounds itself, asking its user.
    let result = bounded("prompts/get", client.get_prompt(params))
        .await
        .expect("rendered");
    assert_eq!(said(&result), "Prompt with context: support");
    assert_eq!(human.asked(), [QUESTION]);
    close(client, server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_altered_state_or_one_sealed_for_another_prompt_does_not_open() {
    let registry = registry().await;
    let (client, server) = connect(
        &registry,
        admin(),
        answering("x", ProtocolVersion::V_2026_07_28),
    )
    .await;
    let params = GetPromptRequestParams::new(PROMPT);
    let GetPromptResponse::InputRequired(first) =
        get_once(&client, params.clone()).await.expect("an answer")
    else {
        panic!("expected input_required");
    };
    let state = first.request_state.expect("a sealed state");
    let refused_code = |outcome: Result<GetPromptResponse, ServiceError>| match outcome {
        Err(ServiceError::McpError(error)) => error.code,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    };
    let altered = format!("{state}x");
    assert_eq!(
        refused_code(get_once(&client, retry(&params, "x", &altered)).await),
        ErrorCode::INVALID_PARAMS
    );
    let other = GetPromptRequestParams::new("test_simple_prompt");
    assert_eq!(
        refused_code(get_once(&client, retry(&other, "x", &state)).await),
        ErrorCode::INVALID_PARAMS
    );
    close(client, server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_2026_07_28_a_client_that_cannot_answer_forms_gets_the_missing_capability_error() {
    let registry = registry().await;
    let human = Human::without_elicitation(ProtocolVersion::V_2026_07_28);
    let (client, server) = connect(&registry, admin(), human.clone()).await;
    match get_once(&client, GetPromptRequestParams::new(PROMPT)).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
            let data = error.data.expect("data");
            assert!(
                data["requiredCapabilities"]["elicitation"].is_object(),
                "{data}"
            );
        }
        other => panic!("expected -32021, got {other:?}"),
    }
    assert!(human.asked().is_empty());
    close(client, server).await;
}

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

//! The link: what reaches a handler, what is logged, and what a tool sees without one.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::digest::digest_of;

/// Answers every form with fixed content and every sampling request with its prompt echoed.
struct Echo {
    action: ElicitAction,
}

impl ClientHandler for Echo {
    fn elicit<'a>(
        &'a self,
        _request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, AskError>> {
        let reply = ElicitReply {
            action: self.action,
            content: (self.action == ElicitAction::Accept).then(|| json!({"swap": true})),
        };
        Box::pin(async move { Ok(reply) })
    }

    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, AskError>> {
        Box::pin(async move {
            let said = request.messages[0].content.as_text().unwrap_or_default();
            Ok(Sampled {
                role: SampleRole::Assistant,
                content: SampleContent::text(format!("you said: {said}")),
                model: "echo".to_owned(),
                stop_reason: Some("endTurn".to_owned()),
            })
        })
    }
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    swap: bool,
}

fn block<F: std::future::Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

#[test]
fn without_a_link_every_question_fails_naming_what_was_needed_and_logs_nothing() {
    let link = ClientLink::none();
    let error = block(elicit_typed::<Confirm>(&link, "swap?")).expect_err("nobody to ask");
    assert_eq!(
        error,
        AskError::NoClient {
            capability: Capability::ElicitationForm
        }
    );
    assert!(
        error
            .to_string()
            .contains("RegistryBuilder::client_handler")
    );
    let error = block(link.sample(&SampleRequest::new("hi", 10))).expect_err("nobody to ask");
    assert_eq!(ToolError::from(error).code(), "client_missing");
    assert!(link.asked().is_empty());
}

#[test]
fn an_accepted_form_is_read_as_its_type_and_logged_as_digests() {
    let link = ClientLink::new(Arc::new(Echo {
        action: ElicitAction::Accept,
    }));
    let answer = block(elicit_typed::<Confirm>(&link, "swap?")).expect("answered");
    assert_eq!(answer, Answer::Accepted(Confirm { swap: true }));
    let asked = link.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].kind, AskKind::Form);
    assert_eq!(asked[0].outcome, AskOutcome::Accepted);
    assert!(asked[0].request_hash.is_some());
    assert_eq!(
        asked[0].answer_hash,
        Some(digest_of(&json!({"swap": true})).expect("digest"))
    );
}

#[test]
fn a_declined_or_cancelled_form_is_an_answer_not_an_error() {
    for (action, expected, outcome) in [
        (
            ElicitAction::Decline,
            Answer::Declined,
            AskOutcome::Declined,
        ),
        (
            ElicitAction::Cancel,
            Answer::Cancelled,
            AskOutcome::Cancelled,
        ),
    ] {
        let link = ClientLink::new(Arc::new(Echo { action }));
        let answer = block(elicit_typed::<Confirm>(&link, "swap?")).expect("answered");
        assert_eq!(answer, expected);
        assert_eq!(link.asked()[0].outcome, outcome);
        assert_eq!(link.asked()[0].answer_hash, None);
    }
}

#[test]
fn an_answer_of_the_wrong_shape_is_a_bad_answer() {
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Named {
        #[expect(dead_code, reason = "read only to fail")]
        name: String,
    }
    let link = ClientLink::new(Arc::new(Echo {
        action: ElicitAction::Accept,
    }));
    let error = block(elicit_typed::<Named>(&link, "name?")).expect_err("no name came back");
    assert!(matches!(error, AskError::BadAnswer(_)), "{error:?}");
    assert_eq!(link.asked()[0].outcome, AskOutcome::Accepted);
}

#[test]
fn sampling_reaches_the_handler_and_is_logged() {
    let link = ClientLink::new(Arc::new(Echo {
        action: ElicitAction::Accept,
    }));
    let sampled = block(link.sample(&SampleRequest::new("hello", 50))).expect("answered");
    assert_eq!(sampled.text(), Some("you said: hello"));
    let asked = link.asked();
    assert_eq!(
        (asked[0].kind, asked[0].outcome),
        (AskKind::Sampling, AskOutcome::Answered)
    );
}

#[test]
fn links_never_differ_and_serialise_as_nothing() {
    let active = ClientLink::new(Arc::new(Echo {
        action: ElicitAction::Accept,
    }));
    assert_eq!(active, ClientLink::none());
    assert_eq!(format!("{active:?}"), "ClientLink { active: true }");
    let request = Elicitation::Url {
        message: "pay".to_owned(),
        url: "https://example.com/pay".to_owned(),
        elicitation_id: "e1".to_owned(),
    };
    assert_eq!(request.capability(), Capability::ElicitationUrl);
    let json: Value = serde_json::to_value(&request).expect("serialises");
    assert_eq!(json["mode"], "url");
}

/// Counts the tasks it is asked to begin, and refuses while `open` says a question is open.
struct Beginner {
    begun: std::sync::atomic::AtomicUsize,
    open: bool,
}

impl ClientHandler for Beginner {
    fn elicit<'a>(
        &'a self,
        _request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, AskError>> {
        Box::pin(async { Err(AskError::Refused("not asked here".to_owned())) })
    }

    fn sample<'a>(
        &'a self,
        _request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, AskError>> {
        Box::pin(async { Err(AskError::Refused("not asked here".to_owned())) })
    }

    fn begin_task(&self) -> BoxFuture<'_, Result<(), AskError>> {
        Box::pin(async move {
            if self.open {
                return Err(AskError::InputRequired {
                    keys: vec!["ask-1".to_owned()],
                });
            }
            self.begun
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        })
    }
}

#[test]
fn begin_task_returns_at_once_without_a_link_or_a_handler_that_begins_tasks() {
    block(ClientLink::none().begin_task()).expect("nothing to begin");
    let echo = ClientLink::new(Arc::new(Echo {
        action: ElicitAction::Accept,
    }));
    block(echo.begin_task()).expect("a handler without tasks has nothing to begin");
    assert!(echo.asked().is_empty(), "beginning a task asks nothing");
}

#[test]
fn begin_task_reaches_the_handler_that_begins_tasks_and_passes_its_refusal_on() {
    let handler = Arc::new(Beginner {
        begun: std::sync::atomic::AtomicUsize::new(0),
        open: false,
    });
    let link = ClientLink::new(Arc::clone(&handler) as Arc<dyn ClientHandler>);
    block(link.begin_task()).expect("begun");
    assert_eq!(handler.begun.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert!(link.asked().is_empty(), "beginning a task asks nothing");

    let open = ClientLink::new(Arc::new(Beginner {
        begun: std::sync::atomic::AtomicUsize::new(0),
        open: true,
    }));
    let error = block(open.begin_task()).expect_err("a question is open");
    assert_eq!(ToolError::from(error).code(), "input_required");
}

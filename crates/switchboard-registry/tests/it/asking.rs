//! Tools that ask the client: where a question goes, what the tool sees without anyone to ask,
//! and what the call's one audit record says about it. The `asker` domain is defined here.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use serde::Deserialize;
use serde_json::json;
use switchboard_core::{
    BoxFuture, CallContext, InvokeError, NoInput, ToolContext, ToolError,
    ask::{
        Answer, AskError, AskKind, AskOutcome, ClientHandler, ClientLink, ElicitAction,
        ElicitReply, Elicitation, SampleContent, SampleRequest, SampleRole, Sampled,
    },
    tool,
};
use switchboard_registry::ToolRegistry;

use crate::common::{PATIENCE, admin_context, invoke, only_record_of};

switchboard_core::domain! {
    /// Tools that ask the person or the model at the client.
    Asker { name: "asker" }
}

/// A yes-or-no question.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct GoAhead {
    /// Tick to go ahead.
    go: bool,
}

/// Asks the person whether to go ahead.
#[tool(domain = Asker, category = read, permission = "asker.ask")]
async fn confirm(ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok(match ctx.elicit::<GoAhead>("Go ahead?").await? {
        Answer::Accepted(form) => format!("go: {}", form.go),
        Answer::Declined => "declined".to_owned(),
        Answer::Cancelled => "cancelled".to_owned(),
    })
}

/// Asks the model for a word.
#[tool(domain = Asker, category = read, permission = "asker.ask")]
async fn word(ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    let sampled = ctx
        .sample(&SampleRequest::new("One word, please.", 5))
        .await?;
    Ok(sampled.text().unwrap_or_default().to_owned())
}

/// Answers forms with `go: true` and sampling with `word`, counting the questions.
struct Handler {
    word: &'static str,
    asked: AtomicUsize,
}

impl Handler {
    fn new(word: &'static str) -> Arc<Self> {
        Arc::new(Self {
            word,
            asked: AtomicUsize::new(0),
        })
    }
}

impl ClientHandler for Handler {
    fn elicit<'a>(
        &'a self,
        _request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, AskError>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            Ok(ElicitReply {
                action: ElicitAction::Accept,
                content: Some(json!({"go": true})),
            })
        })
    }

    fn sample<'a>(
        &'a self,
        _request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, AskError>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            Ok(Sampled {
                role: SampleRole::Assistant,
                content: SampleContent::text(self.word),
                model: "test-model".to_owned(),
                stop_reason: None,
            })
        })
    }
}

async fn started(builder: switchboard_registry::RegistryBuilder) -> ToolRegistry {
    builder
        .start()
        .await
        .expect("the test tools are well formed")
}

#[tokio::test]
async fn without_a_client_a_question_fails_the_call_with_client_missing() {
    let registry = started(ToolRegistry::builder()).await;
    let error = invoke(&registry, "asker_confirm", "ask-none")
        .await
        .expect_err("nobody to ask");
    let InvokeError::ToolFailed { error, .. } = &error else {
        panic!("a tool error, not {error:?}");
    };
    assert_eq!(error.code(), "client_missing");
    assert!(error.message().contains("client_handler"), "{error:?}");
    let record = only_record_of(&registry, "ask-none").await;
    assert!(record.asks.is_empty(), "nothing reached a client");
}

#[tokio::test]
async fn the_registrys_handler_answers_and_the_record_lists_the_question() {
    let handler = Handler::new("blue");
    let registry = started(ToolRegistry::builder().client_handler(handler.clone())).await;
    assert_eq!(
        invoke(&registry, "asker_confirm", "ask-form").await,
        Ok(json!("go: true"))
    );
    let record = only_record_of(&registry, "ask-form").await;
    assert_eq!(record.asks.len(), 1);
    assert_eq!(
        (record.asks[0].kind, record.asks[0].outcome),
        (AskKind::Form, AskOutcome::Accepted)
    );
    assert!(record.asks[0].answer_hash.is_some());

    assert_eq!(
        invoke(&registry, "asker_word", "ask-model").await,
        Ok(json!("blue"))
    );
    let record = only_record_of(&registry, "ask-model").await;
    assert_eq!(
        (record.asks[0].kind, record.asks[0].outcome),
        (AskKind::Sampling, AskOutcome::Answered)
    );
    assert_eq!(handler.asked.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_client_the_caller_brings_answers_instead_of_the_registrys() {
    let registrys = Handler::new("registry");
    let callers = Handler::new("caller");
    let registry = started(ToolRegistry::builder().client_handler(registrys.clone())).await;
    let context: CallContext = {
        let mut context = admin_context("ask-own");
        context.client = ClientLink::new(callers.clone());
        context
    };
    let answer = tokio::time::timeout(PATIENCE, registry.invoke("asker_word", json!({}), &context))
        .await
        .expect("the call answers");
    assert_eq!(answer, Ok(json!("caller")));
    assert_eq!(registrys.asked.load(Ordering::SeqCst), 0);
    assert_eq!(callers.asked.load(Ordering::SeqCst), 1);
    assert_eq!(only_record_of(&registry, "ask-own").await.asks.len(), 1);
}

/// Asks whether to go ahead, then reports what it would change.
#[tool(domain = Asker, category = execute, permission = "asker.apply")]
async fn apply(ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    let answer = ctx.elicit::<GoAhead>("Apply?").await?;
    Ok(format!(
        "applied: {}",
        answer.accepted().is_some_and(|form| form.go)
    ))
}

/// A client answered in rounds: the first time it has no answer yet (the call must end so it
/// can answer), the next time it has one.
struct Rounds {
    answered: bool,
    waiting: std::sync::atomic::AtomicBool,
}

impl ClientHandler for Rounds {
    fn elicit<'a>(
        &'a self,
        _request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, AskError>> {
        Box::pin(async move {
            if !self.answered {
                self.waiting.store(true, Ordering::SeqCst);
                return Err(AskError::InputRequired {
                    keys: vec!["ask-1".to_owned()],
                });
            }
            Ok(ElicitReply {
                action: ElicitAction::Accept,
                content: Some(json!({"go": true})),
            })
        })
    }

    fn sample<'a>(
        &'a self,
        _request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, AskError>> {
        Box::pin(async { Err(AskError::Refused("no model".to_owned())) })
    }

    fn awaits_input(&self) -> bool {
        self.waiting.load(Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_mutation_that_waits_for_its_clients_answer_leaves_its_key_to_the_next_round() {
    let registry = started(ToolRegistry::builder()).await;
    let round = |answered: bool, correlation: &str| {
        let mut context = admin_context(correlation);
        context.idempotency_key = Some("apply-once".into());
        context.client = ClientLink::new(Arc::new(Rounds {
            answered,
            waiting: std::sync::atomic::AtomicBool::new(false),
        }));
        context
    };
    let first = tokio::time::timeout(
        PATIENCE,
        registry.invoke("asker_apply", json!({}), &round(false, "round-1")),
    )
    .await
    .expect("the call answers")
    .expect_err("the client has not answered yet");
    let InvokeError::ToolFailed { error, .. } = &first else {
        panic!("a tool error, not {first:?}");
    };
    assert_eq!(error.code(), "input_required");
    let record = only_record_of(&registry, "round-1").await;
    assert_eq!(record.asks[0].outcome, AskOutcome::Pending);

    let second = tokio::time::timeout(
        PATIENCE,
        registry.invoke("asker_apply", json!({}), &round(true, "round-2")),
    )
    .await
    .expect("the call answers");
    assert_eq!(
        second,
        Ok(json!("applied: true")),
        "the key was left for this round"
    );
}

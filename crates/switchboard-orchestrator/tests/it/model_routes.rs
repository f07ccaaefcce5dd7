//! Tier 2: an utterance no intent matches, routed by the model of the caller's client (here the
//! registry's client handler, as an embedding service installs one). The chosen call goes
//! through every check; a mutation chosen so becomes a proposal; a client without a model, a
//! model that answers nonsense or names a tool the caller may not use, leave it unrouted.

use std::{borrow::Cow, sync::Arc};

use serde_json::{Value, json};
use switchboard_core::{
    BoxFuture, CallContext, Category, Initiator, ToolContext, ToolDescriptor, ToolError,
    ToolOrigin,
    ask::{
        AskError as ClientError, Capability, ClientHandler, ElicitReply, Elicitation,
        SampleContent, SampleRequest, SampleRole, Sampled,
    },
};
use switchboard_orchestrator::{AskError, MODEL_TIER, Orchestrator, OrchestratorConfig};
use switchboard_registry::{
    Exposure, PermissionMatrix, RuntimeTool, RuntimeToolSpec, ToolRegistry,
};

/// Answers with the params it was called with.
struct Echo;

impl RuntimeTool for Echo {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { Ok(json!({ "params": params })) })
    }
}

fn tool(name: &'static str, category: Category, permission: &'static str) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Borrowed(name),
            title: None,
            domain: Cow::Borrowed("notes"),
            category,
            permission: Cow::Borrowed(permission),
            description: Cow::Borrowed("Reads or writes the team's notes."),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: None,
            input_schema: Arc::new(json!({
                "type": "object",
                "properties": {"topic": {"type": "string"}},
                "additionalProperties": false
            })),
            output_schema: None,
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "orchestrator-test".to_owned(),
            },
        },
        tool: Arc::new(Echo),
        exposure: Exposure::Listed,
    }
}

/// A client whose model answers every request with `answer`, or has no model at all.
struct Model {
    answer: Option<&'static str>,
}

impl ClientHandler for Model {
    fn elicit<'a>(
        &'a self,
        _request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, ClientError>> {
        Box::pin(async {
            Err(ClientError::Unsupported {
                capability: Capability::ElicitationForm,
            })
        })
    }

    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, ClientError>> {
        Box::pin(async move {
            let prompt = request.messages[0].content.as_text().unwrap_or_default();
            assert!(
                prompt.contains("notes_read"),
                "the model sees the tools: {prompt}"
            );
            assert!(
                !prompt.contains("notes_purge"),
                "but only those the caller may use"
            );
            let answer = self.answer.unwrap_or_default();
            Ok(Sampled {
                role: SampleRole::Assistant,
                content: SampleContent::text(answer),
                model: "test-model".to_owned(),
                stop_reason: None,
            })
        })
    }

    fn can(&self, capability: Capability) -> bool {
        capability == Capability::Sampling && self.answer.is_some()
    }
}

async fn orchestrator(answer: Option<&'static str>, model_routes: bool) -> Orchestrator {
    let permissions =
        PermissionMatrix::from_toml("[roles]\nwriter = [\"notes.read\", \"notes.write\"]\n")
            .expect("the test matrix parses");
    let registry = ToolRegistry::builder()
        .permissions(permissions)
        .client_handler(Arc::new(Model { answer }))
        .start()
        .await
        .expect("the registry starts");
    registry
        .register(vec![
            tool("notes_read", Category::Read, "notes.read"),
            tool("notes_write", Category::Execute, "notes.write"),
            tool("notes_purge", Category::Restricted, "notes.purge"),
        ])
        .await
        .expect("the tools register");
    let config = OrchestratorConfig {
        model_routes,
        ..OrchestratorConfig::default()
    };
    Orchestrator::start_with(registry, config)
        .await
        .expect("the orchestrator starts")
}

fn writer() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("ann")
        .session("session-ann")
        .correlation("model-routes")
        .role("writer")
        .initiator(Initiator::Human)
        .build()
}

const UTTERANCE: &str = "what did we decide about the offsite";

#[tokio::test]
async fn the_clients_model_routes_what_no_intent_matches_as_tier_2() {
    let orchestrator = orchestrator(
        Some(
            "Sure:\n```json\n{\"tool\": \"notes_read\", \"params\": {\"topic\": \"offsite\"}}\n```",
        ),
        true,
    )
    .await;
    let answer = orchestrator
        .ask(UTTERANCE, &writer())
        .await
        .expect("routed");
    assert_eq!(answer.route.tool, "notes_read");
    assert_eq!(answer.route.tier, MODEL_TIER);
    assert_eq!(answer.route.cost, 0.0);
    assert_eq!(answer.result, json!({"params": {"topic": "offsite"}}));
}

#[tokio::test]
async fn a_mutation_the_model_chose_becomes_a_proposal_even_for_a_human() {
    let orchestrator = orchestrator(
        Some(r#"{"tool": "notes_write", "params": {"topic": "offsite"}}"#),
        true,
    )
    .await;
    match orchestrator.ask(UTTERANCE, &writer()).await {
        Err(AskError::AwaitingApproval { route, proposal }) => {
            assert_eq!(route.tier, MODEL_TIER);
            assert_eq!(&*proposal.tool, "notes_write");
        }
        other => panic!("a proposal, not {other:?}"),
    }
}

#[tokio::test]
async fn no_model_nonsense_a_forbidden_tool_or_the_switch_off_leave_it_unrouted() {
    for (answer, model_routes) in [
        (None, true),
        (Some("I would use the notes."), true),
        (Some(r#"{"tool": "notes_purge", "params": {}}"#), true),
        (Some(r#"{"tool": null}"#), true),
        (Some(r#"{"tool": "notes_read", "params": {}}"#), false),
    ] {
        let orchestrator = orchestrator(answer, model_routes).await;
        match orchestrator.ask(UTTERANCE, &writer()).await {
            Err(AskError::NoRoute { .. }) => {}
            other => panic!("{answer:?} (model routes {model_routes}): no_route, not {other:?}"),
        }
    }
}

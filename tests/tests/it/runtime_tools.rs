//! Tools registered at run time (as a remote MCP server's tools would be): a hand-written JSON
//! schema instead of a Rust input type, and the same checks, validation and audit as a linked
//! tool.
//!
//! Registration is refused whole when a name is taken; unregistering removes the tool; and the
//! Orchestrator rebuilds its routes when the registry's tools change, so a run-time tool's
//! intents become routable shortly after it is registered. That rebuild is asynchronous, so the
//! tests that depend on it poll, briefly and with a bound.

use std::{borrow::Cow, sync::Arc};

use serde_json::{Value, json};
use switchboard::{
    AskError, Category, ErrorKind, Initiator, InvokeError, Orchestrator, ToolContext,
    ToolDescriptor, ToolError,
    registry::{RegistryError, RuntimeTool, RuntimeToolSpec},
};
use switchboard_core::{BoxFuture, ToolOrigin};
use switchboard_integration_tests::{boot, ctx, eventually, only_audit_record, recorrelated};

const TOOL: &str = "calc_double";
const SOURCE: &str = "integration-test";

/// Doubles `n`, and says for which organisation it did so.
struct Doubler;

impl RuntimeTool for Doubler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            // The registry validated `params` against the schema: `n` is an integer.
            let n = params["n"]
                .as_i64()
                .ok_or_else(|| ToolError::new("bad_params", "`n` is not an integer"))?;
            Ok(json!({
                "doubled": n * 2,
                "label": params.get("label").cloned().unwrap_or(Value::Null),
                "org_id": ctx.caller().org_id.as_str(),
            }))
        })
    }
}

/// The input schema of `calc_double`: a required integer `n` and an optional short `label`.
fn double_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": -1000000, "maximum": 1000000},
            "label": {"type": "string", "maxLength": 8}
        },
        "required": ["n"],
        "additionalProperties": false
    })
}

fn descriptor(name: &str, input_schema: Value, intents: &[&'static str]) -> ToolDescriptor {
    ToolDescriptor {
        name: Cow::Owned(name.to_owned()),
        title: Some(Cow::Borrowed("Double a number")),
        domain: Cow::Borrowed("calc"),
        category: Category::Read,
        permission: Cow::Borrowed("calc.double"),
        description: Cow::Borrowed("Doubles an integer."),
        intents: intents
            .iter()
            .map(|intent| Cow::Borrowed(*intent))
            .collect(),
        tags: Vec::new(),
        timeout: None,
        input_schema: Arc::new(input_schema),
        output_schema: None,
        tasks: switchboard_core::TaskSupport::Forbidden,
        asks_before_task: false,
        origin: ToolOrigin::Runtime {
            source: SOURCE.to_owned(),
        },
    }
}

fn doubler(name: &str, intents: &[&'static str]) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: descriptor(name, double_schema(), intents),
        tool: Arc::new(Doubler),
        exposure: switchboard::Exposure::Listed,
    }
}

/// Whether `utterance` comes to route (`want_route`) or not within the bound of [`eventually`].
async fn routes_eventually(orchestrator: &Orchestrator, utterance: &str, want_route: bool) -> bool {
    let context = ctx("acme", "alice", &["admin"], Initiator::Human);
    eventually(|| async { orchestrator.route(utterance, &context).await.is_ok() == want_route })
        .await
}

#[tokio::test]
async fn a_registered_tool_runs_with_the_callers_org_and_is_audited() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    registry
        .register(vec![doubler(TOOL, &[])])
        .await
        .expect("a new name registers");

    let found = registry.find(TOOL).expect("the tool is listed");
    assert_eq!(
        found.origin,
        ToolOrigin::Runtime {
            source: SOURCE.to_owned()
        }
    );
    assert!(
        registry
            .list_by_domain("calc")
            .iter()
            .any(|tool| tool.name == TOOL)
    );
    assert!(
        registry
            .domains()
            .iter()
            .any(|domain| domain.name == "calc" && domain.running),
        "registering creates and starts the tool's domain"
    );

    let alice = ctx("acme", "alice", &["admin"], Initiator::Agent);
    let doubled = registry
        .invoke(TOOL, json!({"n": 21, "label": "answer"}), &alice)
        .await
        .expect("valid params run the tool");

    assert_eq!(
        doubled,
        json!({"doubled": 42, "label": "answer", "org_id": "acme"})
    );
    let record = only_audit_record(registry, &alice).await;
    assert_eq!(&*record.tool, TOOL);
    assert_eq!(record.domain.as_deref(), Some("calc"));
    assert_eq!(record.category, Some(Category::Read));
    assert!(record.outcome.is_ok());
    assert_eq!(
        record.output_hash,
        Some(switchboard::audit::digest_json(&doubled).expect("JSON has a digest"))
    );

    // A run-time tool needs its permission like any other: staff lack `calc.double`.
    let sam = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let error = registry
        .invoke(TOOL, json!({"n": 1}), &sam)
        .await
        .expect_err("staff may not double");
    assert_eq!(error.kind(), ErrorKind::PermissionDenied);
    runtime.shutdown().await;
}

#[tokio::test]
async fn schema_violations_are_reported_all_at_once_with_json_pointers() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    registry
        .register(vec![doubler(TOOL, &[])])
        .await
        .expect("registers");
    let alice = ctx("acme", "alice", &["admin"], Initiator::Agent);

    let error = registry
        .invoke(
            TOOL,
            json!({"n": "twenty-one", "label": "far too long a label", "extra": 1}),
            &alice,
        )
        .await
        .expect_err("three problems");

    let InvokeError::InvalidInput { tool, errors } = &error else {
        panic!("expected invalid_input, got {error:?}");
    };
    assert_eq!(tool, TOOL);
    let paths: Vec<&str> = errors.iter().map(|error| error.path.as_str()).collect();
    // Each problem is reported at its own field, `extra` (which the schema does not take) too.
    assert!(paths.contains(&"/n"), "{errors:?}");
    assert!(paths.contains(&"/label"), "{errors:?}");
    assert!(
        errors.iter().any(
            |error| error.path == "/extra" && error.reason.starts_with("unknown field `extra`")
        ),
        "{errors:?}"
    );
    assert!(errors.len() >= 3, "{errors:?}");
    let record = only_audit_record(registry, &alice).await;
    assert_eq!(record.outcome.as_str(), "invalid_input");

    let missing = recorrelated(alice.clone());
    let error = registry
        .invoke(TOOL, json!({}), &missing)
        .await
        .expect_err("`n` is required");
    let InvokeError::InvalidInput { errors, .. } = &error else {
        panic!("expected invalid_input, got {error:?}");
    };
    assert!(
        errors.iter().any(|error| error.reason.contains("\"n\"")),
        "the missing field is named: {errors:?}"
    );
    assert_eq!(
        only_audit_record(registry, &missing).await.outcome.as_str(),
        "invalid_input"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn an_org_id_in_a_runtime_tools_params_is_refused_and_audited() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    registry
        .register(vec![doubler(TOOL, &[])])
        .await
        .expect("registers");
    let alice = ctx("acme", "alice", &["admin"], Initiator::Agent);

    let error = registry
        .invoke(TOOL, json!({"n": 1, "org_id": "globex"}), &alice)
        .await
        .expect_err("the org comes from the context only");

    assert_eq!(
        error,
        InvokeError::OrgIdNotAllowed {
            path: "/org_id".to_owned()
        }
    );
    let record = only_audit_record(registry, &alice).await;
    assert_eq!(record.outcome.as_str(), "org_id_not_allowed");
    assert_eq!(record.org_id.as_ref().map(|id| id.as_str()), Some("acme"));
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_schema_that_accepts_an_org_id_is_refused_at_registration() {
    let runtime = boot().await;
    let schema = json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}, "orgId": {"type": "string"}},
        "required": ["n"]
    });

    let error = runtime
        .registry
        .register(vec![RuntimeToolSpec {
            descriptor: descriptor(TOOL, schema, &[]),
            tool: Arc::new(Doubler),
            exposure: switchboard::Exposure::Listed,
        }])
        .await
        .expect_err("an org id in the schema is refused");

    assert!(
        matches!(&error, RegistryError::OrgIdInSchema { tool, .. } if tool == TOOL),
        "{error:?}"
    );
    assert!(runtime.registry.find(TOOL).is_none());
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_domain_with_state_is_refused_to_runtime_tools() {
    let runtime = boot().await;
    let mut spec = doubler(TOOL, &[]);
    spec.descriptor.domain = Cow::Borrowed("roster");

    let error = runtime
        .registry
        .register(vec![spec])
        .await
        .expect_err("the roster domain has state");

    assert!(
        matches!(&error, RegistryError::StatefulDomain { tool, domain } if tool == TOOL && domain == "roster"),
        "{error:?}"
    );
    assert!(error.to_string().contains("a domain of its own"), "{error}");
    assert!(runtime.registry.find(TOOL).is_none());
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_taken_name_is_refused_naming_both_tools_and_the_batch_is_dropped() {
    let runtime = boot().await;
    let registry = &runtime.registry;

    let error = registry
        .register(vec![
            doubler("calc_fresh", &[]),
            doubler("core_get_current_user", &[]),
        ])
        .await
        .expect_err("the name is taken by a linked tool");

    let RegistryError::DuplicateTool {
        name,
        first,
        second,
    } = &error
    else {
        panic!("expected DuplicateTool, got {error:?}");
    };
    assert_eq!(name, "core_get_current_user");
    assert!(
        first.contains("switchboard-domain-directory") && first.contains("tools.rs"),
        "the linked tool is named by its source location: {first}"
    );
    assert!(
        second.contains(SOURCE),
        "the run-time tool is named by its source: {second}"
    );
    let message = error.to_string();
    assert!(
        message.contains(first.as_str()) && message.contains(second.as_str()),
        "{message}"
    );
    assert!(
        registry.find("calc_fresh").is_none(),
        "a refused batch registers nothing"
    );
    let linked = registry
        .find("core_get_current_user")
        .expect("the linked tool stays");
    assert!(matches!(linked.origin, ToolOrigin::Linked { .. }));

    // Registering the same run-time name twice is refused the same way.
    registry
        .register(vec![doubler(TOOL, &[])])
        .await
        .expect("a new name registers");
    let error = registry
        .register(vec![doubler(TOOL, &[])])
        .await
        .expect_err("the name is taken by a run-time tool");
    assert!(
        matches!(&error, RegistryError::DuplicateTool { name, .. } if name == TOOL),
        "{error:?}"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn unregistering_removes_only_runtime_tools() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    registry
        .register(vec![doubler(TOOL, &[])])
        .await
        .expect("registers");

    let removed = registry
        .unregister(vec![TOOL.to_owned(), "core_get_current_user".to_owned()])
        .await
        .expect("the registry is running");

    assert_eq!(removed, 1, "linked tools cannot be unregistered");
    assert!(registry.find(TOOL).is_none());
    let alice = ctx("acme", "alice", &["admin"], Initiator::Agent);
    let error = registry
        .invoke(TOOL, json!({"n": 1}), &alice)
        .await
        .expect_err("the tool is gone");
    assert_eq!(error.kind(), ErrorKind::ToolNotFound);
    assert_eq!(
        only_audit_record(registry, &alice).await.outcome.as_str(),
        "tool_not_found"
    );
    let still_there = recorrelated(alice);
    registry
        .invoke("core_get_current_user", json!({}), &still_there)
        .await
        .expect("the linked tool still runs");
    assert_eq!(
        registry
            .unregister(vec![TOOL.to_owned()])
            .await
            .expect("running"),
        0
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_orchestrator_routes_to_a_runtime_tool_once_registered() {
    let runtime = boot().await;
    let orchestrator = &runtime.orchestrator;
    let alice = ctx("acme", "alice", &["admin"], Initiator::Human);
    let utterance = "Double 21!";
    let error = orchestrator
        .ask(utterance, &alice)
        .await
        .expect_err("nothing handles doubling yet");
    assert!(matches!(error, AskError::NoRoute { .. }), "{error:?}");

    runtime
        .registry
        .register(vec![doubler(TOOL, &["double {n}"])])
        .await
        .expect("registers");
    assert!(
        routes_eventually(orchestrator, utterance, true).await,
        "the orchestrator did not pick up the new tool's intents within 2 s"
    );
    assert!(
        orchestrator
            .intents()
            .contains(&(TOOL.to_owned(), "double {n}".to_owned()))
    );

    let answer = orchestrator
        .ask(utterance, &alice)
        .await
        .expect("routes and runs");
    assert_eq!(answer.route.tool, TOOL);
    assert_eq!(answer.route.tier, 1);
    assert_eq!(
        answer.route.params,
        json!({"n": 21}),
        "the capture becomes the integer the schema asks for"
    );
    assert_eq!(answer.result["doubled"], 42);
    assert_eq!(answer.result["org_id"], "acme");
    let record = only_audit_record(&runtime.registry, &alice).await;
    assert_eq!(&*record.tool, TOOL);
    assert!(record.outcome.is_ok());

    runtime
        .registry
        .unregister(vec![TOOL.to_owned()])
        .await
        .expect("running");
    assert!(
        routes_eventually(orchestrator, utterance, false).await,
        "the orchestrator kept routing to an unregistered tool for 2 s"
    );
    runtime.shutdown().await;
}

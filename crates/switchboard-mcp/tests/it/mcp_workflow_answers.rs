//! Answering a workflow run's questions over MCP, from a real rmcp client: a run whose steps
//! ask their client (a form, then a completion) pauses at each, and the tool `workflows_answer`
//! answers them, following the run to its next pause and then to its output. An agent's answer
//! is refused as any `execute` call of an agent is, a run of another organisation is unknown,
//! and an answer that does not fit its question is refused; none of them changes the run.
//!
//! `conformance_confirm_then_summarise` is exported by this test binary only.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};
use switchboard_core::Initiator;
use switchboard_mcp::Identity;
use switchboard_registry::ToolRegistry;
use switchboard_workflows::{MemoryRunStore, NodeState, RunId, RunState};
use switchboard_workflows_engine::{ANSWER_TOOL, Engine, EngineOptions};

use crate::common::{Client, bounded, close, connect_in_memory, error_of, listed, registry};

switchboard_core::workflow!({
    name: "conformance_confirm_then_summarise",
    domain: "conformance",
    description: "Test: asks to confirm, then asks the client's model for a summary.",
    permission: "conformance.test",
    file: "workflows/confirm_then_summarise.yaml",
});

const WORKFLOW: &str = "conformance_confirm_then_summarise";

async fn registry_with_workflows() -> (ToolRegistry, Engine) {
    let registry = registry().await;
    let engine = Engine::new(
        registry.clone(),
        Arc::new(MemoryRunStore::new()),
        EngineOptions::default(),
    );
    bounded("registering", engine.register_exported())
        .await
        .expect("the exported workflows validate");
    (registry, engine)
}

/// A person of `org` with the admin role.
fn person(org: &str, user: &str) -> Identity {
    Identity::agent(org, user)
        .with_role("admin")
        .with_initiator(Initiator::Human)
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    bounded("a tools/call", client.call_tool(params))
        .await
        .expect("a result")
}

fn structured(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.clone().expect("structured")
}

/// Starts the workflow as `client`: it pauses at its first question. The run's id, and the
/// call's result.
async fn paused_run(client: &Client) -> (String, Value) {
    let paused = structured(&call(client, WORKFLOW, json!({})).await);
    assert_eq!(paused["status"], "paused", "{paused}");
    assert_eq!(paused["questions"][0]["node"], "confirm", "{paused}");
    let run = paused["run_id"].as_str().expect("a run id").to_owned();
    (run, paused)
}

/// Where the run stands, and how its `confirm` step does, read through the engine as acme.
fn state_of(engine: &Engine, run: &str) -> (RunState, NodeState) {
    let run: RunId = run.parse().expect("a run id");
    let caller = switchboard_core::CallContext::builder()
        .org("acme")
        .user("alice")
        .session("reading")
        .correlation("reading")
        .build();
    let state = engine.run(run, &caller).expect("acme's run").state;
    let steps = engine.steps(run, &caller).expect("acme's run");
    let confirm = steps
        .into_iter()
        .find(|step| step.key.path.as_str() == "confirm")
        .expect("the confirm step");
    (state, confirm.state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answers_each_question_over_mcp_and_the_run_goes_on_to_its_output() {
    let (registry, engine) = registry_with_workflows().await;
    let (client, server) = connect_in_memory(&registry, person("acme", "alice")).await;
    assert!(listed(&client).await.contains(&ANSWER_TOOL.to_owned()));

    let (run, asked) = paused_run(&client).await;
    assert_eq!(asked["questions"][0]["key"], "ask-1", "{asked}");
    assert_eq!(
        asked["questions"][0]["question"]["ask"], "elicit",
        "{asked}"
    );
    assert_eq!(
        asked["questions"][0]["question"]["message"], "Go on?",
        "{asked}"
    );

    // The form's answer sets the run going: it pauses again at the next step's question.
    let next = structured(
        &call(
            &client,
            ANSWER_TOOL,
            json!({"run_id": run, "accept": {"confirmed": true}}),
        )
        .await,
    );
    assert_eq!(next["status"], "paused", "{next}");
    assert_eq!(next["run_id"], run.as_str(), "{next}");
    assert_eq!(next["questions"][0]["node"], "summary", "{next}");
    assert_eq!(next["questions"][0]["question"]["ask"], "sample", "{next}");
    assert!(
        next["next"]
            .as_str()
            .unwrap_or_default()
            .contains(ANSWER_TOOL),
        "{next}"
    );

    // The completion finishes it: the call answers the run's output.
    let output = structured(
        &call(
            &client,
            ANSWER_TOOL,
            json!({"run_id": run, "key": "ask-1", "completion": "A quiet week."}),
        )
        .await,
    );
    let text = output.to_string();
    assert!(text.contains("confirmed: true"), "{output}");
    assert!(text.contains("LLM response: A quiet week."), "{output}");
    assert_eq!(state_of(&engine, &run).0, RunState::Completed);

    // Over: a further answer is refused.
    let refused = call(
        &client,
        ANSWER_TOOL,
        json!({"run_id": run, "decline": true}),
    )
    .await;
    assert_eq!(error_of(&refused)["code"], "answer_refused", "{refused:?}");

    close(client, server).await;
    engine.shutdown();
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_other_organisations_and_answers_that_do_not_fit_change_nothing() {
    let (registry, engine) = registry_with_workflows().await;
    let (client, server) = connect_in_memory(&registry, person("acme", "alice")).await;
    let (run, _) = paused_run(&client).await;
    let waiting = state_of(&engine, &run);
    assert!(
        matches!(waiting.1, NodeState::WaitingInput { .. }),
        "{waiting:?}"
    );

    // An agent of the organisation, admin as the person is: refused before the tool runs.
    let agent = Identity::agent("acme", "alice").with_role("admin");
    let (agent_client, agent_server) = connect_in_memory(&registry, agent).await;
    let refused = call(
        &agent_client,
        ANSWER_TOOL,
        json!({"run_id": run, "accept": {"confirmed": true}}),
    )
    .await;
    assert_eq!(error_of(&refused)["kind"], "category_denied", "{refused:?}");
    close(agent_client, agent_server).await;

    // A person of another organisation: the run is unknown to them.
    let (other, other_server) = connect_in_memory(&registry, person("globex", "gina")).await;
    let unknown = call(
        &other,
        ANSWER_TOOL,
        json!({"run_id": run, "accept": {"confirmed": true}}),
    )
    .await;
    let error = error_of(&unknown);
    assert_eq!(error["code"], "unknown_run", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no run of your organisation"),
        "{error}"
    );
    close(other, other_server).await;

    // A form's content its schema refuses, and a completion for a form.
    for reply in [
        json!({"accept": {"confirmed": "yes"}}),
        json!({"completion": "yes"}),
    ] {
        let mut arguments = reply.clone();
        arguments["run_id"] = json!(run);
        let refused = call(&client, ANSWER_TOOL, arguments).await;
        assert_eq!(error_of(&refused)["code"], "answer_refused", "{reply}");
    }

    assert_eq!(state_of(&engine, &run), waiting, "nothing was stored");
    close(client, server).await;
    engine.shutdown();
    registry.shutdown().await;
}

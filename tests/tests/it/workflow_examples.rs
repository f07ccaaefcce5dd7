//! The example workflows of `docs/examples/workflows/`, run as they are against the sample
//! domains: every file validates against the linked tools; the shift swap swaps two people's
//! shifts, and when its second assignment fails it undoes the first; onboarding waits for a
//! manager's approval of the welcome notice, then completes, and a rejection undoes the week.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use switchboard::{CallContext, Initiator, ProposalId, ToolRegistry};
use switchboard_integration_tests::{boot, ctx};
use switchboard_workflows::{
    Definition, MemoryRunStore, NodeState, RunId, RunState, RunStore, load, validate,
};
use switchboard_workflows_engine::{Engine, EngineOptions};

const SHIFT_A: &str = "acme-2026-11-23-am"; // sam works it
const SHIFT_B: &str = "acme-2026-11-23-pm"; // mark works it

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/workflows")
}

fn example(registry: &ToolRegistry, name: &str) -> Arc<Definition> {
    let path = examples().join(name);
    Arc::new(
        load(&path, &registry.list())
            .unwrap_or_else(|errors| panic!("{} is valid, but:\n{errors}", path.display())),
    )
}

/// An engine whose loader validates a stored document against the registry's tools, as the
/// binary's does.
fn engine(registry: &ToolRegistry) -> Engine {
    let tools = registry.clone();
    let loader = Arc::new(move |document: &Value| {
        validate(document, &tools.list())
            .map(Arc::new)
            .map_err(|errors| errors.to_string())
    });
    let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
    Engine::new(
        registry.clone(),
        store,
        EngineOptions {
            loader: Some(loader),
            ..EngineOptions::default()
        },
    )
}

fn manager() -> CallContext {
    ctx("acme", "mark", &["manager"], Initiator::Human)
}

async fn assignee(registry: &ToolRegistry, shift_id: &str) -> Option<String> {
    let shift = registry
        .invoke(
            "roster_get_shift",
            json!({ "shift_id": shift_id }),
            &ctx("acme", "sam", &["staff"], Initiator::Human),
        )
        .await
        .expect("the shift is readable");
    shift["assignee"].as_str().map(str::to_owned)
}

/// The proposal the run's waiting step waits on.
fn waiting_proposal(engine: &Engine, run: RunId, caller: &CallContext) -> ProposalId {
    engine
        .steps(run, caller)
        .expect("the run is the caller's")
        .into_iter()
        .find_map(|step| match step.state {
            NodeState::WaitingApproval { proposal_id } => Some(ProposalId::new(proposal_id)),
            _ => None,
        })
        .expect("a step waits for a decision")
}

/// Waits until the run pauses (its task has ended and it waits for a decision).
async fn until_paused(engine: &Engine, run: RunId, caller: &CallContext) {
    for _ in 0..500 {
        let state = engine.run(run, caller).expect("readable").state;
        if matches!(state, RunState::Paused { .. }) {
            return;
        }
        assert!(!state.is_terminal(), "the run ended instead: {state:?}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the run did not pause");
}

/// Starts onboarding nina for the seeded week, and waits until it waits for the welcome
/// notice's approval: the run and the proposal.
async fn onboard_until_the_welcome(
    registry: &ToolRegistry,
    engine: &Engine,
    caller: &CallContext,
) -> (RunId, ProposalId) {
    let run = engine
        .start(
            example(registry, "onboarding.yaml"),
            json!({
                "user_id": "nina", "name": "Nina Okafor",
                "first_day": "2026-11-23", "last_day": "2026-11-29"
            }),
            caller,
        )
        .await
        .expect("the run is accepted");
    until_paused(engine, run, caller).await;
    (run, waiting_proposal(engine, run, caller))
}

#[tokio::test]
async fn every_example_validates_against_the_sample_tools() {
    let runtime = boot().await;
    let mut names: Vec<String> = std::fs::read_dir(examples())
        .expect("the examples directory exists")
        .map(|entry| {
            entry
                .expect("readable")
                .file_name()
                .to_string_lossy()
                .into()
        })
        .filter(|name: &String| name.ends_with(".yaml") || name.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.contains(&"shift_swap.yaml".to_owned()), "{names:?}");
    assert!(names.contains(&"onboarding.yaml".to_owned()), "{names:?}");
    for name in &names {
        example(&runtime.registry, name);
    }
}

#[tokio::test]
async fn the_shift_swap_swaps_two_peoples_shifts() {
    let runtime = boot().await;
    let engine = engine(&runtime.registry);
    let outcome = engine
        .run_to_end(
            example(&runtime.registry, "shift_swap.yaml"),
            json!({ "shift_a": SHIFT_A, "shift_b": SHIFT_B }),
            &manager(),
        )
        .await
        .expect("the run is accepted");
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(
        outcome.output,
        Some(json!({ "swapped": [SHIFT_A, SHIFT_B] }))
    );
    assert_eq!(
        assignee(&runtime.registry, SHIFT_A).await.as_deref(),
        Some("mark")
    );
    assert_eq!(
        assignee(&runtime.registry, SHIFT_B).await.as_deref(),
        Some("sam")
    );
}

#[tokio::test]
async fn onboarding_waits_for_the_managers_approval_then_completes() {
    let runtime = boot().await;
    let engine = engine(&runtime.registry);
    let caller = manager();
    let (run, proposal) = onboard_until_the_welcome(&runtime.registry, &engine, &caller).await;

    runtime
        .registry
        .approve(&proposal, &ctx("acme", "ada", &["admin"], Initiator::Human))
        .await
        .expect("an admin approves the notice");
    let outcome = engine.wait(run, &caller).await.expect("the run ends");
    assert_eq!(outcome.state, RunState::Completed, "{outcome:?}");
    let output = outcome.output.expect("a completed run has its output");
    assert_eq!(output["user_id"], "nina");
    let shifts = output["shifts"]
        .as_array()
        .expect("the first week's shifts");
    assert!(!shifts.is_empty(), "the seeded week has open shifts");
    for shift in shifts {
        let shift = shift.as_str().expect("a shift id");
        assert_eq!(
            assignee(&runtime.registry, shift).await.as_deref(),
            Some("nina")
        );
    }
    let notices = runtime
        .registry
        .invoke("roster_list_notices", json!({}), &manager())
        .await
        .expect("notices are readable");
    assert_eq!(notices["notices"][0]["id"], output["notice"]);
    assert_eq!(
        notices["notices"][0]["author"], "ada",
        "the approver posted it"
    );
}

#[tokio::test]
async fn a_rejected_welcome_undoes_the_first_week() {
    let runtime = boot().await;
    let engine = engine(&runtime.registry);
    let caller = manager();
    let open_before = runtime
        .registry
        .invoke(
            "roster_list_shifts",
            json!({ "from": "2026-11-23", "to": "2026-11-29", "open_only": true }),
            &caller,
        )
        .await
        .expect("shifts are readable");
    let (run, proposal) = onboard_until_the_welcome(&runtime.registry, &engine, &caller).await;

    runtime
        .registry
        .reject(
            &proposal,
            "not this week",
            &ctx("acme", "ada", &["admin"], Initiator::Human),
        )
        .await
        .expect("an admin rejects the notice");
    let outcome = engine.wait(run, &caller).await.expect("the run ends");
    assert!(
        matches!(
            outcome.state,
            RunState::Failed {
                compensation_failure: None,
                ..
            }
        ),
        "{outcome:?}"
    );
    let open_after = runtime
        .registry
        .invoke(
            "roster_list_shifts",
            json!({ "from": "2026-11-23", "to": "2026-11-29", "open_only": true }),
            &caller,
        )
        .await
        .expect("shifts are readable");
    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(
        open_after, open_before,
        "every assignment of the week was undone: {outcome:?} {steps:#?}"
    );
}

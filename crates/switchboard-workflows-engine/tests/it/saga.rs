//! The shift-swap saga on the roster: when a later step fails, the completed assignments are
//! undone in reverse order, each an audited registry call; a cancel undoes the same way.

use std::sync::Arc;

use serde_json::json;
use switchboard_audit::Outcome;
use switchboard_core::ErrorKind;
use switchboard_workflows::{
    MemoryRunStore, NodeKind, NodeState, RunState, WaitFor, WorkflowEvent,
};

use crate::support::*;

const SHIFT_A: &str = "acme-2026-11-23-am"; // sam works it
const SHIFT_B: &str = "acme-2026-11-23-pm"; // mark works it

fn assign(shift: &str, user: &str) -> switchboard_workflows::Mapping {
    object([("shift_id", expr(shift)), ("user_id", expr(user))])
}

/// Reads A and B, gives A to B's person and B to A's person (each undone by giving the shift
/// back), then `confirm` gives A to `input.ghost`.
fn swap() -> Arc<switchboard_workflows::Definition> {
    definition(
        "shift_swap",
        vec![
            tool(
                "read_a",
                "roster_get_shift",
                object([("shift_id", expr("input.shift_a"))]),
            ),
            tool(
                "read_b",
                "roster_get_shift",
                object([("shift_id", expr("input.shift_b"))]),
            ),
            undo(
                tool(
                    "assign_a",
                    "roster_assign_shift",
                    assign("input.shift_a", "steps.read_b.output.assignee"),
                ),
                "roster_assign_shift",
                assign("params.shift_id", "steps.read_a.output.assignee"),
            ),
            undo(
                tool(
                    "assign_b",
                    "roster_assign_shift",
                    assign("input.shift_b", "steps.read_a.output.assignee"),
                ),
                "roster_assign_shift",
                assign("params.shift_id", "steps.read_b.output.assignee"),
            ),
            tool(
                "confirm",
                "roster_assign_shift",
                assign("input.shift_a", "input.ghost"),
            ),
        ],
    )
}

#[tokio::test]
async fn a_failing_step_undoes_the_completed_ones_in_reverse_order_with_audit_records() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = swap();
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("swap-saga");
    let input = json!({ "shift_a": SHIFT_A, "shift_b": SHIFT_B, "ghost": "nobody" });
    let run = engine
        .start(Arc::clone(&definition), input, &caller)
        .await
        .expect("starts");
    let outcome = wait(&engine, run, &caller).await;

    let RunState::Failed {
        error,
        compensation_failure,
    } = &outcome.state
    else {
        panic!("the run fails: {:?}", outcome.state);
    };
    assert!(error.contains("node `confirm` failed"), "{error}");
    assert!(
        error.contains("nobody"),
        "the tool's own message is kept: {error}"
    );
    assert_eq!(*compensation_failure, None, "every undo ran");

    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(state(&steps, "read_a"), NodeState::Completed);
    assert_eq!(state(&steps, "assign_a"), NodeState::Compensated);
    assert_eq!(state(&steps, "assign_b"), NodeState::Compensated);
    assert!(matches!(state(&steps, "confirm"), NodeState::Failed { .. }));
    let confirm_error = step(&steps, "confirm", 0)
        .error
        .expect("the error is stored");
    assert_eq!(confirm_error["kind"], "tool_failed");

    // The undo ran last-completed first.
    let compensated: Vec<String> = events(&engine, run, &caller)
        .await
        .into_iter()
        .filter_map(|event| match event.event {
            WorkflowEvent::Node {
                path,
                event: switchboard_workflows::NodeEvent::Compensated,
                ..
            } => Some(path.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(compensated, ["assign_b", "assign_a"]);

    assert_eq!(assignee(&registry, SHIFT_A).await.as_deref(), Some("sam"));
    assert_eq!(assignee(&registry, SHIFT_B).await.as_deref(), Some("mark"));

    // Every step, undo included, is an audited call as the run's caller.
    let calls: Vec<(String, Outcome)> = audit(&registry, "swap-saga")
        .await
        .into_iter()
        .map(|record| (record.tool.to_string(), record.outcome))
        .collect();
    let assign = "roster_assign_shift".to_owned();
    let get = "roster_get_shift".to_owned();
    assert_eq!(
        calls,
        [
            (get.clone(), Outcome::Ok),
            (get, Outcome::Ok),
            (assign.clone(), Outcome::Ok),
            (assign.clone(), Outcome::Ok),
            (assign.clone(), Outcome::Error(ErrorKind::ToolFailed)),
            (assign.clone(), Outcome::Ok),
            (assign, Outcome::Ok),
        ]
    );
}

#[tokio::test]
async fn a_run_that_succeeds_completes_with_its_end_output() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let mut nodes = vec![
        tool(
            "read_a",
            "roster_get_shift",
            object([("shift_id", expr("input.shift_a"))]),
        ),
        node(
            "done",
            NodeKind::End {
                output: Some(expr("steps.read_a.output.assignee")),
            },
        ),
    ];
    nodes.push(tool(
        "never",
        "roster_get_shift",
        object([("shift_id", expr("input.shift_a"))]),
    ));
    let definition = definition("read_only", nodes);
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("read-only");
    let outcome = engine
        .run_to_end(
            Arc::clone(&definition),
            json!({ "shift_a": SHIFT_A }),
            &caller,
        )
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(outcome.output, Some(json!("sam")));
    let steps = engine.steps(outcome.run, &caller).expect("readable");
    assert_eq!(steps.len(), 2, "the node after `end` never ran: {steps:#?}");

    let events = events(&engine, outcome.run, &caller).await;
    let numbers: Vec<u64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(
        numbers,
        (1..=numbers.len() as u64).collect::<Vec<_>>(),
        "each once, in order"
    );
}

#[tokio::test]
async fn an_expression_failing_at_run_time_fails_its_node_with_what_it_saw() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "broken_mapping",
        vec![
            tool(
                "read_a",
                "roster_get_shift",
                object([("shift_id", expr("input.shift_a"))]),
            ),
            tool(
                "read_b",
                "roster_get_shift",
                object([("shift_id", expr("steps.read_a.output.missing"))]),
            ),
        ],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("broken-mapping");
    let outcome = engine
        .run_to_end(
            Arc::clone(&definition),
            json!({ "shift_a": SHIFT_A }),
            &caller,
        )
        .await
        .expect("runs");
    let RunState::Failed { error, .. } = &outcome.state else {
        panic!("fails: {:?}", outcome.state);
    };
    assert!(error.contains("read_b"), "{error}");
    assert!(error.contains("steps.read_a.output.missing"), "{error}");
    let steps = engine.steps(outcome.run, &caller).expect("readable");
    let failed = step(&steps, "read_b", 0);
    assert!(matches!(failed.state, NodeState::Failed { .. }));
    let detail = failed.error.expect("stored");
    assert_eq!(detail["path"], "read_b");
    assert_eq!(detail["expression"], "steps.read_a.output.missing");
    assert_eq!(
        detail["saw"]["steps"]["read_a"]["output"]["assignee"],
        "sam"
    );
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_waiting_run_undoes_what_it_did() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "assign_then_wait",
        vec![
            reassign("assign_a", SHIFT_A, "mark", "sam"),
            node(
                "later",
                NodeKind::Wait(WaitFor::Duration(jiff::SignedDuration::from_hours(1))),
            ),
        ],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("cancel-saga");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    assert_eq!(assignee(&registry, SHIFT_A).await.as_deref(), Some("mark"));
    engine.cancel(run, &caller).await.expect("cancels");
    let outcome = wait(&engine, run, &caller).await;
    assert_eq!(outcome.state, RunState::Cancelled);
    assert_eq!(assignee(&registry, SHIFT_A).await.as_deref(), Some("sam"));
    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(state(&steps, "assign_a"), NodeState::Compensated);
}

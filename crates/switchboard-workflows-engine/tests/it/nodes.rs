//! The other node kinds and the watching side: conditions, fallbacks, sub-workflows, the live
//! event stream, and the stuck-run monitor.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use switchboard_workflows::{
    Branch, Expression, MemoryRunStore, NodeId, NodeKind, NodeState, OnFailure, RunState,
    WorkflowEvent,
};

use crate::support::*;

fn look(id: &str, key: &str) -> switchboard_workflows::Node {
    tool(id, "probe_look", lit(json!({ "key": key, "value": id })))
}

#[tokio::test]
async fn a_condition_takes_the_first_branch_that_holds_and_a_fallback_goes_on_elsewhere() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let mut choose = node(
        "choose",
        NodeKind::Condition {
            branches: vec![
                Branch {
                    when: Expression::parse("input.size > 10").expect("parses"),
                    next: NodeId::new("big"),
                },
                Branch {
                    when: Expression::parse("input.size > 1").expect("parses"),
                    next: NodeId::new("medium"),
                },
            ],
            otherwise: None,
        },
    );
    choose.next = None;
    let mut big = look("big", "condition-big");
    big.next = None;
    let mut medium = tool(
        "medium",
        "probe_broken",
        lit(json!({ "key": "condition-medium" })),
    );
    medium.on_failure = OnFailure::Fallback(NodeId::new("rescue"));
    medium.next = None;
    let rescue = look("rescue", "condition-rescue");
    let definition = definition("choose", vec![choose, big, medium, rescue]);
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("condition");
    let outcome = engine
        .run_to_end(Arc::clone(&definition), json!({ "size": 5 }), &caller)
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);
    let steps = engine.steps(outcome.run, &caller).expect("readable");
    assert_eq!(
        step(&steps, "choose", 0).output.expect("stored"),
        json!({ "next": "medium" })
    );
    assert!(matches!(state(&steps, "medium"), NodeState::Failed { .. }));
    assert_eq!(state(&steps, "rescue"), NodeState::Completed);
    assert!(
        steps.iter().all(|step| step.key.path.as_str() != "big"),
        "not taken"
    );
}

#[tokio::test]
async fn a_sub_workflow_runs_as_a_child_with_the_same_caller() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let mut child = (*definition(
        "child",
        vec![tool(
            "echo",
            "probe_look",
            object([
                ("key", lit(json!("child"))),
                ("value", expr("input.greeting")),
            ]),
        )],
    ))
    .clone();
    child.output = Some(expr("steps.echo.output.value"));
    let child = Arc::new(child);
    let parent = definition(
        "parent",
        vec![node(
            "sub",
            NodeKind::Workflow {
                definition: Arc::clone(&child),
                input: object([("greeting", lit(json!("hello")))]),
            },
        )],
    );
    let engine = engine_with(&registry, &store, &parent);
    let caller = human("sub-workflow");
    let outcome = engine
        .run_to_end(Arc::clone(&parent), json!({}), &caller)
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);
    let steps = engine.steps(outcome.run, &caller).expect("readable");
    let sub = step(&steps, "sub", 0);
    assert_eq!(sub.output, Some(json!("hello")));
    let child_run = sub.params.expect("stored")["child_run"]
        .as_str()
        .expect("the child's id")
        .parse()
        .expect("a run id");
    let child_record = engine
        .run(child_run, &caller)
        .expect("the caller's org sees it");
    assert_eq!(child_record.state, RunState::Completed);
    assert_eq!(child_record.parent.expect("has a parent").run, outcome.run);
    assert_eq!(child_record.caller.user_id, caller.user_id);
}

#[tokio::test(start_paused = true)]
async fn the_event_stream_gives_stored_events_then_live_ones_each_once() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "watched",
        vec![
            look("first", "watched"),
            node(
                "pause",
                NodeKind::Wait(switchboard_workflows::WaitFor::Duration(
                    jiff::SignedDuration::from_secs(30),
                )),
            ),
            look("second", "watched"),
        ],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("watched");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    // Subscribed while the run waits: what is stored comes first, the rest live.
    let stream = engine.events(run, &caller).expect("readable");
    let events: Vec<_> = tokio::time::timeout(PATIENCE * 10, stream.collect())
        .await
        .expect("ends with the run");
    let numbers: Vec<u64> = events.iter().map(|event| event.seq).collect();
    assert_eq!(numbers, (1..=numbers.len() as u64).collect::<Vec<_>>());
    let last = events.last().expect("some events");
    assert!(matches!(
        &last.event,
        WorkflowEvent::Run {
            state: RunState::Completed,
            ..
        }
    ));
    assert!(events.iter().any(|event| matches!(&event.event, WorkflowEvent::Node { path, event: switchboard_workflows::NodeEvent::Complete, .. } if path.as_str() == "second")));

    let listed = engine
        .runs(&caller, Some("watched"), false, 10)
        .expect("lists");
    assert_eq!(
        listed.iter().map(|record| record.id).collect::<Vec<_>>(),
        [run]
    );

    // A watcher that saw up to an event gets the ones after it; after the last, none.
    let resumed: Vec<u64> = engine
        .events_after(run, 2, &caller)
        .expect("readable")
        .map(|event| event.seq)
        .collect()
        .await;
    assert_eq!(resumed, numbers[2..]);
    let after_the_end: Vec<_> = engine
        .events_after(run, last.seq, &caller)
        .expect("readable")
        .collect()
        .await;
    assert!(after_the_end.is_empty());

    // Another organisation sees nothing of it.
    let mut stranger = human("stranger");
    stranger.org_id = Some("globex".into());
    assert!(engine.events(run, &stranger).is_err());
    assert!(engine.events_after(run, 0, &stranger).is_err());
    assert!(engine.run(run, &stranger).is_err());
    assert!(
        engine
            .runs(&stranger, None, false, 10)
            .expect("lists")
            .is_empty()
    );
}

#[tokio::test(start_paused = true)]
async fn the_monitor_reports_runs_with_no_event_for_too_long() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "slow",
        vec![tool(
            "slow",
            "probe_look",
            lit(json!({ "key": "stuck", "sleep_ms": 25_000 })),
        )],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("stuck");
    let run = engine
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    // The step runs for 25 s (under the registry's 30 s timeout), with no event meanwhile.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        engine
            .stuck_runs(jiff::SignedDuration::from_secs(10))
            .expect("reads")
            .is_empty()
    );
    tokio::time::sleep(Duration::from_secs(15)).await;
    let stuck = engine
        .stuck_runs(jiff::SignedDuration::from_secs(10))
        .expect("reads");
    assert_eq!(stuck.len(), 1);
    assert_eq!(stuck[0].run, run);
    assert_eq!(stuck[0].state, RunState::Running);
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_parent_cancels_its_child() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let child = definition(
        "sleepy_child",
        vec![node(
            "nap",
            NodeKind::Wait(switchboard_workflows::WaitFor::Duration(
                jiff::SignedDuration::from_secs(600),
            )),
        )],
    );
    let parent = definition(
        "parent_of_sleepy",
        vec![node(
            "sub",
            NodeKind::Workflow {
                definition: Arc::clone(&child),
                input: lit(json!({})),
            },
        )],
    );
    let engine = engine_with(&registry, &store, &parent);
    let caller = human("cancel-child");
    let run = engine
        .start(Arc::clone(&parent), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    let child_run = loop {
        let steps = engine.steps(run, &caller).expect("readable");
        let id = steps
            .first()
            .and_then(|step| step.params.as_ref())
            .and_then(|params| params["child_run"].as_str().map(str::to_owned));
        if let Some(id) = id {
            break id.parse().expect("a run id");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    paused(&engine, child_run, &caller).await;
    engine.cancel(run, &caller).await.expect("cancels");
    assert_eq!(wait(&engine, run, &caller).await.state, RunState::Cancelled);
    assert_eq!(
        wait(&engine, child_run, &caller).await.state,
        RunState::Cancelled
    );
}

//! Bounds: `foreach` and `parallel` concurrency limits, `max_items`, and `max_steps`.

use std::sync::Arc;

use serde_json::json;
use switchboard_workflows::{MemoryRunStore, NodeKind, RunState};

use crate::probe;
use crate::support::*;

fn gauge(
    id: &str,
    key: &str,
    value: switchboard_workflows::Mapping,
) -> switchboard_workflows::Node {
    tool(
        id,
        "probe_look",
        object([
            ("key", lit(json!(key))),
            ("sleep_ms", lit(json!(50))),
            ("value", value),
        ]),
    )
}

#[tokio::test(start_paused = true)]
async fn foreach_runs_at_most_its_concurrency_and_keeps_the_items_order() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "fan_out",
        vec![node(
            "each",
            NodeKind::Foreach {
                items: switchboard_workflows::Expression::parse("input.items").expect("parses"),
                item: "item".into(),
                max_items: 10,
                concurrency: 2,
                body: block(vec![gauge("look", "foreach", expr("item * 10 + index"))]),
            },
        )],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("foreach");
    let outcome = engine
        .run_to_end(
            Arc::clone(&definition),
            json!({ "items": [1, 2, 3, 4, 5, 6] }),
            &caller,
        )
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(probe::most_in_flight("foreach"), 2);
    let steps = engine.steps(outcome.run, &caller).expect("readable");
    let values: Vec<_> = step(&steps, "each", 0)
        .output
        .expect("stored")
        .as_array()
        .expect("a list")
        .iter()
        .map(|output| output["value"].clone())
        .collect();
    assert_eq!(
        values,
        [
            json!(10),
            json!(21),
            json!(32),
            json!(43),
            json!(54),
            json!(65)
        ]
    );
    assert_eq!(
        step(&steps, "each/look", 4).output.expect("stored")["value"],
        54
    );
}

#[tokio::test(start_paused = true)]
async fn parallel_runs_at_most_its_concurrency_and_joins_by_branch() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let branches = ["left", "middle", "right"]
        .into_iter()
        .map(|name| {
            (
                name.into(),
                block(vec![gauge("look", "parallel", lit(json!(name)))]),
            )
        })
        .collect();
    let definition = definition(
        "branches",
        vec![node(
            "all",
            NodeKind::Parallel {
                branches,
                concurrency: 2,
            },
        )],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("parallel");
    let outcome = engine
        .run_to_end(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(probe::most_in_flight("parallel"), 2);
    let steps = engine.steps(outcome.run, &caller).expect("readable");
    let output = step(&steps, "all", 0).output.expect("stored");
    assert_eq!(output["middle"]["value"], "middle");
    step(&steps, "all/right/look", 0);
}

#[tokio::test]
async fn a_list_longer_than_max_items_fails_the_node() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let definition = definition(
        "too_many",
        vec![node(
            "each",
            NodeKind::Foreach {
                items: switchboard_workflows::Expression::parse("input.items").expect("parses"),
                item: "item".into(),
                max_items: 3,
                concurrency: 1,
                body: block(vec![gauge("look", "too-many", expr("item"))]),
            },
        )],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("too-many");
    let outcome = engine
        .run_to_end(
            Arc::clone(&definition),
            json!({ "items": [1, 2, 3, 4] }),
            &caller,
        )
        .await
        .expect("runs");
    let RunState::Failed { error, .. } = &outcome.state else {
        panic!("fails: {:?}", outcome.state);
    };
    assert!(error.contains("more than its max_items of 3"), "{error}");
    assert!(probe::calls("too-many").is_empty(), "no item ran");
}

#[tokio::test]
async fn a_run_stops_at_max_steps() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let mut definition = (*definition(
        "long",
        (0..5)
            .map(|index| {
                tool(
                    &format!("look_{index}"),
                    "probe_look",
                    lit(json!({ "key": "max-steps" })),
                )
            })
            .collect(),
    ))
    .clone();
    definition.max_steps = 3;
    let definition = Arc::new(definition);
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("max-steps");
    let outcome = engine
        .run_to_end(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("runs");
    let RunState::Failed { error, .. } = &outcome.state else {
        panic!("fails: {:?}", outcome.state);
    };
    assert!(error.contains("maximum of 3 steps"), "{error}");
    assert_eq!(probe::calls("max-steps").len(), 3);
}

#[tokio::test]
async fn a_foreach_inside_a_foreach_keeps_a_step_per_outer_and_inner_item() {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let inner = node(
        "inner",
        NodeKind::Foreach {
            items: switchboard_workflows::Expression::parse("row").expect("parses"),
            item: "cell".into(),
            max_items: 10,
            concurrency: 1,
            body: block(vec![tool(
                "look",
                "probe_look",
                object([("key", lit(json!("nested"))), ("value", expr("cell"))]),
            )]),
        },
    );
    let definition = definition(
        "nested",
        vec![node(
            "outer",
            NodeKind::Foreach {
                items: switchboard_workflows::Expression::parse("input.rows").expect("parses"),
                item: "row".into(),
                max_items: 10,
                concurrency: 1,
                body: block(vec![inner]),
            },
        )],
    );
    let engine = engine_with(&registry, &store, &definition);
    let caller = human("nested");
    let outcome = engine
        .run_to_end(
            Arc::clone(&definition),
            json!({ "rows": [["a", "b"], ["c", "d"]] }),
            &caller,
        )
        .await
        .expect("runs");
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(probe::calls("nested").len(), 4, "every cell ran once");
    let steps = engine.steps(outcome.run, &caller).expect("readable");
    assert_eq!(
        step(&steps, "outer/inner[1]/look", 0)
            .output
            .expect("stored")["value"],
        "c"
    );
    let outer = step(&steps, "outer", 0).output.expect("stored");
    assert_eq!(outer[1][1]["value"], "d");
}

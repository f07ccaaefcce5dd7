//! Two stores on one database, as two nodes of a fleet hold them: each sees the other's runs,
//! steps and events at once; events written through both are numbered once each; and of two
//! checkpoints racing to move a run from the same state, one through each node, exactly one
//! wins and the other is refused with `StateChanged`.

use std::{
    sync::{Arc, Barrier},
    thread,
};

use serde_json::json;
use switchboard_workflows::{
    Checkpoint, NodeEvent, NodePath, NodeState, RunChange, RunEvent, RunState, RunStore,
    RunStoreError, StepKey, StepRecord, WorkflowEvent,
};
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore};

use crate::common::{at, fresh_database, resumed, run};

fn completed(run: switchboard_workflows::RunId, path: &str, iteration: u32) -> Checkpoint {
    let step = StepRecord {
        key: StepKey {
            run,
            path: NodePath::new(path),
            iteration,
        },
        state: NodeState::Completed,
        params: Some(json!({ "shift": iteration })),
        output: Some(json!(null)),
        error: None,
        completed_seq: Some(u64::from(iteration) + 1),
        started_at: at(i64::from(iteration)),
        updated_at: at(i64::from(iteration) + 1),
    };
    Checkpoint {
        run,
        at: at(i64::from(iteration)),
        run_change: None,
        event: WorkflowEvent::Node {
            path: step.key.path.clone(),
            iteration,
            event: NodeEvent::Complete,
            state: NodeState::Completed,
            retry_at: None,
        },
        step: Some(step),
        fence: None,
    }
}

#[test]
fn each_node_sees_the_others_writes_at_once() {
    let test = fresh_database();
    let options = PostgresOptions::new(test.url());
    let node_a = PostgresRunStore::open(&options).expect("node a opens");
    let node_b = PostgresRunStore::open(&options).expect("node b opens");
    let started = run("acme");
    node_a.create_run(&started).expect("created on a");
    assert_eq!(
        node_b.run(started.id).expect("read on b"),
        Some(started.clone())
    );
    assert_eq!(
        node_b
            .unfinished_runs()
            .expect("read on b")
            .iter()
            .map(|run| run.id)
            .collect::<Vec<_>>(),
        [started.id]
    );
    let first = node_b
        .checkpoint(&completed(started.id, "assign", 0))
        .expect("written on b");
    let second = node_a
        .checkpoint(&resumed(started.id, 5))
        .expect("written on a");
    assert_eq!((first, second), (1, 2));
    assert_eq!(node_a.steps(started.id).expect("read on a").len(), 1);
    assert_eq!(
        node_a.events(started.id, 0, 10).expect("read on a").len(),
        2
    );
    assert_eq!(
        node_b.events(started.id, 0, 10).expect("read on b"),
        node_a.events(started.id, 0, 10).expect("read on a")
    );
}

#[test]
fn two_nodes_number_events_once_and_let_one_racer_win() {
    const WRITERS: usize = 4;
    const EACH: usize = 20;
    let test = fresh_database();
    let options = PostgresOptions::new(test.url());
    let stores = [
        Arc::new(PostgresRunStore::open(&options).expect("a opens")),
        Arc::new(PostgresRunStore::open(&options).expect("b opens")),
    ];
    let shared = run("acme");
    stores[0].create_run(&shared).expect("created");

    let barrier = Arc::new(Barrier::new(WRITERS));
    let mut numbers: Vec<u64> = thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let store = Arc::clone(&stores[writer % 2]);
                let barrier = Arc::clone(&barrier);
                let id = shared.id;
                scope.spawn(move || {
                    barrier.wait();
                    (0..EACH)
                        .map(|n| {
                            store
                                .checkpoint(&completed(id, &format!("writer_{writer}"), n as u32))
                                .expect("written")
                        })
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().expect("the writer finished"))
            .collect()
    });
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=(WRITERS * EACH) as u64).collect::<Vec<_>>());

    for round in 0..10 {
        let from = stores[0]
            .run(shared.id)
            .expect("read")
            .expect("exists")
            .state;
        let barrier = Arc::new(Barrier::new(2));
        let results: Vec<Result<u64, RunStoreError>> = thread::scope(|scope| {
            let handles: Vec<_> = stores
                .iter()
                .enumerate()
                .map(|(racer, store)| {
                    let barrier = Arc::clone(&barrier);
                    let from = from.clone();
                    let id = shared.id;
                    scope.spawn(move || {
                        let to = RunState::Paused {
                            reason: format!("round {round}, node {racer}"),
                        };
                        barrier.wait();
                        store.checkpoint(&Checkpoint {
                            run: id,
                            at: at(100 + round),
                            run_change: Some(RunChange {
                                from,
                                to: to.clone(),
                                output: None,
                                wake_at: None,
                                steps_taken: racer as u32,
                            }),
                            step: None,
                            event: WorkflowEvent::Run {
                                event: RunEvent::Pause {
                                    reason: format!("node {racer}"),
                                },
                                state: to,
                            },
                            fence: None,
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("the racer finished"))
                .collect()
        });
        let winners = results.iter().filter(|result| result.is_ok()).count();
        assert_eq!(winners, 1, "round {round}: {results:?}");
        assert!(
            results
                .iter()
                .any(|result| matches!(result, Err(RunStoreError::StateChanged { .. }))),
            "round {round}: the loser is refused with StateChanged: {results:?}"
        );
    }
    let events = stores[1].events(shared.id, 0, usize::MAX).expect("read");
    assert_eq!(events.len(), WRITERS * EACH + 10);
}

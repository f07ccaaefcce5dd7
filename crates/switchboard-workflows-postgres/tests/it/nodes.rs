//! Two stores on one database, as two nodes of a fleet hold them: each sees the other's runs,
//! steps and events at once; events written through both are numbered once each; and of
//! checkpoints racing to move a run from the same state through both nodes, exactly one wins
//! and the others are refused with `StateChanged` (the suite's concurrency checks, through two
//! nodes).

use std::sync::Arc;

use switchboard_workflows::{
    RunStore,
    conformance::{self, fixtures::step_completed},
};
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore};

use crate::common::{fresh_database, resumed, run};

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
        .checkpoint(&step_completed(started.id, "assign", 0))
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
    let test = fresh_database();
    let options = PostgresOptions::new(test.url());
    let node = || -> Arc<dyn RunStore> {
        Arc::new(PostgresRunStore::open(&options).expect("a node opens"))
    };
    if let Err(failure) =
        conformance::nodes_number_events_once_and_let_one_racer_win(&[node(), node()])
    {
        panic!("{failure}");
    }
}

//! What the file adds to the conformance suite: runs, steps and events survive the store being
//! dropped and the file reopened, read back exactly; and two stores on one file (two processes'
//! connections) still number events once each and let exactly one of two racing run changes
//! win, because each checkpoint holds SQLite's write lock from its read to its commit; and a
//! database that cannot be written fails closed: the checkpoint is an error naming the file,
//! and nothing of it is written.

use std::{path::Path, sync::Arc};

use serde_json::json;
use switchboard_workflows::{
    Checkpoint, RunChange, RunEvent, RunId, RunState, RunStore, RunStoreError, WorkflowEvent,
    conformance::{
        self,
        fixtures::{instant, resumed, running_run, step_completed},
    },
};
use switchboard_workflows_sqlite::{SqliteOptions, SqliteRunStore, Synchronous};

fn open(path: &Path) -> SqliteRunStore {
    SqliteRunStore::open(path).expect("the workflows database opens")
}

#[test]
fn runs_steps_and_events_survive_reopening_the_file() {
    for synchronous in [Synchronous::Full, Synchronous::Normal] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("workflows.db");
        let store =
            SqliteRunStore::open_with(&path, SqliteOptions::default().synchronous(synchronous))
                .expect("opens");
        let unfinished = running_run("acme");
        let finished = running_run("globex");
        store.create_run(&unfinished).expect("created");
        store.create_run(&finished).expect("created");
        for iteration in 0..5 {
            store
                .checkpoint(&step_completed(unfinished.id, "fan_out/assign", iteration))
                .expect("written");
        }
        store
            .checkpoint(&Checkpoint {
                run: finished.id,
                at: instant(30),
                run_change: Some(RunChange {
                    from: RunState::Running,
                    to: RunState::Completed,
                    output: Some(json!({ "assigned": 5 })),
                    wake_at: None,
                    steps_taken: 5,
                }),
                step: None,
                event: WorkflowEvent::Run {
                    event: RunEvent::Complete,
                    state: RunState::Completed,
                },
                fence: None,
            })
            .expect("written");
        let runs = [
            store.run(unfinished.id).expect("read"),
            store.run(finished.id).expect("read"),
        ];
        let steps = store.steps(unfinished.id).expect("read");
        let events = store.events(unfinished.id, 0, 100).expect("read");
        assert_eq!(steps.len(), 5);
        assert_eq!(events.len(), 5);
        drop(store);

        let reopened = open(&path);
        assert_eq!(
            [
                reopened.run(unfinished.id).expect("read"),
                reopened.run(finished.id).expect("read"),
            ],
            runs
        );
        assert_eq!(reopened.steps(unfinished.id).expect("read"), steps);
        assert_eq!(
            reopened.events(unfinished.id, 0, 100).expect("read"),
            events
        );
        let still_unfinished: Vec<RunId> = reopened
            .unfinished_runs()
            .expect("read")
            .into_iter()
            .map(|run| run.id)
            .collect();
        assert_eq!(still_unfinished, [unfinished.id]);
        // Numbering continues after the reopen.
        let next = reopened
            .checkpoint(&resumed(unfinished.id, 40))
            .expect("written");
        assert_eq!(next, 6);
    }
}

#[test]
fn two_stores_on_one_file_number_events_once_and_let_one_racer_win() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("workflows.db");
    let store = || -> Arc<dyn RunStore> { Arc::new(open(&path)) };
    if let Err(failure) =
        conformance::nodes_number_events_once_and_let_one_racer_win(&[store(), store()])
    {
        panic!("{failure}");
    }
}

#[test]
fn a_locked_database_fails_closed_naming_the_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("workflows.db");
    let store = SqliteRunStore::open_with(
        &path,
        SqliteOptions::default().busy_timeout(std::time::Duration::from_millis(50)),
    )
    .expect("opens");
    let locked = running_run("acme");
    store.create_run(&locked).expect("created");
    // Another process holds the write lock for longer than the busy timeout.
    let other = rusqlite::Connection::open(&path).expect("opens with plain SQLite");
    other
        .execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    let refused = store.checkpoint(&Checkpoint {
        run: locked.id,
        at: instant(5),
        run_change: Some(RunChange {
            from: RunState::Running,
            to: RunState::Completed,
            output: None,
            wake_at: None,
            steps_taken: 1,
        }),
        step: None,
        event: WorkflowEvent::Run {
            event: RunEvent::Complete,
            state: RunState::Completed,
        },
        fence: None,
    });
    match &refused {
        Err(RunStoreError::Backend { action, reason }) => {
            assert!(action.contains(&locked.id.to_string()), "{action}");
            assert!(reason.contains(&path.display().to_string()), "{reason}");
        }
        other => panic!("expected a Backend error, got {other:?}"),
    }
    other.execute_batch("ROLLBACK").expect("releases the lock");
    assert_eq!(store.run(locked.id).expect("read"), Some(locked.clone()));
    assert!(store.events(locked.id, 0, 10).expect("read").is_empty());
}

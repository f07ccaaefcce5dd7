//! What the test files share: a store on a fresh database that is dropped with it, so the
//! conformance suite can make fresh ones at will, and the fixtures the other tests write.

use std::sync::Arc;

use jiff::Timestamp;
use serde_json::json;
use switchboard_core::{CallContext, Initiator};
use switchboard_test_postgres::{TestDatabase, test_database};
use switchboard_workflows::{
    Checkpoint, RunEvent, RunId, RunRecord, RunState, WorkflowEvent, conformance::Guarded,
};
use switchboard_workflows_postgres::{PostgresOptions, PostgresRunStore};

/// A fresh database on the test server.
pub(crate) fn fresh_database() -> TestDatabase {
    tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(test_database())
        .expect("a test database (run the tests through `cargo xtask test`)")
}

/// A PostgreSQL run store whose database is dropped with it.
pub(crate) type TempRunStore = Guarded<PostgresRunStore, TestDatabase>;

/// A store on a fresh database.
pub(crate) fn fresh_store() -> Arc<TempRunStore> {
    let database = fresh_database();
    let store = PostgresRunStore::open(&PostgresOptions::new(database.url()))
        .expect("a new workflows database opens");
    Arc::new(Guarded::new(store, database))
}

/// An instant `second` seconds into the tests' day, with nanoseconds.
pub(crate) fn at(second: i64) -> Timestamp {
    Timestamp::constant(1_795_000_000 + second, 987_654_321)
}

/// A running run of `org`.
pub(crate) fn run(org: &str) -> RunRecord {
    RunRecord {
        id: RunId::new(),
        org_id: org.into(),
        workflow: "assign_week".to_owned(),
        definition: Arc::new(json!({ "name": "assign_week", "nodes": [{ "id": "assign" }] })),
        input: json!({ "week": "2026-W48", "users": ["sam", "ünï"] }),
        caller: CallContext::builder()
            .org(org)
            .user("sam")
            .session("session-1")
            .correlation("correlation-1")
            .roles(["planner"])
            .initiator(Initiator::Agent)
            .agent_type("planner")
            .build(),
        parent: None,
        state: RunState::Running,
        output: None,
        wake_at: Some(at(60)),
        steps_taken: 0,
        created_at: at(0),
        updated_at: at(0),
    }
}

/// A checkpoint of `run` with only an event.
pub(crate) fn resumed(run: RunId, second: i64) -> Checkpoint {
    Checkpoint {
        run,
        at: at(second),
        run_change: None,
        step: None,
        event: WorkflowEvent::Run {
            event: RunEvent::Resume,
            state: RunState::Running,
        },
        fence: None,
    }
}

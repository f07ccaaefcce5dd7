//! What the test files share: a store on a fresh database that is dropped with it, so the
//! conformance suite can make fresh ones at will, and the fixtures the other tests write.

use std::sync::Arc;

use jiff::Timestamp;
use serde_json::json;
use switchboard_core::{CallContext, Initiator};
use switchboard_test_postgres::{TestDatabase, test_database};
use switchboard_workflows::{
    Checkpoint, EventRecord, Lease, RunEvent, RunFilter, RunId, RunRecord, RunState, RunStore,
    RunStoreError, StepRecord, WorkflowEvent,
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
pub(crate) struct TempRunStore {
    store: PostgresRunStore,
    _database: TestDatabase,
}

impl TempRunStore {
    pub(crate) fn fresh() -> Arc<Self> {
        let database = fresh_database();
        let store = PostgresRunStore::open(&PostgresOptions::new(database.url()))
            .expect("a new workflows database opens");
        Arc::new(Self {
            store,
            _database: database,
        })
    }
}

impl RunStore for TempRunStore {
    fn create_run(&self, run: &RunRecord) -> Result<(), RunStoreError> {
        self.store.create_run(run)
    }

    fn run(&self, id: RunId) -> Result<Option<RunRecord>, RunStoreError> {
        self.store.run(id)
    }

    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError> {
        self.store.checkpoint(checkpoint)
    }

    fn checkpoint_all(&self, checkpoints: &[Checkpoint]) -> Result<Vec<u64>, RunStoreError> {
        self.store.checkpoint_all(checkpoints)
    }

    fn steps(&self, run: RunId) -> Result<Vec<StepRecord>, RunStoreError> {
        self.store.steps(run)
    }

    fn events(
        &self,
        run: RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, RunStoreError> {
        self.store.events(run, after, limit)
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, RunStoreError> {
        self.store.list_runs(filter)
    }

    fn unfinished_runs(&self) -> Result<Vec<RunRecord>, RunStoreError> {
        self.store.unfinished_runs()
    }

    fn acquire_lease(
        &self,
        run: RunId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<Lease>, RunStoreError> {
        self.store.acquire_lease(run, owner, now, until)
    }

    fn renew_lease(&self, lease: &Lease, until: Timestamp) -> Result<Lease, RunStoreError> {
        self.store.renew_lease(lease, until)
    }

    fn release_lease(&self, lease: &Lease) -> Result<(), RunStoreError> {
        self.store.release_lease(lease)
    }

    fn unleased_runs(
        &self,
        now: Timestamp,
        after: Option<RunId>,
        limit: usize,
    ) -> Result<Vec<RunRecord>, RunStoreError> {
        self.store.unleased_runs(now, after, limit)
    }
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

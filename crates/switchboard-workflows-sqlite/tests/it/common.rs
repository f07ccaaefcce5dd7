//! What the test files share: a store on a file in a temporary directory that lives exactly as
//! long as the store, so the conformance suite can make fresh ones at will.

use std::sync::Arc;

use switchboard_workflows::{
    Checkpoint, EventRecord, RunFilter, RunId, RunRecord, RunStore, RunStoreError, StepRecord,
};
use switchboard_workflows_sqlite::{SqliteOptions, SqliteRunStore};
use tempfile::TempDir;

/// A SQLite run store whose directory is deleted with it.
pub(crate) struct TempRunStore {
    store: SqliteRunStore,
    _dir: TempDir,
}

impl TempRunStore {
    pub(crate) fn fresh(options: SqliteOptions) -> Arc<Self> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = SqliteRunStore::open_with(dir.path().join("workflows.db"), options)
            .expect("a new workflows database opens");
        Arc::new(Self { store, _dir: dir })
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
}

//! What the test files share: a store on a file in a temporary directory that lives exactly as
//! long as the store, so the conformance suite can make fresh ones at will.

use std::sync::Arc;

use jiff::Timestamp;
use switchboard_workflows::{
    Checkpoint, EventRecord, Lease, RunFilter, RunId, RunRecord, RunStore, RunStoreError,
    StepRecord,
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

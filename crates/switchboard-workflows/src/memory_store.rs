//! The in-memory [`RunStore`]: the reference every store's conformance is measured against,
//! and the store of tests and of runs that need not outlive their process.
//!
//! One mutex guards the runs, steps and events together, because a checkpoint changes all
//! three at once and must be seen whole or not at all. A checkpoint holds it for a few map
//! operations; the engine writes one per transition, so the lock is never what a run waits on.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use crate::definition::NodePath;
use crate::store::{
    Checkpoint, EventRecord, RunFilter, RunId, RunRecord, RunStore, RunStoreError, StepKey,
    StepRecord,
};

/// Runs, steps and events in memory, lost with the process.
#[derive(Debug, Default)]
pub struct MemoryRunStore {
    tables: Mutex<Tables>,
}

#[derive(Debug, Default)]
struct Tables {
    runs: HashMap<RunId, RunRecord>,
    steps: BTreeMap<StepKey, StepRecord>,
    events: HashMap<RunId, Vec<EventRecord>>,
}

impl MemoryRunStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The tables. A thread that panicked while holding the lock cannot have left a checkpoint
    /// half-written (each is applied after every check passed, with no call that can panic in
    /// between), so a poisoned lock is taken over as it is.
    fn tables(&self) -> MutexGuard<'_, Tables> {
        self.tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl RunStore for MemoryRunStore {
    fn create_run(&self, run: &RunRecord) -> Result<(), RunStoreError> {
        let mut tables = self.tables();
        if tables.runs.contains_key(&run.id) {
            return Err(RunStoreError::DuplicateRun(run.id));
        }
        tables.runs.insert(run.id, run.clone());
        Ok(())
    }

    fn run(&self, id: RunId) -> Result<Option<RunRecord>, RunStoreError> {
        Ok(self.tables().runs.get(&id).cloned())
    }

    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError> {
        let mut tables = self.tables();
        let Tables {
            runs,
            steps,
            events,
        } = &mut *tables;
        let run = runs
            .get_mut(&checkpoint.run)
            .ok_or(RunStoreError::RunNotFound(checkpoint.run))?;
        if let Some(change) = &checkpoint.run_change
            && run.state != change.from
        {
            return Err(RunStoreError::StateChanged {
                run: checkpoint.run,
                expected: Box::new(change.from.clone()),
                actual: Box::new(run.state.clone()),
            });
        }
        if let Some(change) = &checkpoint.run_change {
            run.state = change.to.clone();
            run.output.clone_from(&change.output);
            run.wake_at = change.wake_at;
            run.steps_taken = change.steps_taken;
        }
        run.updated_at = checkpoint.at;
        if let Some(step) = &checkpoint.step {
            steps.insert(step.key.clone(), step.clone());
        }
        let log = events.entry(checkpoint.run).or_default();
        let seq = log.last().map_or(1, |last| last.seq + 1);
        log.push(EventRecord {
            run: checkpoint.run,
            seq,
            at: checkpoint.at,
            event: checkpoint.event.clone(),
        });
        Ok(seq)
    }

    fn steps(&self, run: RunId) -> Result<Vec<StepRecord>, RunStoreError> {
        // Keys order by run first, and the empty path comes before every other: the run's
        // steps are one range, whatever the number of other runs.
        let first = StepKey {
            run,
            path: NodePath::new(""),
            iteration: 0,
        };
        Ok(self
            .tables()
            .steps
            .range(first..)
            .map_while(|(key, step)| (key.run == run).then(|| step.clone()))
            .collect())
    }

    fn events(
        &self,
        run: RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, RunStoreError> {
        Ok(self
            .tables()
            .events
            .get(&run)
            .map(|log| {
                log.iter()
                    .filter(|event| event.seq > after)
                    .take(limit)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, RunStoreError> {
        let tables = self.tables();
        let mut runs: Vec<RunRecord> = tables
            .runs
            .values()
            .filter(|run| run.org_id == filter.org_id)
            .filter(|run| {
                filter
                    .workflow
                    .as_ref()
                    .is_none_or(|name| &run.workflow == name)
            })
            .filter(|run| !filter.unfinished_only || !run.state.is_terminal())
            .cloned()
            .collect();
        runs.sort_by_key(|run| std::cmp::Reverse(run.id));
        runs.truncate(filter.limit);
        Ok(runs)
    }

    fn unfinished_runs(&self) -> Result<Vec<RunRecord>, RunStoreError> {
        let mut runs: Vec<RunRecord> = self
            .tables()
            .runs
            .values()
            .filter(|run| !run.state.is_terminal())
            .cloned()
            .collect();
        runs.sort_by_key(|run| run.id);
        Ok(runs)
    }
}

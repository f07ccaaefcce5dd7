//! The in-memory [`RunStore`]: the reference every store's conformance is measured against,
//! and the store of tests and of runs that need not outlive their process.
//!
//! One mutex guards every run, because a checkpoint changes a run, its step and its events at
//! once and must be seen whole or not at all. A run's steps and events live with its record, so
//! a checkpoint finds all three with one lookup, and its cost does not grow with the number of
//! other runs the store holds. A checkpoint holds the lock for a few map operations; the
//! engine writes one per transition, so the lock is never what a run waits on.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use jiff::Timestamp;

use crate::definition::NodePath;
use crate::store::{
    Checkpoint, EventRecord, Lease, RunFilter, RunId, RunRecord, RunStore, RunStoreError,
    StepRecord,
};

/// Runs, steps and events in memory, lost with the process.
#[derive(Debug, Default)]
pub struct MemoryRunStore {
    runs: Mutex<HashMap<RunId, StoredRun>>,
}

/// One run: its record, its steps in key order, its events in order, and its lease.
#[derive(Debug)]
struct StoredRun {
    record: RunRecord,
    steps: BTreeMap<(NodePath, u32), StepRecord>,
    events: Vec<EventRecord>,
    /// The holder and expiry of its lease, if it has one.
    lease: Option<(String, Timestamp)>,
    /// Its fencing token: the last lease granted to a new holder.
    token: u64,
}

impl StoredRun {
    /// Whether `lease` is still this run's (holder and token), expired or not.
    fn holds(&self, lease: &Lease) -> bool {
        self.token == lease.token
            && self
                .lease
                .as_ref()
                .is_some_and(|(owner, _)| *owner == lease.owner)
    }

    /// Whether its lease is free or expired at `now`.
    fn unleased(&self, now: Timestamp) -> bool {
        self.lease
            .as_ref()
            .is_none_or(|(_, expires_at)| *expires_at <= now)
    }
}

impl MemoryRunStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The runs. A thread that panicked while holding the lock cannot have left a checkpoint
    /// half-written (each is applied after every check passed, with no call that can panic in
    /// between), so a poisoned lock is taken over as it is.
    fn runs(&self) -> MutexGuard<'_, HashMap<RunId, StoredRun>> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl RunStore for MemoryRunStore {
    fn create_run(&self, run: &RunRecord) -> Result<(), RunStoreError> {
        let mut runs = self.runs();
        if runs.contains_key(&run.id) {
            return Err(RunStoreError::DuplicateRun(run.id));
        }
        runs.insert(
            run.id,
            StoredRun {
                record: run.clone(),
                steps: BTreeMap::new(),
                events: Vec::new(),
                lease: None,
                token: 0,
            },
        );
        Ok(())
    }

    fn run(&self, id: RunId) -> Result<Option<RunRecord>, RunStoreError> {
        Ok(self.runs().get(&id).map(|run| run.record.clone()))
    }

    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError> {
        let mut runs = self.runs();
        let StoredRun {
            record,
            steps,
            events,
            lease,
            token,
        } = runs
            .get_mut(&checkpoint.run)
            .ok_or(RunStoreError::RunNotFound(checkpoint.run))?;
        if let Some(fence) = &checkpoint.fence {
            let holder = lease.as_ref().map(|(owner, _)| owner.as_str());
            fence.check(checkpoint.run, holder, *token)?;
        }
        if let Some(change) = &checkpoint.run_change {
            if record.state != change.from {
                return Err(RunStoreError::StateChanged {
                    run: checkpoint.run,
                    expected: Box::new(change.from.clone()),
                    actual: Box::new(record.state.clone()),
                });
            }
            record.state = change.to.clone();
            record.output.clone_from(&change.output);
            record.wake_at = change.wake_at;
            record.steps_taken = change.steps_taken;
        }
        record.updated_at = checkpoint.at;
        if let Some(step) = &checkpoint.step {
            steps.insert((step.key.path.clone(), step.key.iteration), step.clone());
        }
        let seq = events.last().map_or(1, |last| last.seq + 1);
        events.push(EventRecord {
            run: checkpoint.run,
            seq,
            at: checkpoint.at,
            event: checkpoint.event.clone(),
        });
        Ok(seq)
    }

    fn steps(&self, run: RunId) -> Result<Vec<StepRecord>, RunStoreError> {
        Ok(self
            .runs()
            .get(&run)
            .map(|run| run.steps.values().cloned().collect())
            .unwrap_or_default())
    }

    fn events(
        &self,
        run: RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, RunStoreError> {
        Ok(self
            .runs()
            .get(&run)
            .map(|run| {
                run.events
                    .iter()
                    .filter(|event| event.seq > after)
                    .take(limit)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, RunStoreError> {
        let mut runs: Vec<RunRecord> = self
            .runs()
            .values()
            .map(|run| &run.record)
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
            .runs()
            .values()
            .map(|run| &run.record)
            .filter(|run| !run.state.is_terminal())
            .cloned()
            .collect();
        runs.sort_by_key(|run| run.id);
        Ok(runs)
    }

    fn acquire_lease(
        &self,
        run: RunId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<Lease>, RunStoreError> {
        let mut runs = self.runs();
        let stored = runs.get_mut(&run).ok_or(RunStoreError::RunNotFound(run))?;
        let mine = stored
            .lease
            .as_ref()
            .is_some_and(|(holder, _)| holder == owner);
        if !mine && !stored.unleased(now) {
            return Ok(None);
        }
        if !mine {
            stored.token += 1;
        }
        stored.lease = Some((owner.to_owned(), until));
        Ok(Some(Lease {
            run,
            owner: owner.to_owned(),
            token: stored.token,
            expires_at: until,
        }))
    }

    fn renew_lease(&self, lease: &Lease, until: Timestamp) -> Result<Lease, RunStoreError> {
        let mut runs = self.runs();
        let stored = runs
            .get_mut(&lease.run)
            .ok_or(RunStoreError::RunNotFound(lease.run))?;
        let renewed = lease.renewed(stored.holds(lease), until)?;
        stored.lease = Some((lease.owner.clone(), until));
        Ok(renewed)
    }

    fn release_lease(&self, lease: &Lease) -> Result<(), RunStoreError> {
        let mut runs = self.runs();
        if let Some(stored) = runs.get_mut(&lease.run)
            && stored.holds(lease)
        {
            stored.lease = None;
        }
        Ok(())
    }

    fn unleased_runs(
        &self,
        now: Timestamp,
        after: Option<RunId>,
        limit: usize,
    ) -> Result<Vec<RunRecord>, RunStoreError> {
        let mut runs: Vec<RunRecord> = self
            .runs()
            .values()
            .filter(|run| after.is_none_or(|after| run.record.id > after))
            .filter(|run| !run.record.state.is_terminal() && run.unleased(now))
            .map(|run| run.record.clone())
            .collect();
        runs.sort_by_key(|run| run.id);
        runs.truncate(limit);
        Ok(runs)
    }
}

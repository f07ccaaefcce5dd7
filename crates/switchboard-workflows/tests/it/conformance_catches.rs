//! The conformance suite has teeth: stores with one deliberate flaw each (built on the
//! in-memory store) fail the check that is about that flaw.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use jiff::Timestamp;
use switchboard_core::OrgId;
use switchboard_workflows::{
    Checkpoint, Lease, MemoryRunStore, RunFilter, RunId, RunRecord, RunStore, RunStoreError,
    conformance::{self, Failure, RunStoreFactory},
};

/// The flaw a store has; every other operation is the in-memory store's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flaw {
    /// The compare-and-set is a read, then a blind write: racers both pass the read.
    ReadThenWrite,
    /// A refused run change still writes the checkpoint's step and event.
    WritesWhenRefused,
    /// Runs are stored with their times rounded to the microsecond.
    RoundsToMicroseconds,
    /// `list_runs` lists every organisation's runs.
    ListsEveryOrg,
    /// Checkpoints are written whatever their fence says.
    IgnoresFence,
    /// A lease is granted to anyone, live or not.
    GrantsLiveLeases,
}

struct Flawed {
    flaw: Flaw,
    inner: MemoryRunStore,
    orgs: Mutex<BTreeSet<OrgId>>,
}

fn flawed(flaw: Flaw) -> Arc<dyn RunStore> {
    Arc::new(Flawed {
        flaw,
        inner: MemoryRunStore::new(),
        orgs: Mutex::new(BTreeSet::new()),
    })
}

fn microseconds(timestamp: Timestamp) -> Timestamp {
    let nanoseconds = timestamp.as_nanosecond();
    Timestamp::from_nanosecond(nanoseconds - nanoseconds.rem_euclid(1_000)).expect("in range")
}

impl conformance::WrappedStore for Flawed {
    fn inner(&self) -> &dyn RunStore {
        &self.inner
    }

    fn create_run(&self, run: &RunRecord) -> Result<(), RunStoreError> {
        self.orgs
            .lock()
            .expect("not poisoned")
            .insert(run.org_id.clone());
        let mut run = run.clone();
        if self.flaw == Flaw::RoundsToMicroseconds {
            run.created_at = microseconds(run.created_at);
            run.updated_at = microseconds(run.updated_at);
            run.wake_at = run.wake_at.map(microseconds);
        }
        self.inner.create_run(&run)
    }

    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError> {
        match (self.flaw, &checkpoint.run_change) {
            (Flaw::ReadThenWrite, Some(change)) => {
                let stored = self
                    .inner
                    .run(checkpoint.run)?
                    .ok_or(RunStoreError::RunNotFound(checkpoint.run))?;
                if stored.state != change.from {
                    return Err(RunStoreError::StateChanged {
                        run: checkpoint.run,
                        expected: Box::new(change.from.clone()),
                        actual: Box::new(stored.state),
                    });
                }
                std::thread::sleep(Duration::from_millis(2));
                let now = self
                    .inner
                    .run(checkpoint.run)?
                    .ok_or(RunStoreError::RunNotFound(checkpoint.run))?;
                let mut blind = checkpoint.clone();
                if let Some(change) = &mut blind.run_change {
                    change.from = now.state;
                }
                self.inner.checkpoint(&blind)
            }
            (Flaw::WritesWhenRefused, Some(_)) => {
                let result = self.inner.checkpoint(checkpoint);
                if let Err(RunStoreError::StateChanged { .. }) = result {
                    let mut partial = checkpoint.clone();
                    partial.run_change = None;
                    self.inner.checkpoint(&partial)?;
                }
                result
            }
            _ if self.flaw == Flaw::IgnoresFence => self.inner.checkpoint(&Checkpoint {
                fence: None,
                ..checkpoint.clone()
            }),
            _ => self.inner.checkpoint(checkpoint),
        }
    }

    /// One by one, each through the flawed `checkpoint`.
    fn checkpoint_all(&self, checkpoints: &[Checkpoint]) -> Result<Vec<u64>, RunStoreError> {
        checkpoints
            .iter()
            .map(|checkpoint| RunStore::checkpoint(self, checkpoint))
            .collect()
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, RunStoreError> {
        if self.flaw != Flaw::ListsEveryOrg {
            return self.inner.list_runs(filter);
        }
        let orgs = self.orgs.lock().expect("not poisoned").clone();
        let mut runs = Vec::new();
        for org_id in orgs {
            runs.extend(self.inner.list_runs(&RunFilter {
                org_id,
                ..filter.clone()
            })?);
        }
        runs.sort_by_key(|run| std::cmp::Reverse(run.id));
        runs.truncate(filter.limit);
        Ok(runs)
    }

    fn acquire_lease(
        &self,
        run: RunId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<Lease>, RunStoreError> {
        // Asked as if far in the future, every lease looks expired.
        let now = if self.flaw == Flaw::GrantsLiveLeases {
            Timestamp::MAX
        } else {
            now
        };
        self.inner.acquire_lease(run, owner, now, until)
    }
}

fn caught(flaw: Flaw, check: fn(&RunStoreFactory) -> Result<(), Failure>) -> Failure {
    let make = move || flawed(flaw);
    check(&make).expect_err("the check must catch the flawed store")
}

#[test]
fn the_flawed_stores_are_otherwise_the_reference() {
    let make = || flawed(Flaw::ListsEveryOrg);
    conformance::runs_round_trip_unchanged(&make).expect("only listing is flawed");
}

#[test]
fn a_read_then_write_compare_and_set_lets_several_racers_win() {
    let failure = caught(
        Flaw::ReadThenWrite,
        conformance::racing_run_changes_have_exactly_one_winner,
    );
    assert!(
        failure.message().contains("racing run changes"),
        "{failure}"
    );
}

#[test]
fn a_refused_checkpoint_that_writes_its_step_is_caught() {
    let failure = caught(
        Flaw::WritesWhenRefused,
        conformance::a_run_change_applies_only_from_the_expected_state,
    );
    assert!(
        failure.message().contains("refused checkpoints"),
        "{failure}"
    );
}

#[test]
fn rounded_timestamps_are_caught() {
    caught(
        Flaw::RoundsToMicroseconds,
        conformance::runs_round_trip_unchanged,
    );
    caught(
        Flaw::RoundsToMicroseconds,
        conformance::timestamps_round_trip_to_the_nanosecond,
    );
}

#[test]
fn a_listing_across_organisations_is_caught() {
    let failure = caught(
        Flaw::ListsEveryOrg,
        conformance::list_runs_filters_by_org_workflow_and_state_newest_first,
    );
    assert!(failure.message().contains("list_runs"), "{failure}");
}

#[test]
fn checkpoints_that_ignore_their_fence_are_caught() {
    let failure = caught(
        Flaw::IgnoresFence,
        conformance::checkpoints_under_a_lost_lease_are_refused,
    );
    assert!(failure.message().contains("LeaseLost"), "{failure}");
}

#[test]
fn a_live_lease_granted_to_another_owner_is_caught() {
    let failure = caught(
        Flaw::GrantsLiveLeases,
        conformance::a_lease_is_one_owners_until_it_expires,
    );
    assert!(failure.message().contains("node-b took"), "{failure}");
    caught(
        Flaw::GrantsLiveLeases,
        conformance::racing_takers_have_exactly_one_winner,
    );
}

//! Leases: how an engine drives a run only while it holds the run's lease, renews it while
//! driving, releases it when the drive ends, and takes over the runs whose engine died.
//!
//! A drive takes the lease first (`RunStore::acquire_lease`); refused (another engine holds a
//! live one), it does not happen. The drive and the lease's renewal run side by side; a
//! renewal that finds the lease taken over ends the drive where it is (its checkpoints would
//! be refused by their fence anyway). The sweep, started by the first
//! [`Engine::recover`](crate::Engine::recover), looks every [`LeaseOptions::sweep_every`] at
//! the unfinished runs whose lease expired or is free, and continues them as a starting engine
//! would.
//!
//! An engine that stops on purpose (a node draining) hands its runs over
//! ([`Engine::hand_over`]): it starts no drive, each drive stops before its next node (the
//! step in flight finishes and is recorded), and each lease is released as its drive ends, so
//! another engine's sweep takes the run at once instead of a lease later.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use switchboard_workflows::{Lease, NodeState, RunId, RunRecord, RunState, RunStoreError};

use super::{Engine, Shared, lock};

/// How an engine holds the leases of the runs it drives, and how soon it takes over the runs
/// of an engine that died. The defaults suit a fleet: a run whose node died is taken over
/// between 10 and 13 seconds after that node's last renewal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOptions {
    /// This engine's name as a lease holder; it must differ between the engines sharing a
    /// store (two engines with one name would both drive a run). Default:
    /// `engine-PID-RANDOM`, new for each `LeaseOptions::default()`.
    pub owner: String,
    /// How long a lease lasts unless renewed (default 10 s): how long a run whose engine
    /// died (or stopped answering) waits before another engine may take it over.
    pub duration: Duration,
    /// How often a held lease is renewed while its run is driven (default 3 s). Well under
    /// [`duration`](Self::duration), so that a renewal or two may fail (a slow database) before
    /// the lease expires.
    pub renew_every: Duration,
    /// How often the engine looks, once it has [recovered](crate::Engine::recover), for unfinished
    /// runs whose lease expired or is free, and takes them over (default 3 s). The same
    /// sweep notices timers and decisions that other engines' runs wait for.
    pub sweep_every: Duration,
}

impl Default for LeaseOptions {
    fn default() -> Self {
        Self {
            owner: format!("engine-{}-{:08x}", std::process::id(), fastrand::u32(..)),
            duration: Duration::from_secs(10),
            renew_every: Duration::from_secs(3),
            sweep_every: Duration::from_secs(3),
        }
    }
}

impl LeaseOptions {
    /// These options with `duration`, and a renewal every third of it.
    #[must_use]
    pub fn with_duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self.renew_every = duration / 3;
        self
    }

    /// These options with the holder's name `owner`.
    #[must_use]
    pub fn with_owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = owner.into();
        self
    }

    /// These options with a sweep every `sweep_every`.
    #[must_use]
    pub fn with_sweep_every(mut self, sweep_every: Duration) -> Self {
        self.sweep_every = sweep_every;
        self
    }
}

/// The most runs one page of a sweep reads.
const SWEEP_BATCH: usize = 256;

impl Shared {
    /// Drives `run` under its lease, again as long as it is kicked meanwhile, then releases
    /// the lease. Nothing happens when another engine holds a live lease on the run.
    pub(super) async fn drive_until_settled(self: Arc<Self>, run: RunId) {
        loop {
            if self.is_handing_over() {
                lock(&self.active).remove(&run);
                return;
            }
            let Some(lease) = self.take_lease(run) else {
                let entry = lock(&self.active).remove(&run);
                if entry.is_some_and(|entry| entry.cancel) {
                    lock(&self.cancels).insert(run);
                }
                return;
            };
            if !self.drive_while_held(run, &lease).await {
                lock(&self.active).remove(&run);
                return;
            }
            if let Err(error) = self.store.release_lease(&lease) {
                // It expires by itself; until then no other engine takes the run over.
                tracing::warn!(%error, %run, "the lease of a workflow run was not released");
            }
            // A kick while the lease was released drives the run once more, under a new lease
            // (unless this engine hands its runs over).
            let mut active = lock(&self.active);
            match active.get_mut(&run) {
                Some(entry) if entry.again && !self.is_handing_over() => entry.again = false,
                _ => {
                    active.remove(&run);
                    return;
                }
            }
        }
    }

    /// Whether [`Engine::hand_over`] was called: no drive starts, and a drive stops before its
    /// next node.
    pub(crate) fn is_handing_over(&self) -> bool {
        self.handing_over.load(Ordering::SeqCst)
    }

    /// The lease of `run` for this engine, if no other engine holds a live one.
    fn take_lease(&self, run: RunId) -> Option<Lease> {
        let now = self.clock.now();
        let until = self.lease_deadline(now);
        match self
            .store
            .acquire_lease(run, &self.options.lease.owner, now, until)
        {
            Ok(Some(lease)) => {
                tracing::debug!(%run, token = lease.token, "took the lease of a workflow run");
                Some(lease)
            }
            Ok(None) => {
                tracing::debug!(%run, "another engine drives the workflow run");
                None
            }
            Err(RunStoreError::RunNotFound(_)) => None,
            Err(error) => {
                tracing::error!(%error, %run, "the lease of a workflow run could not be taken");
                None
            }
        }
    }

    fn lease_deadline(&self, now: Timestamp) -> Timestamp {
        SignedDuration::try_from(self.options.lease.duration)
            .ok()
            .and_then(|duration| now.checked_add(duration).ok())
            .unwrap_or(Timestamp::MAX)
    }

    /// Drives `run` (once more for each kick meanwhile) while renewing `lease`. Returns false
    /// if the lease was lost, which stops the drive where it is.
    async fn drive_while_held(self: &Arc<Self>, run: RunId, lease: &Lease) -> bool {
        let fence = lease.fence();
        let driving = async {
            loop {
                crate::drive::drive(self, run, &fence).await;
                let mut active = lock(&self.active);
                match active.get_mut(&run) {
                    Some(entry) if entry.again => entry.again = false,
                    _ => return,
                }
            }
        };
        tokio::select! {
            () = driving => true,
            () = self.renew_until_lost(lease.clone()) => false,
        }
    }

    /// Renews `lease` every [`LeaseOptions::renew_every`]; returns once it was lost. A renewal
    /// that fails otherwise (the database is slow or away) is tried again at the next tick:
    /// the drive goes on, its checkpoints fenced.
    async fn renew_until_lost(&self, mut lease: Lease) {
        loop {
            tokio::time::sleep(self.options.lease.renew_every).await;
            let until = self.lease_deadline(self.clock.now());
            match self.store.renew_lease(&lease, until) {
                Ok(renewed) => lease = renewed,
                Err(RunStoreError::LeaseLost { .. } | RunStoreError::RunNotFound(_)) => {
                    tracing::warn!(
                        run = %lease.run,
                        "the lease of a workflow run was taken over: this engine stops driving it"
                    );
                    return;
                }
                Err(error) => {
                    tracing::warn!(
                        %error,
                        run = %lease.run,
                        "the lease of a workflow run was not renewed"
                    );
                }
            }
        }
    }

    /// Continues `run` as [`Engine::recover`](crate::Engine::recover) does: drives it unless
    /// it waits, and watches what it waits for. `starting`: at recovery (a paused parent of a
    /// child run that was in flight is driven, to look at its child); else from the sweep,
    /// which drives a paused parent only once its child run ended, and leaves a run that has
    /// never started and is younger than a lease to the engine that created it.
    pub(super) fn continue_run(
        self: &Arc<Self>,
        run: &RunRecord,
        starting: bool,
    ) -> Result<(), RunStoreError> {
        match &run.state {
            RunState::Paused { .. } => {
                let steps = self.store.steps(run.id)?;
                if steps
                    .iter()
                    .any(|step| matches!(step.state, NodeState::WaitingApproval { .. }))
                {
                    self.await_decision(run.id);
                }
                let children: Vec<Option<RunId>> = steps
                    .iter()
                    .filter(|step| matches!(step.state, NodeState::Running { .. }))
                    .filter_map(|step| step.params.as_ref()?.get(crate::drive::CHILD_RUN))
                    .map(|child| child.as_str().and_then(|id| id.parse().ok()))
                    .collect();
                // A child run that ended kicks its parent on the engine that drove it; that kick
                // is lost if the engine died or was handing its runs over, so the sweep looks.
                let child_ended = |child: &Option<RunId>| {
                    child.is_some_and(|child| {
                        self.store.run(child).is_ok_and(|record| {
                            record.is_some_and(|record| record.state.is_terminal())
                        })
                    })
                };
                // A step whose questions were all answered goes on (the answer's own kick is lost
                // if it was given on an engine that could not take the run's lease).
                let answered = steps.iter().any(|step| {
                    matches!(&step.state, NodeState::WaitingInput { keys, .. } if keys.is_empty())
                });
                if answered
                    || (starting && !children.is_empty())
                    || children.iter().any(child_ended)
                {
                    self.kick(run.id);
                }
                if let Some(at) = run.wake_at {
                    self.schedule(at, run.id);
                }
            }
            RunState::Pending if !starting => {
                let age = self.clock.now().duration_since(run.created_at);
                let lease = SignedDuration::try_from(self.options.lease.duration)
                    .unwrap_or(SignedDuration::MAX);
                if age >= lease {
                    self.kick(run.id);
                }
            }
            _ => self.kick(run.id),
        }
        Ok(())
    }

    /// One takeover sweep: asks again the cancels of runs another engine was driving, and
    /// continues the unfinished runs whose lease expired or is free.
    fn take_over(self: &Arc<Self>) {
        let cancels: Vec<RunId> = lock(&self.cancels).drain().collect();
        for run in cancels {
            self.request_cancel(run);
        }
        let now = self.clock.now();
        let mut after = None;
        loop {
            let runs = match self.store.unleased_runs(now, after, SWEEP_BATCH) {
                Ok(runs) => runs,
                Err(error) => {
                    tracing::warn!(%error, "could not look for workflow runs to take over");
                    return;
                }
            };
            for run in &runs {
                if let Err(error) = self.continue_run(run, false) {
                    tracing::warn!(%error, run = %run.id, "could not take a workflow run over");
                }
            }
            match runs.last() {
                Some(last) if runs.len() == SWEEP_BATCH => after = Some(last.id),
                _ => return,
            }
        }
    }
}

/// Kicks `run` every `sweep_every` until it moves (its `updated_at` is no longer `seen`) or
/// ends: what [`Engine::resume`](crate::Engine::resume) starts, so that a run resumed while
/// another engine holds its lease is taken over once that lease expires (the engine died),
/// without sweeping every other run as [`Engine::recover`](crate::Engine::recover) does. A
/// kick while the lease is live is refused by the store and changes nothing.
pub(super) async fn retake(shared: Weak<Shared>, run: RunId, seen: Timestamp) {
    while let Some(shared) = after_a_sweep_interval(&shared).await {
        match shared.store.run(run) {
            Ok(Some(record)) if !record.state.is_terminal() && record.updated_at == seen => {
                shared.kick(run);
            }
            Ok(_) => return,
            Err(error) => tracing::warn!(%error, %run, "could not read a resumed workflow run"),
        }
    }
}

/// The engine, once `sweep_every` has passed; `None` once the engine is gone or hands its runs
/// over.
async fn after_a_sweep_interval(shared: &Weak<Shared>) -> Option<Arc<Shared>> {
    let every = shared.upgrade()?.options.lease.sweep_every;
    tokio::time::sleep(every).await;
    shared.upgrade().filter(|shared| !shared.is_handing_over())
}

/// Takes over runs whose engine died, every `sweep_every`: one task per engine, started by
/// [`Engine::recover`](crate::Engine::recover).
pub(super) async fn sweep(shared: Weak<Shared>) {
    while let Some(shared) = after_a_sweep_interval(&shared).await {
        shared.take_over();
    }
}

/// How often [`Engine::hand_over`] looks whether every drive has ended.
const HAND_OVER_POLL: Duration = Duration::from_millis(10);

/// What [`Engine::hand_over`] did with the runs the engine was driving.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandOver {
    /// Drives that ended in time, each releasing its run's lease: the run stopped before its
    /// next node (another engine's sweep continues it at once), or finished or paused meanwhile.
    pub released: usize,
    /// Drives still going at the deadline (a step that did not answer in time), stopped where
    /// they were, as a crash stops them: their leases stay until they expire, and the step that
    /// was in flight runs again under the same idempotency key on the engine that takes the
    /// run over.
    pub cut_off: usize,
}

impl Engine {
    /// Hands this engine's runs over to the other engines sharing its store, as a node that
    /// drains does before it exits. From now on no drive starts here (not from a kick, a timer,
    /// a decision or the sweep, which all stop), and each drive in progress stops before its
    /// next node: the step in flight finishes and is recorded, the run stays `running` at that
    /// checkpoint, and its lease is released, so another engine's next sweep continues it
    /// rather than waiting for the lease to expire. Waits at most `deadline` for the drives to
    /// end; those still going then are stopped where they are (see [`HandOver::cut_off`]).
    ///
    /// The engine drives nothing afterwards; [`shutdown`](Self::shutdown) ends what is left.
    pub async fn hand_over(&self, deadline: Duration) -> HandOver {
        let shared = &self.shared;
        shared.handing_over.store(true, Ordering::SeqCst);
        for handle in lock(&shared.background).drain(..) {
            handle.abort();
        }
        let driving = lock(&shared.active).len();
        tracing::info!(
            runs = driving,
            "handing the workflow runs over: each stops before its next node"
        );
        let ended = tokio::time::timeout(deadline, async {
            while !lock(&shared.active).is_empty() {
                tokio::time::sleep(HAND_OVER_POLL).await;
            }
        })
        .await;
        let mut cut_off = 0;
        if ended.is_err() {
            for (run, active) in lock(&shared.active).drain() {
                if let Some(task) = active.task {
                    task.abort();
                }
                cut_off += 1;
                tracing::warn!(
                    %run,
                    "a workflow run was still in a step when the hand-over ended: it stopped \
                     there, and its lease is left to expire"
                );
            }
        }
        HandOver {
            released: driving.saturating_sub(cut_off),
            cut_off,
        }
    }
}

//! Where runs are kept: the [`RunStore`] trait, and the records it holds.
//!
//! A run survives its process because every transition is written before the engine acts on
//! it: one [`Checkpoint`] holds the run's change of state (a compare-and-set on the state the
//! engine last read), the step's new record, and the event that reports both, and a store
//! writes the three together or not at all. After a crash the engine reads the run and its
//! steps back and continues from the last checkpoint; a step recorded completed is never run
//! again, and one recorded in flight runs again only under the idempotency key derived from
//! its (run, node path, iteration), so the registry's idempotency store replays its first
//! result if it had finished.
//!
//! Steps are keyed by (run, node path, iteration), unique: a `foreach` runs its block once per
//! item, each execution its own step. Events are numbered per run from 1, in the order they
//! were written, which is the order a watcher sees them in.
//!
//! The trait is synchronous, like the audit and approvals stores: the SQLite store writes on
//! the caller's thread, in one short transaction per checkpoint. Every store passes the same
//! conformance suite.
//!
//! # Leases: one engine drives a run at a time
//!
//! Several engines may share a store (the nodes of a fleet on one PostgreSQL). Before it
//! drives a run, an engine takes the run's [`Lease`] ([`RunStore::acquire_lease`]): granted
//! only when the run has no lease, its lease expired, or the engine already holds it. It
//! renews the lease while it drives ([`RunStore::renew_lease`]) and releases it when the drive
//! ends ([`RunStore::release_lease`]), the run finished or paused. A run whose holder died
//! keeps its lease until it expires; then [`RunStore::unleased_runs`] lists it again, for
//! another engine's sweep to take over.
//!
//! Expiry is a liveness matter, never a safety one, because leases are *fenced*: every grant
//! of a lease to a new holder increments the run's fencing token, and a checkpoint that
//! carries a [`Fence`] (the engine's checkpoints all do) is written only if the run's lease is
//! still that holder's with that token; otherwise it is refused with
//! [`RunStoreError::LeaseLost`], in the same atomic step as the state compare-and-set, and
//! nothing is written. So an engine that paused past its lease (a stopped process, a long GC
//! pause, a partition) and wakes up cannot write over the engine that took the run over. A
//! holder whose lease expired but was not taken keeps its token: its checkpoints and its
//! renewal still succeed, since nobody else has driven the run.
//!
//! Lease times are the caller's clock (the engine's, which also sets wake times); a clock
//! that runs ahead only makes a takeover come early, which the fencing makes safe.

use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_core::{
    CallContext, OrgId,
    ask::{Elicitation, Question, Reply},
};
use uuid::Uuid;

use crate::definition::NodePath;
use crate::node::{NodeEvent, NodeState};
use crate::run::{RunEvent, RunState};

/// A run's id: a version 7 UUID, so ids sort by when their runs were created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(Uuid);

impl RunId {
    /// A fresh id.
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }

    /// The UUID.
    pub const fn as_uuid(&self) -> Uuid {
        self.0
    }
}

impl Default for RunId {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for RunId {
    type Err = uuid::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(text).map(Self)
    }
}

/// One run, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Its id.
    pub id: RunId,
    /// The organisation it acts in: runs are listed and shown to their organisation only.
    pub org_id: OrgId,
    /// The workflow's name.
    pub workflow: String,
    /// The definition it runs, as the JSON document it was validated from, so that a resumed
    /// run follows the definition it started with even if the file changed since. Shared, as
    /// the definition's own copy is: a record read back does not copy the document.
    pub definition: Arc<Value>,
    /// Its input.
    pub input: Value,
    /// The identity it acts as: every step is a call with this context (its idempotency key
    /// is set per step).
    pub caller: CallContext,
    /// The run that started it as a sub-workflow, and the node that did.
    pub parent: Option<ParentStep>,
    /// Where it stands.
    pub state: RunState,
    /// Its output, once completed.
    pub output: Option<Value>,
    /// When the engine should next look at it without being told: a durable timer's or a
    /// retry's due time. None: it waits for an event (a decision, a resume) or is finished.
    pub wake_at: Option<Timestamp>,
    /// How many node executions it has made, against its definition's `max_steps`.
    pub steps_taken: u32,
    /// When it was created.
    pub created_at: Timestamp,
    /// When its last checkpoint was written.
    pub updated_at: Timestamp,
}

/// The step of a parent run that a sub-workflow run belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentStep {
    /// The parent run.
    pub run: RunId,
    /// The parent's `workflow` node.
    pub path: NodePath,
    /// Its iteration.
    pub iteration: u32,
}

/// Which execution of which node: a step's unique key within its run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StepKey {
    /// The run.
    pub run: RunId,
    /// The node.
    pub path: NodePath,
    /// The item's index in a `foreach`, else 0.
    pub iteration: u32,
}

/// One execution of one node, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Which execution.
    pub key: StepKey,
    /// Where it stands.
    pub state: NodeState,
    /// Its evaluated params (a tool's input), once evaluated.
    pub params: Option<Value>,
    /// Its output, once completed.
    pub output: Option<Value>,
    /// Its last error (the failure, or the last failed attempt's), as the error's JSON.
    pub error: Option<Value>,
    /// The order it completed in within the run (from 1): compensations run in reverse of it.
    pub completed_seq: Option<u64>,
    /// What its tool asked its client (a form, a completion), in the order asked, each with
    /// its answer once a person or an agent gave one: a step that asks waits
    /// ([`NodeState::WaitingInput`]) until every question has an answer, and its tool, run
    /// again, gets them. Empty when it asked nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<StepQuestion>,
    /// When it started.
    pub started_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// A question a step's tool asked, and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepQuestion {
    /// The question's key within the step: the tool's own, or `ask-1`, `ask-2`, … in the
    /// order it asked one at a time.
    pub key: String,
    /// What was asked.
    pub question: Question,
    /// The answer, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<StepAnswer>,
}

impl StepQuestion {
    /// The question in a line, for people: a form's or a page's message (and the page), a
    /// completion's last message.
    pub fn describe(&self) -> String {
        match &self.question {
            Question::Elicit(Elicitation::Form { message, .. }) => format!("form: {message}"),
            Question::Elicit(Elicitation::Url { message, url, .. }) => {
                format!("page to open: {message} ({url})")
            }
            Question::Sample(request) => {
                let text = request
                    .messages
                    .last()
                    .and_then(|message| message.content.as_text())
                    .unwrap_or("(no text)");
                format!("completion: {text}")
            }
            Question::Roots => "the client's roots".to_owned(),
        }
    }
}

/// The answer to a [`StepQuestion`]: what it says, who gave it and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepAnswer {
    /// The answer, of the question's kind (a form's action and content, a completion).
    pub reply: Reply,
    /// Who gave it (their user id).
    pub by: String,
    /// When.
    pub at: Timestamp,
}

/// What one transition changes, written all together or not at all.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The run.
    pub run: RunId,
    /// When it happened.
    pub at: Timestamp,
    /// The run's change, if its state, output, wake time or step count changes.
    pub run_change: Option<RunChange>,
    /// The step's new record, if a step changes (inserted or replaced by its key).
    pub step: Option<StepRecord>,
    /// The event reporting it.
    pub event: WorkflowEvent,
    /// The lease the writer drives the run under: if set, the checkpoint is written only if
    /// the run's lease is still this holder's with this token (else
    /// [`RunStoreError::LeaseLost`], and nothing is written). `None` writes whoever holds
    /// the lease (tests, tools that repair a run).
    pub fence: Option<Fence>,
}

/// The right to drive one run, held by one engine until a deadline. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The run.
    pub run: RunId,
    /// Who holds it: an engine's id, unique among the engines sharing the store.
    pub owner: String,
    /// The run's fencing token: incremented each time the lease passes to a new holder.
    pub token: u64,
    /// When it expires unless renewed.
    pub expires_at: Timestamp,
}

impl Lease {
    /// What a checkpoint written under this lease carries.
    pub fn fence(&self) -> Fence {
        Fence {
            owner: self.owner.clone(),
            token: self.token,
        }
    }

    /// What [`RunStore::renew_lease`] answers once the store looked: this lease expiring at
    /// `until` if the run's lease is still this one (`held`: its holder and token), else
    /// [`RunStoreError::LeaseLost`].
    pub fn renewed(&self, held: bool, until: Timestamp) -> Result<Lease, RunStoreError> {
        if !held {
            return Err(RunStoreError::LeaseLost {
                run: self.run,
                owner: self.owner.clone(),
            });
        }
        Ok(Lease {
            expires_at: until,
            ..self.clone()
        })
    }
}

/// A lease's holder and token, as a checkpoint carries them: the checkpoint is written only
/// while the run's lease is still this one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fence {
    /// The holder.
    pub owner: String,
    /// The fencing token it was granted.
    pub token: u64,
}

impl Fence {
    /// Whether a checkpoint of `run` under this fence may be written, the run's lease being
    /// `holder`'s (`None`: free) with `token`: `Ok` if it is still this fence's holder and
    /// token, else [`RunStoreError::LeaseLost`].
    pub fn check(&self, run: RunId, holder: Option<&str>, token: u64) -> Result<(), RunStoreError> {
        if holder == Some(self.owner.as_str()) && token == self.token {
            Ok(())
        } else {
            Err(RunStoreError::LeaseLost {
                run,
                owner: self.owner.clone(),
            })
        }
    }
}

/// What a store answers after a statement on run `run` that changes it only under a condition
/// (a lease taken, renewed or released): `matched`, what the statement gave when it matched;
/// else `None` if the run exists (the condition did not hold), or
/// [`RunStoreError::RunNotFound`] if it does not. `run_exists` is asked only when nothing
/// matched; its error is the store's failure.
pub fn unless_missing<T, E>(
    run: RunId,
    matched: Option<T>,
    run_exists: impl FnOnce() -> Result<bool, E>,
) -> Result<Result<Option<T>, RunStoreError>, E> {
    Ok(match matched {
        Some(value) => Ok(Some(value)),
        None if run_exists()? => Ok(None),
        None => Err(RunStoreError::RunNotFound(run)),
    })
}

/// A change to a run's record, applied only if its state is still `from`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunChange {
    /// The state the engine last read: if the stored state differs, nothing is written.
    pub from: RunState,
    /// The new state (may equal `from` when only the other fields change).
    pub to: RunState,
    /// The run's output.
    pub output: Option<Value>,
    /// The next wake time.
    pub wake_at: Option<Timestamp>,
    /// The new step count.
    pub steps_taken: u32,
}

/// What happened in a run: every transition of the run or of a node is one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkflowEvent {
    /// The run changed state.
    Run {
        /// What happened.
        event: RunEvent,
        /// The state it is now in.
        state: RunState,
    },
    /// A node execution changed state.
    Node {
        /// The node.
        path: NodePath,
        /// Its iteration.
        iteration: u32,
        /// What happened.
        event: NodeEvent,
        /// The state it is now in.
        state: NodeState,
        /// For a retry, when the next attempt is due.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_at: Option<Timestamp>,
    },
}

/// An event as stored: numbered within its run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The run.
    pub run: RunId,
    /// Its number within the run, from 1.
    pub seq: u64,
    /// When it happened.
    pub at: Timestamp,
    /// What happened.
    #[serde(flatten)]
    pub event: WorkflowEvent,
}

/// Which runs to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFilter {
    /// The organisation asking: only its runs are listed.
    pub org_id: OrgId,
    /// Only these workflows' runs, if set.
    pub workflow: Option<String>,
    /// Only unfinished runs (not completed, failed or cancelled).
    pub unfinished_only: bool,
    /// The most runs to return, newest first.
    pub limit: usize,
}

/// A store of runs, steps and events. See the module docs for what it must promise.
pub trait RunStore: Send + Sync + 'static {
    /// Stores a new run; refused if its id exists.
    fn create_run(&self, run: &RunRecord) -> Result<(), RunStoreError>;

    /// The run with this id, whatever its organisation (the engine's own read).
    fn run(&self, id: RunId) -> Result<Option<RunRecord>, RunStoreError>;

    /// Writes a checkpoint atomically and returns its event's number. With a run change, the
    /// run's stored state must still be `from` (else [`RunStoreError::StateChanged`], and
    /// nothing is written). Either way the run's `updated_at` becomes the checkpoint's `at`.
    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError>;

    /// Writes `checkpoints` in order, each as [`RunStore::checkpoint`] would, and returns
    /// their events' numbers. A store with transactions writes them in one, all or none; this
    /// default writes them one by one and stops at the first error, which leaves the store as a
    /// crash between two checkpoints would. The engine hands over a step's completion with the
    /// next checkpoint, so that a durable store commits once for both.
    fn checkpoint_all(&self, checkpoints: &[Checkpoint]) -> Result<Vec<u64>, RunStoreError> {
        checkpoints
            .iter()
            .map(|checkpoint| self.checkpoint(checkpoint))
            .collect()
    }

    /// Every step of a run, in key order.
    fn steps(&self, run: RunId) -> Result<Vec<StepRecord>, RunStoreError>;

    /// A run's events numbered after `after`, oldest first, at most `limit`.
    fn events(
        &self,
        run: RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, RunStoreError>;

    /// Runs matching the filter, newest first (by id).
    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, RunStoreError>;

    /// Unfinished runs (not completed, failed or cancelled) of every organisation, oldest
    /// first: what a starting engine looks at, and what the stuck-run monitor reads.
    fn unfinished_runs(&self) -> Result<Vec<RunRecord>, RunStoreError>;

    /// Takes the run's lease for `owner` until `until`, if the run has no lease, its lease
    /// expired (its expiry is at or before `now`), or `owner` holds it already (then it is
    /// extended, and keeps its token). Returns the lease, or `None` when another owner holds
    /// a live one. A lease that passes to a new holder gets the next fencing token. Atomic:
    /// of engines racing for a free lease, exactly one gets it. [`RunStoreError::RunNotFound`]
    /// if there is no such run.
    fn acquire_lease(
        &self,
        run: RunId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<Lease>, RunStoreError>;

    /// Extends a held lease to `until`, and returns it. [`RunStoreError::LeaseLost`] if the
    /// run's lease is no longer `lease`'s holder and token (released, or taken over after it
    /// expired); a lease that expired but was not taken is still this holder's, and renews.
    fn renew_lease(&self, lease: &Lease, until: Timestamp) -> Result<Lease, RunStoreError>;

    /// Gives the lease up, so another engine may take the run at once. Does nothing if the
    /// run's lease is no longer `lease`'s holder and token.
    fn release_lease(&self, lease: &Lease) -> Result<(), RunStoreError>;

    /// Unfinished runs whose lease is free (never taken, or released) or expired at `now`, of
    /// every organisation, oldest first, with an id after `after` (the previous page's last)
    /// if given, at most `limit`: what an engine's takeover sweep looks at, page by page.
    /// Listing takes nothing: the sweep takes each run with
    /// [`acquire_lease`](Self::acquire_lease), which one engine wins.
    fn unleased_runs(
        &self,
        now: Timestamp,
        after: Option<RunId>,
        limit: usize,
    ) -> Result<Vec<RunRecord>, RunStoreError>;
}

/// Why a store refused or failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RunStoreError {
    /// `create_run` with an id that exists.
    #[error("a run with id {0} already exists")]
    DuplicateRun(RunId),
    /// A checkpoint for a run that does not exist.
    #[error("no run has the id {0}")]
    RunNotFound(RunId),
    /// A checkpoint whose run change expected another state: someone else moved the run (a
    /// second engine, a cancel). Nothing was written.
    #[error(
        "run {run} is {} now, not {} as expected: another engine or a cancel moved it; \
         read it again",
        .actual.as_str(),
        .expected.as_str()
    )]
    StateChanged {
        /// The run.
        run: RunId,
        /// The state the checkpoint expected.
        expected: Box<RunState>,
        /// The state it found.
        actual: Box<RunState>,
    },
    /// A checkpoint or a renewal under a lease that is no longer the writer's: the run was
    /// taken over by another engine after the lease expired, or the lease was released.
    /// Nothing was written.
    #[error(
        "the lease of run {run} is no longer held by {owner}: another engine took the run \
         over (this one kept it past its lease's expiry) or it was released; stop driving it"
    )]
    LeaseLost {
        /// The run.
        run: RunId,
        /// The holder whose lease it was.
        owner: String,
    },
    /// The backend failed; nothing of the checkpoint was written.
    #[error("the workflow store failed while {action}: {reason}")]
    Backend {
        /// What it was doing.
        action: String,
        /// What failed.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease() -> Lease {
        Lease {
            run: RunId::new(),
            owner: "node-a".to_owned(),
            token: 3,
            expires_at: Timestamp::constant(1_795_000_000, 0),
        }
    }

    #[test]
    fn a_held_lease_renews_to_the_new_expiry_and_a_lost_one_is_refused() {
        let lease = lease();
        let until = Timestamp::constant(1_795_000_010, 5);
        assert_eq!(
            lease.renewed(true, until),
            Ok(Lease {
                expires_at: until,
                ..lease.clone()
            })
        );
        assert_eq!(
            lease.renewed(false, until),
            Err(RunStoreError::LeaseLost {
                run: lease.run,
                owner: "node-a".to_owned(),
            })
        );
    }

    #[test]
    fn a_fence_passes_only_its_holder_with_its_token() {
        let lease = lease();
        let fence = lease.fence();
        let lost = Err(RunStoreError::LeaseLost {
            run: lease.run,
            owner: "node-a".to_owned(),
        });
        assert_eq!(fence.check(lease.run, Some("node-a"), 3), Ok(()));
        assert_eq!(fence.check(lease.run, Some("node-a"), 4), lost);
        assert_eq!(fence.check(lease.run, Some("node-b"), 3), lost);
        assert_eq!(fence.check(lease.run, None, 3), lost);
    }

    #[test]
    fn unless_missing_tells_a_condition_that_failed_from_a_missing_run() {
        let run = RunId::new();
        let never = || -> Result<bool, ()> { panic!("asked whether the run exists") };
        assert_eq!(unless_missing(run, Some(7), never), Ok(Ok(Some(7))));
        assert_eq!(
            unless_missing(run, None::<u8>, || Ok::<_, ()>(true)),
            Ok(Ok(None))
        );
        assert_eq!(
            unless_missing(run, None::<u8>, || Ok::<_, ()>(false)),
            Ok(Err(RunStoreError::RunNotFound(run)))
        );
        assert_eq!(unless_missing(run, None::<u8>, || Err("down")), Err("down"));
    }
}

//! The run store conformance suite: one set of checks every [`RunStore`] must pass, run
//! unchanged against the in-memory store and against every persistent store.
//!
//! The engine only knows the trait, and what it promises (a run resumed after a crash continues
//! from its last checkpoint, a checkpoint is written whole or not at all, two engines never both
//! move a run, one engine at a time holds a run's lease and a checkpoint under a lost lease is
//! refused, a tenant never sees another's runs, a watcher reads every event once and in
//! order) holds only if every store answers alike. Each check builds a fresh store with the
//! factory it is given, drives it through the trait alone, from several threads where the
//! promise is about races, and compares what comes back with what the in-memory store, the
//! reference, answers.
//!
//! A store's tests invoke the suite with one line, which generates one `#[test]` per check
//! (plus one that checks the generated tests are the list in [`RUN_STORE_CHECKS`]):
//!
//! ```
//! # use std::sync::Arc;
//! # use switchboard_workflows::MemoryRunStore;
//! switchboard_workflows::run_store_conformance!(|| Arc::new(MemoryRunStore::new()));
//! # fn main() {}
//! ```
//!
//! What the suite assumes of a store: a fresh store from the factory is empty and independent
//! of every other store the factory made, and a store may be shared by many threads. The
//! checks return a [`Failure`] instead of panicking, so that this module stays library code;
//! the generated tests turn a failure into a panic naming the check.
//!
//! For the tests around a store, [`WrappedStore`] makes a store out of another one that
//! overrides only the operations a test watches or breaks, [`Guarded`] keeps a store's
//! temporary directory or database alive as long as the store, and [`fixtures`] has the
//! records its other tests write.
//!
//! Timestamps are compared to the nanosecond: a store that rounds them fails the round-trip
//! checks. The suite's instants lie between 1970 and 2262, the range an integer count of
//! nanoseconds holds.

use std::{fmt, sync::Arc};

use jiff::Timestamp;
use serde_json::{Value, json};
use switchboard_core::{
    CallContext, Initiator, OrgId,
    ask::{
        ElicitAction, ElicitReply, Elicitation, Question, Reply, SampleContent, SampleRequest,
        SampleRole, Sampled,
    },
};

use crate::{
    definition::NodePath,
    node::{NodeEvent, NodeState},
    run::{CompensationCause, CompensationFailure, RunEvent, RunState},
    store::{
        Checkpoint, EventRecord, ParentStep, RunChange, RunId, RunRecord, RunStore, RunStoreError,
        StepAnswer, StepKey, StepQuestion, StepRecord, WorkflowEvent,
    },
};

/// Fails the enclosing check with a formatted message unless `condition` holds.
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err($crate::conformance::Failure::new(format!($($message)+)));
        }
    };
}

mod checkpoint_checks;
mod concurrency_checks;
pub mod fixtures;
mod lease_checks;
mod run_checks;
mod wrapper;

pub use checkpoint_checks::{
    a_checkpoint_on_a_missing_run_is_refused, a_checkpoint_writes_run_step_and_event_together,
    a_run_change_applies_only_from_the_expected_state, checkpoint_all_writes_in_order,
    events_are_numbered_from_one_without_gaps, events_page_after_a_number,
    steps_upsert_by_key_and_list_in_key_order,
};
pub use concurrency_checks::{
    concurrent_checkpoints_use_each_event_number_once,
    nodes_number_events_once_and_let_one_racer_win, racing_run_changes_have_exactly_one_winner,
};
pub use lease_checks::{
    a_lease_is_one_owners_until_it_expires,
    a_released_lease_is_free_and_an_untaken_one_still_renews,
    checkpoints_under_a_lost_lease_are_refused, racing_takers_have_exactly_one_winner,
    unleased_runs_are_the_unfinished_ones_free_or_expired,
};
pub use run_checks::{
    a_run_id_is_created_once, list_runs_filters_by_org_workflow_and_state_newest_first,
    runs_round_trip_unchanged, timestamps_round_trip_to_the_nanosecond,
    unfinished_runs_are_every_orgs_oldest_first,
};
pub use wrapper::{Guarded, WrappedStore};

/// Builds a fresh, empty run store for one check.
pub type RunStoreFactory = dyn Fn() -> Arc<dyn RunStore>;

/// Why a check failed: what was expected and what the store did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(String);

impl Failure {
    /// A failure with this explanation.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    /// The explanation.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failure {}

/// A store that fails an operation the suite needed fails the check that asked.
impl From<RunStoreError> for Failure {
    fn from(error: RunStoreError) -> Self {
        Self(error.to_string())
    }
}

/// One check of the suite, run against stores from a [`RunStoreFactory`].
pub struct Check {
    /// The check's function name, which is also the generated test's name.
    pub name: &'static str,
    /// Runs the check against stores from the factory.
    pub run: fn(&RunStoreFactory) -> Result<(), Failure>,
}

impl fmt::Debug for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Check").field("name", &self.name).finish()
    }
}

macro_rules! checks {
    ($(#[$meta:meta])* $list:ident = [$($check:ident),+ $(,)?]) => {
        $(#[$meta])*
        pub const $list: &[Check] = &[$(Check { name: stringify!($check), run: $check }),+];
    };
}

checks!(
    /// Every check of the run store suite, in the order the generated tests list them.
    RUN_STORE_CHECKS = [
        runs_round_trip_unchanged,
        a_run_id_is_created_once,
        a_checkpoint_on_a_missing_run_is_refused,
        a_run_change_applies_only_from_the_expected_state,
        a_checkpoint_writes_run_step_and_event_together,
        checkpoint_all_writes_in_order,
        steps_upsert_by_key_and_list_in_key_order,
        events_are_numbered_from_one_without_gaps,
        events_page_after_a_number,
        list_runs_filters_by_org_workflow_and_state_newest_first,
        unfinished_runs_are_every_orgs_oldest_first,
        concurrent_checkpoints_use_each_event_number_once,
        racing_run_changes_have_exactly_one_winner,
        timestamps_round_trip_to_the_nanosecond,
        a_lease_is_one_owners_until_it_expires,
        a_released_lease_is_free_and_an_untaken_one_still_renews,
        checkpoints_under_a_lost_lease_are_refused,
        unleased_runs_are_the_unfinished_ones_free_or_expired,
        racing_takers_have_exactly_one_winner,
    ]
);

/// Runs every check against stores from `make`; returns the failures, each with its check's
/// name.
pub fn run_all(make: &RunStoreFactory) -> Result<(), Vec<(&'static str, Failure)>> {
    let failures: Vec<_> = RUN_STORE_CHECKS
        .iter()
        .filter_map(|check| (check.run)(make).err().map(|failure| (check.name, failure)))
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

/// Generates one `#[test]` per run store check against the stores that `$make` (a closure or
/// function returning an `Arc` of a store) builds. Invoke it once per test module.
#[macro_export]
macro_rules! run_store_conformance {
    ($make:expr $(,)?) => {
        $crate::__run_store_conformance_tests!(
            || -> ::std::sync::Arc<dyn $crate::RunStore> { ($make)() };
            runs_round_trip_unchanged,
            a_run_id_is_created_once,
            a_checkpoint_on_a_missing_run_is_refused,
            a_run_change_applies_only_from_the_expected_state,
            a_checkpoint_writes_run_step_and_event_together,
            checkpoint_all_writes_in_order,
            steps_upsert_by_key_and_list_in_key_order,
            events_are_numbered_from_one_without_gaps,
            events_page_after_a_number,
            list_runs_filters_by_org_workflow_and_state_newest_first,
            unfinished_runs_are_every_orgs_oldest_first,
            concurrent_checkpoints_use_each_event_number_once,
            racing_run_changes_have_exactly_one_winner,
            timestamps_round_trip_to_the_nanosecond,
            a_lease_is_one_owners_until_it_expires,
            a_released_lease_is_free_and_an_untaken_one_still_renews,
            checkpoints_under_a_lost_lease_are_refused,
            unleased_runs_are_the_unfinished_ones_free_or_expired,
            racing_takers_have_exactly_one_winner,
        );
    };
}

/// The body of [`run_store_conformance!`]: `$make` is the factory closure, and the list of
/// checks is written once, in that macro.
#[doc(hidden)]
#[macro_export]
macro_rules! __run_store_conformance_tests {
    ($make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[test]
            fn $check() {
                let make = $make;
                if let ::std::result::Result::Err(failure) = $crate::conformance::$check(&make) {
                    ::std::panic!(
                        "conformance check `{}` failed: {}",
                        ::std::stringify!($check),
                        failure
                    );
                }
            }
        )+

        #[test]
        fn run_store_conformance_suite_runs_every_check() {
            let generated: &[&str] = &[$(::std::stringify!($check)),+];
            let listed: ::std::vec::Vec<&str> = $crate::conformance::RUN_STORE_CHECKS
                .iter()
                .map(|check| check.name)
                .collect();
            ::std::assert_eq!(
                generated,
                listed.as_slice(),
                "the conformance macro and `conformance::RUN_STORE_CHECKS` list different checks"
            );
        }
    };
}

// Fixtures and helpers the checks share.

/// Seconds since the Unix epoch of the suite's first timestamp (late 2026).
const BASE_SECOND: i64 = 1_795_000_000;

/// A timestamp `second` seconds after the suite's base, with a sub-microsecond part, so that
/// a store that rounds timestamps fails the round-trip checks.
fn at(second: i64) -> Timestamp {
    Timestamp::constant(BASE_SECOND + second, 123_456_789)
}

const ORGS: [&str; 3] = ["acme", "globex", "initech"];

/// The id numbered `n`: version 7 UUIDs whose order is the order of `n`, so that the checks
/// know which run is newer without reading a clock.
fn run_id(n: u64) -> RunId {
    format!("019ab000-0000-7000-8000-{:012x}", n & 0xffff_ffff_ffff)
        .parse()
        .expect("a well-formed UUID")
}

/// Every run state, those with payloads in each of their shapes.
fn every_run_state() -> Vec<RunState> {
    vec![
        RunState::Pending,
        RunState::Initializing,
        RunState::Running,
        RunState::Paused {
            reason: "waiting for mark's approval of \"roster_assign_shift\" ✓".to_owned(),
        },
        RunState::Compensating {
            cause: CompensationCause::Failed {
                error: "notify failed: smtp down".to_owned(),
            },
        },
        RunState::Compensating {
            cause: CompensationCause::Cancelled,
        },
        RunState::Completed,
        RunState::Failed {
            error: "the shift is locked".to_owned(),
            compensation_failure: None,
        },
        RunState::Failed {
            error: "the run was cancelled".to_owned(),
            compensation_failure: Some(CompensationFailure {
                node: "fan_out/assign".to_owned(),
                error: "unassign refused".to_owned(),
            }),
        },
        RunState::Cancelled,
    ]
}

/// Every node state, those with payloads in each of their shapes.
fn every_node_state() -> Vec<NodeState> {
    vec![
        NodeState::Pending,
        NodeState::Running { attempt: 1 },
        NodeState::Retrying {
            attempt: 3,
            error: "rate limited".to_owned(),
        },
        NodeState::WaitingApproval {
            proposal_id: "prop-42".to_owned(),
        },
        NodeState::WaitingTimer { until: at(7_200) },
        NodeState::WaitingInput {
            attempt: 2,
            keys: vec!["ask-1".to_owned(), "pick ✓".to_owned()],
        },
        NodeState::WaitingInput {
            attempt: 1,
            keys: Vec::new(),
        },
        NodeState::Completed,
        NodeState::Failed {
            error: "tool_failed: no such shift".to_owned(),
        },
        NodeState::Skipped {
            reason: "branch not taken".to_owned(),
        },
        NodeState::Compensating,
        NodeState::Compensated,
        NodeState::CompensationFailed {
            error: "unassign refused".to_owned(),
        },
    ]
}

/// JSON with the values a store must not change: unicode and escapes, nested containers, the
/// extreme integers, an exact float, null.
fn varied_json(n: u64) -> Value {
    json!({
        "n": n,
        "note": "ünïcödé ✓ \"quoted\" \\ back\nslash",
        "nested": { "list": [1, 2.5, -3, null, true, "x"], "empty": {}, "none": [] },
        "largest": u64::MAX,
        "smallest": i64::MIN,
        "negative_float": -0.125,
    })
}

/// A deterministic, varied run: `n` picks every optional field, so consecutive samples cover
/// each of them set and unset. Created at `at(n)`.
fn sample_run(n: u64, org: &str, workflow: &str, state: RunState) -> RunRecord {
    let second = i64::try_from(n).unwrap_or(i64::MAX / 2);
    let mut caller = CallContext::builder()
        .org(org)
        .user(["sam", "mark", "alice"][(n % 3) as usize])
        .session(format!("session-{n}"))
        .correlation(format!("correlation-{n}"))
        .roles(
            ["planner", "roster_admin"]
                .into_iter()
                .take((n % 3) as usize),
        )
        .initiator(if n.is_multiple_of(2) {
            Initiator::Human
        } else {
            Initiator::Agent
        })
        .confirmed(n % 4 == 1);
    if !n.is_multiple_of(4) {
        caller = caller.agent_type("planner");
    }
    if n % 2 == 1 {
        caller = caller.thread(format!("thread-{n}"));
    }
    if n % 5 == 2 {
        caller = caller.project(format!("project-{n}"));
    }
    if n % 3 == 2 {
        caller = caller.trace_parent(format!("00-{:032x}-{:016x}-01", n + 1, n + 1));
    }
    RunRecord {
        id: run_id(n),
        org_id: OrgId::from(org),
        workflow: workflow.to_owned(),
        definition: Arc::new(json!({
            "name": workflow,
            "version": 1,
            "nodes": [{ "id": "fetch", "tool": "roster_list_shifts", "params": { "week": "${input.week}" } }],
        })),
        input: varied_json(n),
        caller: caller.build(),
        parent: (n % 3 == 1).then(|| ParentStep {
            run: run_id(n + 10_000),
            path: NodePath::new("fan_out/child"),
            iteration: (n % 7) as u32,
        }),
        state,
        output: match n % 3 {
            0 => None,
            1 => Some(json!({ "assigned": n, "names": ["sam", "ünï"] })),
            _ => Some(Value::Null),
        },
        wake_at: (n % 2 == 1).then(|| at(second + 3_600)),
        steps_taken: (n as u32).wrapping_mul(7),
        created_at: at(second),
        updated_at: at(second + 1),
    }
}

/// A deterministic, varied step of `run`: `n` picks its state and optional fields.
fn sample_step(run: RunId, path: &str, iteration: u32, n: u64) -> StepRecord {
    let states = every_node_state();
    let second = i64::try_from(n).unwrap_or(i64::MAX / 2);
    StepRecord {
        key: StepKey {
            run,
            path: NodePath::new(path),
            iteration,
        },
        state: states[(n as usize) % states.len()].clone(),
        params: (n % 4 != 3).then(|| varied_json(n)),
        output: match n % 3 {
            0 => None,
            1 => Some(json!({ "shift": format!("acme-2026-11-{:02}-pm", 1 + n % 28) })),
            _ => Some(Value::Null),
        },
        error: (n % 2 == 1).then(|| json!({ "kind": "tool_failed", "code": "locked", "n": n })),
        completed_seq: (n % 3 == 1).then_some(n + 1),
        questions: sample_questions(n),
        started_at: at(100 + second),
        updated_at: at(100 + second + 2),
    }
}

/// What the tool of sample step `n` asked: nothing, a form waiting for its answer, or a form
/// declined and a completion answered.
fn sample_questions(n: u64) -> Vec<StepQuestion> {
    let form = Question::Elicit(Elicitation::Form {
        message: format!("Swap shift {n} with whom? ✓"),
        requested_schema: json!({
            "type": "object",
            "properties": { "with": { "type": "string", "enum": ["sam", "ünï"] } },
            "required": ["with"],
        }),
    });
    match n % 3 {
        0 => Vec::new(),
        1 => vec![StepQuestion {
            key: "ask-1".to_owned(),
            question: form,
            answer: None,
        }],
        _ => vec![
            StepQuestion {
                key: "ask-1".to_owned(),
                question: form,
                answer: Some(StepAnswer {
                    reply: Reply::Elicit(ElicitReply {
                        action: ElicitAction::Decline,
                        content: None,
                    }),
                    by: "mark".to_owned(),
                    at: at(50),
                }),
            },
            StepQuestion {
                key: "summary".to_owned(),
                question: Question::Sample(SampleRequest::new("Summarise the week", 200)),
                answer: Some(StepAnswer {
                    reply: Reply::Sample(Sampled {
                        role: SampleRole::Assistant,
                        content: SampleContent::text("A quiet week."),
                        model: "claude".to_owned(),
                        stop_reason: Some("endTurn".to_owned()),
                    }),
                    by: "agent-7".to_owned(),
                    at: at(60),
                }),
            },
        ],
    }
}

/// A node event about `step`, its state the step's.
fn step_event(step: &StepRecord, n: u64) -> WorkflowEvent {
    let events = [
        NodeEvent::Start,
        NodeEvent::Retry {
            error: "rate limited".to_owned(),
        },
        NodeEvent::AwaitApproval {
            proposal_id: "prop-42".to_owned(),
        },
        NodeEvent::AwaitTimer { until: at(7_200) },
        NodeEvent::AwaitInput {
            keys: vec!["ask-1".to_owned()],
        },
        NodeEvent::Answer {
            key: "ask-1".to_owned(),
            by: "mark".to_owned(),
        },
        NodeEvent::Complete,
        NodeEvent::CompensationFailed {
            error: "unassign refused".to_owned(),
        },
    ];
    WorkflowEvent::Node {
        path: step.key.path.clone(),
        iteration: step.key.iteration,
        event: events[(n as usize) % events.len()].clone(),
        state: step.state.clone(),
        retry_at: (n % 2 == 1).then(|| at(9_000 + i64::try_from(n).unwrap_or(0))),
    }
}

/// A run event reporting `state`.
fn run_event(event: RunEvent, state: RunState) -> WorkflowEvent {
    WorkflowEvent::Run { event, state }
}

/// A checkpoint with only an event (no run change, no step).
fn event_only(run: RunId, second: i64, event: WorkflowEvent) -> Checkpoint {
    Checkpoint {
        run,
        at: at(second),
        run_change: None,
        step: None,
        event,
        fence: None,
    }
}

/// A run change from `from` to `to`, the other fields set from `n`.
fn change(from: RunState, to: RunState, n: u64) -> RunChange {
    RunChange {
        from,
        to,
        output: n.is_multiple_of(2).then(|| json!({ "result": n })),
        wake_at: (n % 2 == 1).then(|| at(50_000 + i64::try_from(n).unwrap_or(0))),
        steps_taken: n as u32,
    }
}

/// The run with this id, or a failure saying it vanished.
fn stored_run(store: &dyn RunStore, id: RunId) -> Result<RunRecord, Failure> {
    store
        .run(id)?
        .ok_or_else(|| Failure::new(format!("run {id} was created but is not found")))
}

/// Every event of a run, read in one page.
fn all_events(store: &dyn RunStore, run: RunId) -> Result<Vec<EventRecord>, Failure> {
    Ok(store.events(run, 0, usize::MAX)?)
}

/// What the scoped threads of a check answered, in order; a thread that panicked answers a
/// backend failure while `action`, naming it as the check's `thread` (a writer, a racer).
fn joined<T>(
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T, RunStoreError>>>,
    action: &str,
    thread: &str,
) -> Vec<Result<T, RunStoreError>> {
    handles
        .into_iter()
        .map(|handle| {
            handle.join().unwrap_or_else(|_| {
                Err(RunStoreError::Backend {
                    action: action.to_owned(),
                    reason: format!("the {thread} thread panicked"),
                })
            })
        })
        .collect()
}

/// The ids of `runs`, in their order.
fn ids(runs: &[RunRecord]) -> Vec<RunId> {
    runs.iter().map(|run| run.id).collect()
}

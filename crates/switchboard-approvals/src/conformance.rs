//! The store conformance suites: one set of checks every [`ProposalStore`] must pass and one
//! every [`IdempotencyStore`] must pass, run unchanged against the in-memory stores and against
//! every persistent store.
//!
//! The registry only knows the traits, and what it promises (a decision is made once, a
//! tenant never sees another's proposals, a mutation runs once per key and every retry gets
//! its first result) holds only if every store answers alike. Each check builds fresh stores
//! with the factory it is given, drives them through the trait alone, from several threads
//! where the promise is about races, and compares what comes back with what the in-memory
//! store, the reference, answers.
//!
//! A store's tests invoke a suite with one line, which generates one `#[test]` per check (plus
//! one that checks the generated tests are the list in [`PROPOSAL_CHECKS`] or
//! [`IDEMPOTENCY_CHECKS`]):
//!
//! ```
//! # use std::sync::Arc;
//! # use switchboard_approvals::{MemoryIdempotencyStore, MemoryProposalStore};
//! switchboard_approvals::proposal_store_conformance!(|| Arc::new(MemoryProposalStore::new()));
//! switchboard_approvals::idempotency_store_conformance!(|retention| {
//!     Arc::new(MemoryIdempotencyStore::new(retention))
//! });
//! # fn main() {}
//! ```
//!
//! What the suites assume of a store: a fresh store from the factory is empty and independent
//! of every other store the factory made; an idempotency store keeps results for the retention
//! it is given, counted from when `complete` was called; a store may be shared by many threads.
//! The checks return a [`Failure`] instead of panicking, so that this module stays library
//! code; the generated tests turn a failure into a panic naming the check.

use std::{fmt, sync::Arc, time::Duration};

use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use switchboard_core::digest_json;
use switchboard_core::{IdempotencyKey, Initiator, OrgId};

use crate::{
    idempotency::{Fingerprint, IdempotencyScope, IdempotencyStore},
    proposals::{Proposal, ProposalStatus, ProposalStore, Proposer},
};

/// Fails the enclosing check with a formatted message unless `condition` holds.
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err($crate::conformance::Failure::new(format!($($message)+)));
        }
    };
}

mod idempotency_checks;
mod proposal_checks;

pub use idempotency_checks::{
    a_new_key_runs_and_retries_replay_the_first_result,
    a_released_key_wakes_its_waiters_and_runs_again, another_tool_or_other_params_conflict,
    concurrent_claims_have_exactly_one_runner, failed_first_results_replay_unchanged,
    idempotency_keys_are_per_organisation, racers_wait_for_the_first_result,
    results_expire_after_the_retention, sweep_removes_only_expired_results,
    typed_results_replay_typed_in_the_process_that_stored_them,
};
pub use proposal_checks::{
    a_decision_leaves_pending_exactly_once, a_withdrawn_proposal_is_closed,
    another_org_never_sees_or_decides_a_proposal, expire_overdue_expires_each_proposal_once,
    insert_new_keeps_the_proposal_holding_the_id,
    overdue_proposals_expire_instead_of_being_decided,
    proposals_list_newest_first_within_their_org, proposals_round_trip_unchanged,
    racing_decisions_have_exactly_one_winner, record_outcome_marks_approved_proposals_only,
    unknown_proposals_are_not_found,
};

/// Builds a fresh, empty proposal store for one check.
pub type ProposalStoreFactory = dyn Fn() -> Arc<dyn ProposalStore>;

/// Builds a fresh, empty idempotency store keeping results for the given retention.
pub type IdempotencyStoreFactory = dyn Fn(Duration) -> Arc<dyn IdempotencyStore>;

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
impl From<crate::StoreError> for Failure {
    fn from(error: crate::StoreError) -> Self {
        Self(error.to_string())
    }
}

/// One check of a suite, run against stores from a factory `F`.
pub struct Check<F: ?Sized> {
    /// The check's function name, which is also the generated test's name.
    pub name: &'static str,
    /// Runs the check against stores from the factory.
    pub run: fn(&F) -> Result<(), Failure>,
}

impl<F: ?Sized> fmt::Debug for Check<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Check").field("name", &self.name).finish()
    }
}

macro_rules! checks {
    ($(#[$meta:meta])* $list:ident: $factory:ty = [$($check:ident),+ $(,)?]) => {
        $(#[$meta])*
        pub const $list: &[Check<$factory>] = &[$(Check { name: stringify!($check), run: $check }),+];
    };
}

checks!(
    /// Every check of the proposal store suite, in the order the generated tests list them.
    PROPOSAL_CHECKS: ProposalStoreFactory = [
        proposals_round_trip_unchanged,
        proposals_list_newest_first_within_their_org,
        a_decision_leaves_pending_exactly_once,
        racing_decisions_have_exactly_one_winner,
        overdue_proposals_expire_instead_of_being_decided,
        expire_overdue_expires_each_proposal_once,
        another_org_never_sees_or_decides_a_proposal,
        record_outcome_marks_approved_proposals_only,
        unknown_proposals_are_not_found,
        insert_new_keeps_the_proposal_holding_the_id,
        a_withdrawn_proposal_is_closed,
    ]
);

checks!(
    /// Every check of the idempotency store suite, in the order the generated tests list them.
    IDEMPOTENCY_CHECKS: IdempotencyStoreFactory = [
        a_new_key_runs_and_retries_replay_the_first_result,
        failed_first_results_replay_unchanged,
        another_tool_or_other_params_conflict,
        idempotency_keys_are_per_organisation,
        racers_wait_for_the_first_result,
        a_released_key_wakes_its_waiters_and_runs_again,
        concurrent_claims_have_exactly_one_runner,
        results_expire_after_the_retention,
        sweep_removes_only_expired_results,
        typed_results_replay_typed_in_the_process_that_stored_them,
    ]
);

/// Runs every check of `checks` against stores from `make`; returns the failures, each with
/// its check's name.
pub fn run_all<F: ?Sized>(
    checks: &[Check<F>],
    make: &F,
) -> Result<(), Vec<(&'static str, Failure)>> {
    let failures: Vec<_> = checks
        .iter()
        .filter_map(|check| (check.run)(make).err().map(|failure| (check.name, failure)))
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

/// Generates one `#[test]` per proposal store check against the stores that `$make` (a closure
/// or function returning an `Arc` of a store) builds. Invoke it once per test module.
#[macro_export]
macro_rules! proposal_store_conformance {
    ($make:expr $(,)?) => {
        $crate::__approvals_conformance_tests!(
            proposal_conformance_suite_runs_every_check,
            PROPOSAL_CHECKS,
            || -> ::std::sync::Arc<dyn $crate::ProposalStore> { ($make)() };
            proposals_round_trip_unchanged,
            proposals_list_newest_first_within_their_org,
            a_decision_leaves_pending_exactly_once,
            racing_decisions_have_exactly_one_winner,
            overdue_proposals_expire_instead_of_being_decided,
            expire_overdue_expires_each_proposal_once,
            another_org_never_sees_or_decides_a_proposal,
            record_outcome_marks_approved_proposals_only,
            unknown_proposals_are_not_found,
            insert_new_keeps_the_proposal_holding_the_id,
            a_withdrawn_proposal_is_closed,
        );
    };
}

/// Generates one `#[test]` per idempotency store check against the stores that `$make` (a
/// closure or function taking the retention and returning an `Arc` of a store) builds. Invoke
/// it once per test module.
#[macro_export]
macro_rules! idempotency_store_conformance {
    ($make:expr $(,)?) => {
        $crate::__approvals_conformance_tests!(
            idempotency_conformance_suite_runs_every_check,
            IDEMPOTENCY_CHECKS,
            |retention: ::std::time::Duration| -> ::std::sync::Arc<dyn $crate::IdempotencyStore> {
                ($make)(retention)
            };
            a_new_key_runs_and_retries_replay_the_first_result,
            failed_first_results_replay_unchanged,
            another_tool_or_other_params_conflict,
            idempotency_keys_are_per_organisation,
            racers_wait_for_the_first_result,
            a_released_key_wakes_its_waiters_and_runs_again,
            concurrent_claims_have_exactly_one_runner,
            results_expire_after_the_retention,
            sweep_removes_only_expired_results,
            typed_results_replay_typed_in_the_process_that_stored_them,
        );
    };
}

/// The body of both suites' macros: `$make` is the factory closure with the suite's signature,
/// and the list of checks is written once, in each suite's macro.
#[doc(hidden)]
#[macro_export]
macro_rules! __approvals_conformance_tests {
    ($suite_test:ident, $list:ident, $make:expr; $($check:ident),+ $(,)?) => {
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
        fn $suite_test() {
            let generated: &[&str] = &[$(::std::stringify!($check)),+];
            let listed: ::std::vec::Vec<&str> = $crate::conformance::$list
                .iter()
                .map(|check| check.name)
                .collect();
            ::std::assert_eq!(
                generated,
                listed.as_slice(),
                "the conformance macro and `conformance::{}` list different checks",
                ::std::stringify!($list)
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

/// `timestamp` moved by `seconds` (either way).
fn shifted(timestamp: Timestamp, seconds: i64) -> Timestamp {
    timestamp
        .saturating_add(SignedDuration::from_secs(seconds))
        .unwrap_or(timestamp)
}

const ORGS: [&str; 3] = ["acme", "globex", "initech"];

/// A deterministic, varied proposal: `n` picks every optional field, so consecutive samples
/// cover each of them set and unset. Created at `at(n)`, expiring an hour later.
fn sample_proposal(n: usize, org: &str) -> Proposal {
    let created_at = at(n as i64);
    Proposal {
        id: format!("prop-conformance-{org}-{n:04}").into(),
        org_id: OrgId::from(org),
        tool: Arc::from(if n.is_multiple_of(2) {
            "roster_assign_shift"
        } else {
            "roster_clear_roster"
        }),
        params: Arc::new(json!({
            "shift_id": format!("{org}-2026-11-{:02}-pm", 23 + n % 7),
            "user_id": "sam",
            "note": "ünïcödé ✓ \"quoted\"",
            "nested": { "list": [1, 2.5, -3, null, true], "empty": {} },
            "n": n,
        })),
        summary: format!("assign shift {n} to sam"),
        proposer: Proposer {
            user_id: ["sam", "mark", "alice"][n % 3].into(),
            session_id: format!("session-{n}").into(),
            correlation_id: format!("correlation-{n}").into(),
            initiator: if n.is_multiple_of(3) {
                Initiator::Human
            } else {
                Initiator::Agent
            },
            agent_type: (!n.is_multiple_of(4)).then(|| "planner".into()),
            thread_id: (n % 2 == 1).then(|| format!("thread-{n}").into()),
            project_id: (n % 5 == 2).then(|| format!("project-{n}").into()),
        },
        created_at,
        expires_at: shifted(created_at, 3_600),
        status: ProposalStatus::Pending,
    }
}

/// The scope of `key` in `org`.
fn scope(org: &str, key: &str) -> IdempotencyScope {
    IdempotencyScope::new(OrgId::from(org), IdempotencyKey::from(key))
}

/// A fingerprint of `tool` with params `{"n": n}`.
fn fingerprint(tool: &str, n: u64) -> Fingerprint {
    Fingerprint::new(
        tool,
        digest_json(&json!({ "n": n })).expect("JSON has a digest"),
    )
}

/// A runtime to wait on a [`Waiter`](crate::Waiter) with, bounded so a store that never wakes
/// its waiters fails instead of hanging.
fn wait_for<T>(what: &str, future: impl std::future::Future<Output = T>) -> Result<T, Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|error| Failure::new(format!("could not start a runtime: {error}")))?;
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), future).await })
        .map_err(|_| Failure::new(format!("{what} did not resolve within 10 s")))
}

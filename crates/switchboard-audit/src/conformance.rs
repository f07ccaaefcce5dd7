//! The store conformance suite: one set of checks that every [`AuditStore`] must pass, run
//! unchanged against the in-memory table and against every persistent store.
//!
//! The registry only knows the trait, so a store that answers differently from the others (in
//! another order, ignoring a filter, leaking another tenant's records, reusing ids after a
//! retention sweep) breaks its callers silently. Each check here builds fresh stores with the
//! factory it is given, drives them through the trait, or through an [`AuditLog`](crate::AuditLog)
//! in front of them, and compares what comes back with a reference model:
//! [`AuditQuery::matches`] over the records it appended, newest first.
//!
//! A store's tests invoke the whole suite with one line, which generates one `#[test]` per check
//! (plus one that checks the list of generated tests is the list of [`CHECKS`]):
//!
//! ```
//! # use std::sync::Arc;
//! # use switchboard_audit::MemoryAuditStore;
//! switchboard_audit::audit_store_conformance!(|| Arc::new(MemoryAuditStore::new()));
//! # fn main() {}
//! ```
//!
//! [`run_all`] runs every check in a loop instead, for callers without a test harness.
//!
//! Beside the suite: [`model`], the test of a store against the in-memory table on random
//! histories, which every persistent store runs with `proptest!`; [`Guarded`], a store with
//! its temporary directory or database, which a store's tests hand to the suite;
//! [`call_record`], the sample record of their other tests; and [`WrappedStore`], for the test
//! stores that change a few operations of another store (refusing, holding or counting them).
//!
//! What the suite assumes of a store: a fresh store from the factory is empty and independent of
//! every other store the factory made; it holds at least [`MIN_CAPACITY`] records without
//! evicting any; it returns records exactly as they were appended (timestamps to the
//! nanosecond included); and the factory may be called from several threads' worth of checks
//! in one process. The checks return a [`Failure`] instead of panicking, so that this module
//! stays library code; the generated tests turn a failure into a panic naming the check.

use std::{fmt, sync::Arc};

use jiff::Timestamp;
use serde_json::json;
use switchboard_core::{Category, CorrelationId, ErrorKind, Initiator, OrgId};

use switchboard_core::{Digest, digest_json};

use crate::{
    record::{AuditId, AuditRecord, Outcome},
    store::{AuditQuery, AuditStore},
};

/// Fails the enclosing check with a formatted message unless `condition` holds.
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err($crate::conformance::Failure::new(format!($($message)+)));
        }
    };
}

mod log_checks;
pub mod model;
mod store_checks;
mod support;

pub use support::{Guarded, WrappedStore, call_record, correlation_digest};

pub use log_checks::{
    log_relaxed_query_after_flush_sees_everything, log_retention_sweep_deletes_expired_records,
    log_shutdown_writes_everything_it_took, log_strict_acknowledged_records_are_in_the_store,
};
pub use store_checks::{
    append_assigns_increasing_ids, concurrent_writers_and_readers_lose_nothing,
    ids_are_never_reused_after_retention, paging_with_before_id_covers_everything_once,
    queries_filter_by_every_field_newest_first, records_round_trip_unchanged,
    records_with_asks_round_trip, records_without_a_digest_round_trip,
    retention_deletes_oldest_first_within_the_limit, switch_records_round_trip,
    tenant_scoping_never_leaks_another_org,
};

/// How many records a store under test must hold without evicting any.
pub const MIN_CAPACITY: usize = 10_000;

/// Builds a fresh, empty store for one check.
pub type StoreFactory = dyn Fn() -> Arc<dyn AuditStore>;

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

/// One check of the suite.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// The check's function name, which is also the generated test's name.
    pub name: &'static str,
    /// Runs the check against stores from the factory.
    pub run: fn(&StoreFactory) -> Result<(), Failure>,
}

macro_rules! checks {
    ($($check:ident),+ $(,)?) => {
        /// Every check of the suite, in the order the generated tests list them.
        pub const CHECKS: &[Check] = &[$(Check { name: stringify!($check), run: $check }),+];
    };
}

checks!(
    append_assigns_increasing_ids,
    records_without_a_digest_round_trip,
    records_with_asks_round_trip,
    switch_records_round_trip,
    records_round_trip_unchanged,
    queries_filter_by_every_field_newest_first,
    paging_with_before_id_covers_everything_once,
    retention_deletes_oldest_first_within_the_limit,
    ids_are_never_reused_after_retention,
    concurrent_writers_and_readers_lose_nothing,
    tenant_scoping_never_leaks_another_org,
    log_relaxed_query_after_flush_sees_everything,
    log_strict_acknowledged_records_are_in_the_store,
    log_shutdown_writes_everything_it_took,
    log_retention_sweep_deletes_expired_records,
);

/// Runs every check against stores from `make`; returns the failures, each with its check's
/// name.
pub fn run_all(make: &StoreFactory) -> Result<(), Vec<(&'static str, Failure)>> {
    let failures: Vec<_> = CHECKS
        .iter()
        .filter_map(|check| (check.run)(make).err().map(|failure| (check.name, failure)))
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures)
    }
}

/// Generates one `#[test]` per conformance check against the stores that `$make` (a closure or
/// function returning an `Arc` of a store) builds. Invoke it once, in a test module of its own.
#[macro_export]
macro_rules! audit_store_conformance {
    ($make:expr $(,)?) => {
        $crate::__audit_store_conformance_tests!(
            $make;
            append_assigns_increasing_ids,
            records_without_a_digest_round_trip,
            records_with_asks_round_trip,
            switch_records_round_trip,
            records_round_trip_unchanged,
            queries_filter_by_every_field_newest_first,
            paging_with_before_id_covers_everything_once,
            retention_deletes_oldest_first_within_the_limit,
            ids_are_never_reused_after_retention,
            concurrent_writers_and_readers_lose_nothing,
            tenant_scoping_never_leaks_another_org,
            log_relaxed_query_after_flush_sees_everything,
            log_strict_acknowledged_records_are_in_the_store,
            log_shutdown_writes_everything_it_took,
            log_retention_sweep_deletes_expired_records,
        );
    };
}

/// The body of [`audit_store_conformance!`]: the list of checks is written once, there.
#[doc(hidden)]
#[macro_export]
macro_rules! __audit_store_conformance_tests {
    ($make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[test]
            fn $check() {
                let make = || -> ::std::sync::Arc<dyn $crate::AuditStore> { ($make)() };
                let result = $crate::conformance::$check(&make);
                if let ::std::result::Result::Err(failure) = result {
                    ::std::panic!(
                        "conformance check `{}` failed: {}",
                        ::std::stringify!($check),
                        failure
                    );
                }
            }
        )+

        #[test]
        fn conformance_suite_runs_every_check() {
            let generated: &[&str] = &[$(::std::stringify!($check)),+];
            let listed: ::std::vec::Vec<&str> = $crate::conformance::CHECKS
                .iter()
                .map(|check| check.name)
                .collect();
            ::std::assert_eq!(
                generated,
                listed.as_slice(),
                "`audit_store_conformance!` and `conformance::CHECKS` list different checks"
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
const TOOLS: [&str; 4] = [
    "roster_list_shifts",
    "core_get_current_user",
    "roster_assign_shift",
    "roster_clear_roster",
];
const USERS: [&str; 5] = ["alice", "mark", "sam", "gina", "hank"];

/// The digest the `n`th sample's input has.
fn input_digest(n: usize) -> Digest {
    digest_json(&json!({ "n": n })).expect("JSON has a digest")
}

/// A deterministic, varied record: `n` picks every field, so a dataset of consecutive samples
/// covers each filter value many times, with every tenth record missing its context (a
/// `missing_context` refusal) and timestamps increasing with `n`.
fn sample(n: usize) -> AuditRecord {
    let missing_context = n % 10 == 9;
    let outcome = match n % 6 {
        0 => Outcome::Error(ErrorKind::PermissionDenied),
        1 => Outcome::Error(ErrorKind::Timeout),
        _ if missing_context => Outcome::Error(ErrorKind::MissingContext),
        _ => Outcome::Ok,
    };
    let category = Category::ALL[n % Category::ALL.len()];
    AuditRecord {
        asks: Vec::new(),
        switch: None,
        // Every third record names the node that ran it, so stores round-trip that too.
        node: n
            .is_multiple_of(3)
            .then(|| format!("node-{}", n % 2).into()),
        id: 0,
        timestamp: at(n as i64 * 10),
        tool: TOOLS[n % TOOLS.len()].into(),
        domain: (n % 4 != 3).then(|| "roster".into()),
        category: (n % 4 != 3).then_some(category),
        org_id: (!missing_context).then(|| OrgId::from(ORGS[n % ORGS.len()])),
        user_id: (!missing_context).then(|| USERS[n % USERS.len()].into()),
        session_id: (!missing_context).then(|| format!("session-{}", n % 7).into()),
        correlation_id: Some(CorrelationId::from(format!("corr-{}", n / 4))),
        initiator: if n.is_multiple_of(2) {
            Initiator::Human
        } else {
            Initiator::Agent
        },
        input_hash: Some(input_digest(n)),
        output_hash: outcome
            .is_ok()
            .then(|| digest_json(&json!({ "out": n })).expect("JSON has a digest")),
        digest_error: None,
        duration_us: n as u64 * 3,
        outcome,
        // Every fifth record belongs to an action, so stores round-trip that too.
        action: n.is_multiple_of(5).then(|| {
            let events = [
                crate::ActionEvent::Executed,
                crate::ActionEvent::Replayed,
                crate::ActionEvent::Proposed,
                crate::ActionEvent::Approved,
                crate::ActionEvent::Rejected,
                crate::ActionEvent::Expired,
            ];
            crate::AuditAction::new(
                switchboard_core::ActionId::from(format!("action-{}", n / 10)),
                events[(n / 5) % events.len()],
            )
        }),
    }
}

/// Appends `records` in one batch and returns them with their ids.
fn append(
    store: &dyn AuditStore,
    mut records: Vec<AuditRecord>,
) -> Result<Vec<AuditRecord>, Failure> {
    store.append_batch(&mut records).map_err(|error| {
        Failure::new(format!(
            "append_batch of {} records failed: {error}",
            records.len()
        ))
    })?;
    Ok(records)
}

/// Appends samples `0..count` in batches of growing size (1, 2, 3, …) and returns them with
/// their ids, in append order.
fn seed(store: &dyn AuditStore, count: usize) -> Result<Vec<AuditRecord>, Failure> {
    let mut appended = Vec::with_capacity(count);
    let mut batch_size = 1;
    while appended.len() < count {
        let end = (appended.len() + batch_size).min(count);
        appended.extend(append(store, (appended.len()..end).map(sample).collect())?);
        batch_size += 1;
    }
    Ok(appended)
}

fn query(store: &dyn AuditStore, query: &AuditQuery) -> Result<Vec<AuditRecord>, Failure> {
    store
        .query(query)
        .map_err(|error| Failure::new(format!("query {query:?} failed: {error}")))
}

fn ids(records: &[AuditRecord]) -> Vec<AuditId> {
    records.iter().map(|record| record.id).collect()
}

/// What a conforming store answers to `query` over `appended`: the matching records, newest
/// first, at most `limit`.
fn expected(appended: &[AuditRecord], query: &AuditQuery) -> Vec<AuditRecord> {
    let mut matching: Vec<AuditRecord> = appended
        .iter()
        .filter(|record| query.matches(record))
        .cloned()
        .collect();
    matching.sort_by_key(|record| std::cmp::Reverse(record.id));
    matching.truncate(query.limit.unwrap_or(usize::MAX));
    matching
}

/// Checks that `got` is exactly what [`expected`] says, field by field.
fn ensure_answer(
    store: &dyn AuditStore,
    appended: &[AuditRecord],
    question: &AuditQuery,
) -> Result<Vec<AuditRecord>, Failure> {
    let got = query(store, question)?;
    ensure_newest_first(&got, question)?;
    let want = expected(appended, question);
    ensure!(
        ids(&got) == ids(&want),
        "query {question:?} returned ids {:?}, expected {:?}",
        ids(&got),
        ids(&want)
    );
    if let Some((got, want)) = got.iter().zip(&want).find(|(got, want)| got != want) {
        return Err(Failure::new(format!(
            "query {question:?} returned record {} changed: got {got:?}, appended {want:?}",
            want.id
        )));
    }
    Ok(got)
}

/// Checks that ids strictly decrease along `records`.
fn ensure_newest_first(records: &[AuditRecord], question: &AuditQuery) -> Result<(), Failure> {
    ensure!(
        records.windows(2).all(|pair| pair[0].id > pair[1].id),
        "query {question:?} is not newest first (ids strictly decreasing): {:?}",
        ids(records)
    );
    Ok(())
}

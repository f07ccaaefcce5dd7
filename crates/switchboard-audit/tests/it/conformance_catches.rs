//! The conformance suite has teeth: stores with one deliberate flaw each (built on the
//! in-memory table) fail the checks that guard against that flaw. A suite that every store
//! passes proves nothing unless some stores fail it.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use jiff::Timestamp;
use switchboard_audit::{
    AuditError, AuditQuery, AuditRecord, AuditStats, AuditStore, MemoryAuditStore,
    conformance::{self, StoreFactory},
};

/// What is wrong with a [`Flawed`] store.
#[derive(Debug, Clone, Copy)]
enum Flaw {
    /// Ignores the org filter: a tenant leak.
    IgnoresOrg,
    /// Returns results oldest first.
    OldestFirst,
    /// Keeps timestamps to the microsecond only.
    RoundsTimestamps,
    /// Deletes records at the cutoff too, and ignores the limit.
    GreedyRetention,
    /// Silently drops the last record of every batch of more than one.
    DropsRecords,
    /// Numbers records from 1 again once retention has emptied it.
    ReusesIds,
    /// Does not keep why a digest is missing.
    ForgetsDigestErrors,
    /// Does not keep what a call asked the client.
    ForgetsAsks,
}

struct Flawed {
    inner: MemoryAuditStore,
    flaw: Flaw,
    emptied: AtomicBool,
}

impl AuditStore for Flawed {
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        let kept = match self.flaw {
            Flaw::DropsRecords if records.len() > 1 => records.len() - 1,
            _ => records.len(),
        };
        let mut stored = records[..kept].to_vec();
        if let Flaw::ForgetsDigestErrors = self.flaw {
            for record in &mut stored {
                record.digest_error = None;
            }
        }
        if let Flaw::ForgetsAsks = self.flaw {
            for record in &mut stored {
                record.asks.clear();
            }
        }
        if let Flaw::RoundsTimestamps = self.flaw {
            // Rounded in what is kept only: the caller's records keep their nanoseconds.
            for record in &mut stored {
                let micros = record.timestamp.as_microsecond();
                record.timestamp = Timestamp::from_microsecond(micros).expect("in range");
            }
        }
        self.inner.append_batch(&mut stored)?;
        let reused = matches!(self.flaw, Flaw::ReusesIds) && self.emptied.load(Ordering::SeqCst);
        for (index, record) in records.iter_mut().enumerate() {
            record.id = match stored.get(index) {
                Some(stored) if reused => stored.id.saturating_sub(5).max(1),
                Some(stored) => stored.id,
                None => record.id.max(1) + 1_000_000,
            };
        }
        Ok(())
    }

    fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        let mut asked = query.clone();
        if let Flaw::IgnoresOrg = self.flaw {
            asked.org_id = None;
        }
        let mut found = self.inner.query(&asked)?;
        if let Flaw::OldestFirst = self.flaw {
            found.reverse();
        }
        if matches!(self.flaw, Flaw::ReusesIds) && self.emptied.load(Ordering::SeqCst) {
            for record in &mut found {
                record.id = record.id.saturating_sub(5).max(1);
            }
        }
        Ok(found)
    }

    fn delete_before(&self, cutoff: Timestamp, limit: usize) -> Result<u64, AuditError> {
        let deleted = match self.flaw {
            Flaw::GreedyRetention => self
                .inner
                .delete_before(cutoff + jiff::SignedDuration::from_secs(1), usize::MAX)?,
            _ => self.inner.delete_before(cutoff, limit)?,
        };
        if self.inner.stats().held == 0 {
            self.emptied.store(true, Ordering::SeqCst);
        }
        Ok(deleted)
    }

    fn stats(&self) -> AuditStats {
        self.inner.stats()
    }
}

/// The names of the checks a store with `flaw` fails.
fn failed_checks(flaw: Flaw) -> Vec<&'static str> {
    let make = move || -> Arc<dyn AuditStore> {
        Arc::new(Flawed {
            inner: MemoryAuditStore::new(),
            flaw,
            emptied: AtomicBool::new(false),
        })
    };
    let make: &StoreFactory = &make;
    conformance::CHECKS
        .iter()
        .filter(|check| (check.run)(make).is_err())
        .map(|check| check.name)
        .collect()
}

fn assert_caught(flaw: Flaw, by: &[&str]) {
    let failed = failed_checks(flaw);
    for check in by {
        assert!(
            failed.contains(check),
            "{flaw:?} should fail `{check}`; it failed only {failed:?}"
        );
    }
}

#[test]
fn a_tenant_leak_is_caught() {
    assert_caught(
        Flaw::IgnoresOrg,
        &[
            "tenant_scoping_never_leaks_another_org",
            "queries_filter_by_every_field_newest_first",
        ],
    );
}

#[test]
fn oldest_first_results_are_caught() {
    assert_caught(
        Flaw::OldestFirst,
        &[
            "append_assigns_increasing_ids",
            "queries_filter_by_every_field_newest_first",
            "paging_with_before_id_covers_everything_once",
        ],
    );
}

#[test]
fn rounded_timestamps_are_caught() {
    assert_caught(Flaw::RoundsTimestamps, &["records_round_trip_unchanged"]);
}

#[test]
fn greedy_retention_is_caught() {
    assert_caught(
        Flaw::GreedyRetention,
        &["retention_deletes_oldest_first_within_the_limit"],
    );
}

#[test]
fn dropped_records_are_caught() {
    assert_caught(
        Flaw::DropsRecords,
        &[
            "concurrent_writers_and_readers_lose_nothing",
            "log_relaxed_query_after_flush_sees_everything",
            "log_shutdown_writes_everything_it_took",
        ],
    );
}

#[test]
fn reused_ids_are_caught() {
    assert_caught(Flaw::ReusesIds, &["ids_are_never_reused_after_retention"]);
}

#[test]
fn the_unflawed_table_passes_everything() {
    let make = || -> Arc<dyn AuditStore> { Arc::new(MemoryAuditStore::new()) };
    if let Err(failures) = conformance::run_all(&make) {
        panic!("the in-memory table fails {failures:?}");
    }
}

#[test]
fn forgotten_digest_errors_are_caught() {
    assert_caught(
        Flaw::ForgetsDigestErrors,
        &["records_without_a_digest_round_trip"],
    );
}

#[test]
fn forgotten_asks_are_caught() {
    assert_caught(Flaw::ForgetsAsks, &["records_with_asks_round_trip"]);
}

//! The conformance suites have teeth: stores with one deliberate flaw each (built on the
//! in-memory stores) fail the checks that guard against that flaw. A suite that every store
//! passes proves nothing unless some stores fail it.

use std::{sync::Arc, thread, time::Duration};

use jiff::Timestamp;
use switchboard_approvals::{
    Claim, Decision, Fingerprint, IdempotencyScope, IdempotencyStore, MemoryIdempotencyStore,
    MemoryProposalStore, Proposal, ProposalStatus, ProposalStore, StoreError, StoredOutcome,
    TransitionError,
    conformance::{self, Failure, IdempotencyStoreFactory, ProposalStoreFactory},
};
use switchboard_core::{OrgId, ProposalId};

/// What is wrong with a [`FlawedProposals`] store.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ProposalFlaw {
    /// `get` and `list` ignore the org: a tenant leak.
    LeaksOrgs,
    /// `decide` reads, then writes: racing deciders can both win.
    NoCompareAndSet,
    /// `list` is oldest first.
    OldestFirst,
    /// `expire_overdue` reports overdue proposals without expiring them.
    ExpiresTwice,
}

struct FlawedProposals {
    inner: MemoryProposalStore,
    flaw: ProposalFlaw,
}

impl ProposalStore for FlawedProposals {
    fn insert(&self, proposal: Proposal) -> Result<(), StoreError> {
        self.inner.insert(proposal)
    }

    fn insert_new(&self, proposal: Proposal) -> Result<Option<Proposal>, StoreError> {
        self.inner.insert_new(proposal)
    }

    fn get(&self, org_id: &OrgId, id: &ProposalId) -> Result<Option<Proposal>, StoreError> {
        if self.flaw == ProposalFlaw::LeaksOrgs {
            for org in ["acme", "globex", "initech"].map(OrgId::from) {
                if let Some(found) = self.inner.get(&org, id)? {
                    return Ok(Some(found));
                }
            }
            return Ok(None);
        }
        self.inner.get(org_id, id)
    }

    fn list(&self, org_id: &OrgId) -> Result<Vec<Proposal>, StoreError> {
        let mut listed = match self.flaw {
            ProposalFlaw::LeaksOrgs => {
                let mut all = Vec::new();
                for org in ["acme", "globex", "initech"].map(OrgId::from) {
                    all.extend(self.inner.list(&org)?);
                }
                all
            }
            _ => self.inner.list(org_id)?,
        };
        if self.flaw == ProposalFlaw::OldestFirst {
            listed.reverse();
        }
        Ok(listed)
    }

    fn decide(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        decision: Decision,
        now: Timestamp,
    ) -> Result<Proposal, TransitionError> {
        if self.flaw != ProposalFlaw::NoCompareAndSet {
            return self.inner.decide(org_id, id, decision, now);
        }
        let Some(mut proposal) = self.inner.get(org_id, id)? else {
            return Err(TransitionError::NotFound);
        };
        if !proposal.status.is_pending() {
            return Err(TransitionError::Closed(Box::new(proposal)));
        }
        // Check, then act: the window a compare-and-set closes.
        thread::sleep(Duration::from_millis(5));
        proposal.status = match decision {
            Decision::Approve { by } => ProposalStatus::Approved {
                by,
                at: now,
                outcome: None,
            },
            Decision::Reject { by, feedback } => ProposalStatus::Rejected {
                by,
                at: now,
                feedback,
            },
            Decision::Expire => ProposalStatus::Expired { at: now },
            Decision::Withdraw { by, reason } => ProposalStatus::Withdrawn {
                by,
                at: now,
                reason,
            },
        };
        self.inner.insert(proposal.clone())?;
        Ok(proposal)
    }

    fn record_outcome(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        outcome: &str,
    ) -> Result<(), StoreError> {
        self.inner.record_outcome(org_id, id, outcome)
    }

    fn expire_overdue(&self, now: Timestamp) -> Result<Vec<Proposal>, StoreError> {
        if self.flaw != ProposalFlaw::ExpiresTwice {
            return self.inner.expire_overdue(now);
        }
        let mut due = Vec::new();
        for org in ["acme", "globex", "initech"].map(OrgId::from) {
            due.extend(
                self.inner
                    .list(&org)?
                    .into_iter()
                    .filter(|proposal| proposal.status.is_pending() && proposal.expires_at <= now)
                    .map(|mut proposal| {
                        proposal.status = ProposalStatus::Expired { at: now };
                        proposal
                    }),
            );
        }
        Ok(due)
    }
}

/// What is wrong with a [`FlawedKeys`] store.
#[derive(Debug, Clone, Copy, PartialEq)]
enum KeyFlaw {
    /// Every claim runs: no replay, no waiting.
    AlwaysRuns,
    /// A failed first result replays as a success with no output.
    ForgetsErrors,
    /// Keys are global, not per organisation.
    IgnoresOrg,
    /// Results are kept forever, whatever the retention.
    IgnoresRetention,
}

struct FlawedKeys {
    inner: MemoryIdempotencyStore,
    flaw: KeyFlaw,
}

impl FlawedKeys {
    fn scope(&self, scope: &IdempotencyScope) -> IdempotencyScope {
        match self.flaw {
            KeyFlaw::IgnoresOrg => IdempotencyScope::new("everyone".into(), scope.key.clone()),
            _ => scope.clone(),
        }
    }
}

impl IdempotencyStore for FlawedKeys {
    fn claim(&self, scope: &IdempotencyScope, fingerprint: &Fingerprint, now: Timestamp) -> Claim {
        if self.flaw == KeyFlaw::AlwaysRuns {
            return Claim::Run;
        }
        self.inner.claim(&self.scope(scope), fingerprint, now)
    }

    fn complete(&self, scope: &IdempotencyScope, outcome: Arc<StoredOutcome>) {
        let outcome = match (&outcome.result, self.flaw) {
            (Err(_), KeyFlaw::ForgetsErrors) => Arc::new(StoredOutcome::ok(
                outcome.action_id.clone(),
                serde_json::Value::Null,
            )),
            _ => outcome,
        };
        self.inner.complete(&self.scope(scope), outcome);
    }

    fn release(&self, scope: &IdempotencyScope) {
        self.inner.release(&self.scope(scope));
    }

    fn sweep(&self, now: Timestamp) -> usize {
        self.inner.sweep(now)
    }

    fn len(&self) -> usize {
        self.inner.len()
    }
}

fn proposals_with(flaw: ProposalFlaw) -> impl Fn() -> Arc<dyn ProposalStore> {
    move || {
        Arc::new(FlawedProposals {
            inner: MemoryProposalStore::new(),
            flaw,
        })
    }
}

fn keys_with(flaw: KeyFlaw) -> impl Fn(Duration) -> Arc<dyn IdempotencyStore> {
    move |retention| {
        let retention = match flaw {
            KeyFlaw::IgnoresRetention => Duration::from_secs(1_000_000_000),
            _ => retention,
        };
        Arc::new(FlawedKeys {
            inner: MemoryIdempotencyStore::new(retention),
            flaw,
        })
    }
}

fn ensure_caught(result: Result<(), Failure>, flaw: &str, check: &str) {
    let failure = result.expect_err(&format!("`{check}` should catch a store that {flaw}"));
    assert!(!failure.message().is_empty());
}

#[test]
fn a_store_leaking_other_orgs_proposals_fails_the_tenant_check() {
    let make = proposals_with(ProposalFlaw::LeaksOrgs);
    let make: &ProposalStoreFactory = &make;
    ensure_caught(
        conformance::another_org_never_sees_or_decides_a_proposal(make),
        "leaks orgs",
        "another_org_never_sees_or_decides_a_proposal",
    );
}

#[test]
fn a_store_deciding_without_compare_and_set_fails_the_race_check() {
    let make = proposals_with(ProposalFlaw::NoCompareAndSet);
    ensure_caught(
        conformance::racing_decisions_have_exactly_one_winner(&make),
        "decides without a compare-and-set",
        "racing_decisions_have_exactly_one_winner",
    );
}

#[test]
fn a_store_listing_oldest_first_fails_the_order_check() {
    let make = proposals_with(ProposalFlaw::OldestFirst);
    ensure_caught(
        conformance::proposals_list_newest_first_within_their_org(&make),
        "lists oldest first",
        "proposals_list_newest_first_within_their_org",
    );
}

#[test]
fn a_store_expiring_proposals_twice_fails_the_sweep_check() {
    let make = proposals_with(ProposalFlaw::ExpiresTwice);
    ensure_caught(
        conformance::expire_overdue_expires_each_proposal_once(&make),
        "reports expiries without recording them",
        "expire_overdue_expires_each_proposal_once",
    );
}

#[test]
fn a_store_that_always_runs_fails_the_replay_and_race_checks() {
    let make = keys_with(KeyFlaw::AlwaysRuns);
    let make: &IdempotencyStoreFactory = &make;
    ensure_caught(
        conformance::a_new_key_runs_and_retries_replay_the_first_result(make),
        "always runs",
        "a_new_key_runs_and_retries_replay_the_first_result",
    );
    ensure_caught(
        conformance::concurrent_claims_have_exactly_one_runner(make),
        "always runs",
        "concurrent_claims_have_exactly_one_runner",
    );
}

#[test]
fn a_store_forgetting_errors_fails_the_failed_result_check() {
    let make = keys_with(KeyFlaw::ForgetsErrors);
    ensure_caught(
        conformance::failed_first_results_replay_unchanged(&make),
        "replays errors as successes",
        "failed_first_results_replay_unchanged",
    );
}

#[test]
fn a_store_ignoring_the_org_fails_the_tenant_check() {
    let make = keys_with(KeyFlaw::IgnoresOrg);
    ensure_caught(
        conformance::idempotency_keys_are_per_organisation(&make),
        "shares keys between orgs",
        "idempotency_keys_are_per_organisation",
    );
}

#[test]
fn a_store_ignoring_the_retention_fails_the_expiry_checks() {
    let make = keys_with(KeyFlaw::IgnoresRetention);
    ensure_caught(
        conformance::results_expire_after_the_retention(&make),
        "keeps results forever",
        "results_expire_after_the_retention",
    );
    ensure_caught(
        conformance::sweep_removes_only_expired_results(&make),
        "keeps results forever",
        "sweep_removes_only_expired_results",
    );
}

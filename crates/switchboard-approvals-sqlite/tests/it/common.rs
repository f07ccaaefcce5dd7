//! What the SQLite stores' test files share: stores on a file in a temporary directory that
//! lives exactly as long as the store, so the conformance suites can make fresh ones at will.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;
use switchboard_approvals::{
    Claim, Decision, Fingerprint, IdempotencyScope, IdempotencyStore, Proposal, ProposalStore,
    StoreError, StoredOutcome, TransitionError,
};
use switchboard_approvals_sqlite::{ApprovalsDatabase, SqliteOptions};
use switchboard_core::{OrgId, ProposalId};
use tempfile::TempDir;

/// A new approvals database in a new temporary directory.
pub(crate) fn scratch_database(options: SqliteOptions) -> (ApprovalsDatabase, TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let database = ApprovalsDatabase::open_with(dir.path().join("approvals.db"), options)
        .expect("a new approvals database opens");
    (database, dir)
}

/// A SQLite proposal store whose directory is deleted with it.
pub(crate) struct TempProposals {
    store: switchboard_approvals_sqlite::SqliteProposalStore,
    _dir: TempDir,
}

impl TempProposals {
    pub(crate) fn fresh(options: SqliteOptions) -> Arc<Self> {
        let (database, dir) = scratch_database(options);
        Arc::new(Self {
            store: database.proposal_store(),
            _dir: dir,
        })
    }
}

impl ProposalStore for TempProposals {
    fn insert(&self, proposal: Proposal) -> Result<(), StoreError> {
        self.store.insert(proposal)
    }

    fn insert_new(&self, proposal: Proposal) -> Result<Option<Proposal>, StoreError> {
        self.store.insert_new(proposal)
    }

    fn get(&self, org_id: &OrgId, id: &ProposalId) -> Result<Option<Proposal>, StoreError> {
        self.store.get(org_id, id)
    }

    fn list(&self, org_id: &OrgId) -> Result<Vec<Proposal>, StoreError> {
        self.store.list(org_id)
    }

    fn decide(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        decision: Decision,
        now: Timestamp,
    ) -> Result<Proposal, TransitionError> {
        self.store.decide(org_id, id, decision, now)
    }

    fn record_outcome(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        outcome: &str,
    ) -> Result<(), StoreError> {
        self.store.record_outcome(org_id, id, outcome)
    }

    fn expire_overdue(&self, now: Timestamp) -> Result<Vec<Proposal>, StoreError> {
        self.store.expire_overdue(now)
    }
}

/// A SQLite idempotency store whose directory is deleted with it.
pub(crate) struct TempKeys {
    store: switchboard_approvals_sqlite::SqliteIdempotencyStore,
    _dir: TempDir,
}

impl TempKeys {
    pub(crate) fn fresh(retention: Duration, options: SqliteOptions) -> Arc<Self> {
        let (database, dir) = scratch_database(options);
        Arc::new(Self {
            store: database.idempotency_store(retention),
            _dir: dir,
        })
    }
}

impl IdempotencyStore for TempKeys {
    fn claim(&self, scope: &IdempotencyScope, fingerprint: &Fingerprint, now: Timestamp) -> Claim {
        self.store.claim(scope, fingerprint, now)
    }

    fn complete(&self, scope: &IdempotencyScope, outcome: Arc<StoredOutcome>) {
        self.store.complete(scope, outcome);
    }

    fn release(&self, scope: &IdempotencyScope) {
        self.store.release(scope);
    }

    fn sweep(&self, now: Timestamp) -> usize {
        self.store.sweep(now)
    }

    fn len(&self) -> usize {
        self.store.len()
    }
}

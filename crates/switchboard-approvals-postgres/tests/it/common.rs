//! What the test files share: a fresh database per test, and stores that keep their database
//! alive exactly as long as they live, so the conformance suites can make fresh ones at will.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;
use switchboard_approvals::{
    Claim, Decision, Fingerprint, IdempotencyScope, IdempotencyStore, Proposal, ProposalStore,
    StoreError, StoredOutcome, TransitionError,
};
use switchboard_approvals_postgres::{
    ApprovalsDatabase, PostgresIdempotencyStore, PostgresProposalStore,
};
use switchboard_core::{OrgId, ProposalId};
use switchboard_test_postgres::TestDatabase;

/// A fresh, empty database on the test server.
pub(crate) fn fresh_database() -> TestDatabase {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(switchboard_test_postgres::test_database())
        .expect("a test database (run the tests through `cargo xtask test`)")
}

/// The approvals tables in a fresh database, and the database.
pub(crate) fn scratch() -> (ApprovalsDatabase, TestDatabase) {
    let test = fresh_database();
    let database = ApprovalsDatabase::open(test.url()).expect("the approvals tables open");
    (database, test)
}

/// A proposal store whose database is dropped with it.
pub(crate) struct TempProposals {
    store: PostgresProposalStore,
    _test: TestDatabase,
}

impl TempProposals {
    pub(crate) fn fresh() -> Arc<Self> {
        let (database, test) = scratch();
        Arc::new(Self {
            store: database.proposal_store(),
            _test: test,
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

/// An idempotency store whose database is dropped with it.
pub(crate) struct TempKeys {
    store: PostgresIdempotencyStore,
    _test: TestDatabase,
}

impl TempKeys {
    pub(crate) fn fresh(retention: Duration) -> Arc<Self> {
        let (database, test) = scratch();
        Arc::new(Self {
            store: database.idempotency_store(retention),
            _test: test,
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

//! [`SqliteProposalStore`]: the [`ProposalStore`] trait on the `proposals` table.
//!
//! Every status change is a compare-and-set in SQL: a decision reads the row and updates it
//! `WHERE status = 'pending'` inside one immediate transaction (SQLite's write lock), and the
//! expiry sweep is one `UPDATE … WHERE status = 'pending' AND expires_at_ns <= now RETURNING`,
//! so of racing deciders and sweepers, in this process or another on the same file, exactly
//! one changes a proposal, and every proposal is returned as expired exactly once. Every write
//! is committed (and, under `synchronous = FULL`, on stable storage) before the call returns.
//!
//! A failing database is an error, never an answer: a failed insert, read, decision, outcome
//! or sweep is logged and returned as a [`StoreError`] (a decision as
//! [`TransitionError::Store`]); a failed write leaves the file as it was (its transaction
//! rolls back), so the caller is refused and nothing is lost or half-done.

use std::sync::Arc;

use jiff::Timestamp;
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use switchboard_approvals::{
    Decision, Proposal, ProposalStatus, ProposalStore, StoreError, TransitionError,
};
use switchboard_core::{OrgId, ProposalId};
use switchboard_sqlite::timestamp_to_sql;

use crate::{
    database::{ApprovalsDatabase, Database, SqliteOptions},
    proposal_rows::{self, COLUMNS, INSERT, INSERT_NEW},
};

/// Proposals in a SQLite database: they survive restarts and are shared by every process
/// that opens the file.
#[derive(Debug, Clone)]
pub struct SqliteProposalStore {
    database: Arc<Database>,
}

impl SqliteProposalStore {
    pub(crate) fn new(database: Arc<Database>) -> Self {
        Self { database }
    }

    /// Opens the approvals database at `path` (see [`ApprovalsDatabase::open`]) for proposals
    /// only.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self, switchboard_sqlite::OpenError> {
        Ok(ApprovalsDatabase::open_with(path, SqliteOptions::default())?.proposal_store())
    }

    fn select_one(
        &self,
        connection: &rusqlite::Connection,
        org_id: &OrgId,
        id: &ProposalId,
    ) -> rusqlite::Result<Option<Proposal>> {
        connection
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM proposals WHERE id = ?1 AND org_id = ?2"
            ))?
            .query_row(params![id.as_str(), org_id.as_str()], proposal_rows::read)
            .optional()
    }

    /// The decision as one immediate transaction: read, check, update, commit.
    fn decide_in_transaction(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        decision: Decision,
        now: Timestamp,
    ) -> rusqlite::Result<Result<Proposal, TransitionError>> {
        let mut connection = self.database.connection();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let Some(mut proposal) = self.select_one(&transaction, org_id, id)? else {
            return Ok(Err(TransitionError::NotFound));
        };
        if !proposal.status.is_pending() {
            return Ok(Err(TransitionError::Closed(Box::new(proposal))));
        }
        let expired = proposal.expires_at <= now;
        proposal.status = match (decision, expired) {
            (
                Decision::Approve { .. }
                | Decision::Reject { .. }
                | Decision::Withdraw { .. }
                | Decision::Expire,
                true,
            ) => ProposalStatus::Expired { at: now },
            (Decision::Approve { by }, false) => ProposalStatus::Approved {
                by,
                at: now,
                outcome: None,
            },
            (Decision::Reject { by, feedback }, false) => ProposalStatus::Rejected {
                by,
                at: now,
                feedback,
            },
            (Decision::Withdraw { by, reason }, false) => ProposalStatus::Withdrawn {
                by,
                at: now,
                reason,
            },
            // Not yet due: nothing to do.
            (Decision::Expire, false) => {
                return Ok(Err(TransitionError::Closed(Box::new(proposal))));
            }
        };
        let columns = proposal_rows::status_columns(&proposal.status);
        let changed = transaction
            .prepare_cached(
                "UPDATE proposals SET status = ?3, decided_by = ?4, decided_at_ns = ?5, \
                 feedback = ?6, outcome = NULL \
                 WHERE id = ?1 AND org_id = ?2 AND status = 'pending'",
            )?
            .execute(params![
                id.as_str(),
                org_id.as_str(),
                columns.status,
                columns.decided_by,
                columns.decided_at_ns,
                columns.feedback,
            ])?;
        transaction.commit()?;
        if changed != 1 {
            // Cannot happen under the write lock; answered as what it would mean.
            return Ok(Err(TransitionError::NotFound));
        }
        // Past its expiry the proposal is expired instead; `decide` turns that into success
        // when an expiry is what was asked for.
        Ok(if expired {
            Err(TransitionError::Expired(Box::new(proposal)))
        } else {
            Ok(proposal)
        })
    }
}

impl ProposalStore for SqliteProposalStore {
    fn insert(&self, proposal: Proposal) -> Result<(), StoreError> {
        let connection = self.database.connection();
        connection
            .prepare_cached(INSERT)
            .and_then(|mut statement| proposal_rows::insert(&mut statement, &proposal))
            .map(drop)
            .map_err(|error| {
                self.database
                    .store_error(format!("storing proposal {}", proposal.id), &error)
            })
    }

    fn insert_new(&self, proposal: Proposal) -> Result<Option<Proposal>, StoreError> {
        let connection = self.database.connection();
        let action = || format!("storing proposal {}", proposal.id);
        let written = connection
            .prepare_cached(INSERT_NEW)
            .and_then(|mut statement| proposal_rows::insert(&mut statement, &proposal))
            .map_err(|error| self.database.store_error(action(), &error))?;
        if written > 0 {
            return Ok(None);
        }
        match self.select_one(&connection, &proposal.org_id, &proposal.id) {
            Ok(Some(existing)) => Ok(Some(existing)),
            // The id is another organisation's: not this proposal's to take or to show.
            Ok(None) => Err(StoreError::new(
                action(),
                "the id is taken by a proposal of another organisation",
            )),
            Err(error) => Err(self.database.store_error(action(), &error)),
        }
    }

    fn get(&self, org_id: &OrgId, id: &ProposalId) -> Result<Option<Proposal>, StoreError> {
        let connection = self.database.connection();
        self.select_one(&connection, org_id, id).map_err(|error| {
            self.database
                .store_error(format!("reading proposal {id}"), &error)
        })
    }

    fn list(&self, org_id: &OrgId) -> Result<Vec<Proposal>, StoreError> {
        let connection = self.database.connection();
        connection
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM proposals WHERE org_id = ?1 \
                 ORDER BY created_at_ns DESC, id"
            ))
            .and_then(|mut statement| {
                statement
                    .query_map(params![org_id.as_str()], proposal_rows::read)?
                    .collect()
            })
            .map_err(|error| {
                self.database
                    .store_error(format!("listing the proposals of {org_id}"), &error)
            })
    }

    fn decide(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        decision: Decision,
        now: Timestamp,
    ) -> Result<Proposal, TransitionError> {
        let asked_to_expire = matches!(decision, Decision::Expire);
        match self.decide_in_transaction(org_id, id, decision, now) {
            // An `Expire` decision that expired the proposal succeeded.
            Ok(Err(TransitionError::Expired(proposal))) if asked_to_expire => Ok(*proposal),
            Ok(result) => result,
            Err(error) => Err(TransitionError::Store(
                self.database
                    .store_error(format!("deciding proposal {id}"), &error),
            )),
        }
    }

    fn record_outcome(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        outcome: &str,
    ) -> Result<(), StoreError> {
        let connection = self.database.connection();
        connection
            .prepare_cached(
                "UPDATE proposals SET outcome = ?3 \
                 WHERE id = ?1 AND org_id = ?2 AND status = 'approved'",
            )
            .and_then(|mut statement| {
                statement.execute(params![id.as_str(), org_id.as_str(), outcome])
            })
            .map(drop)
            .map_err(|error| {
                self.database
                    .store_error(format!("recording the outcome of proposal {id}"), &error)
            })
    }

    fn expire_overdue(&self, now: Timestamp) -> Result<Vec<Proposal>, StoreError> {
        let connection = self.database.connection();
        connection
            .prepare_cached(&format!(
                "UPDATE proposals SET status = 'expired', decided_at_ns = ?1 \
                 WHERE status = 'pending' AND expires_at_ns <= ?1 RETURNING {COLUMNS}"
            ))
            .and_then(|mut statement| {
                statement
                    .query_map(params![timestamp_to_sql(now)], proposal_rows::read)?
                    .collect()
            })
            .map_err(|error| {
                self.database
                    .store_error("expiring overdue proposals".to_owned(), &error)
            })
    }
}

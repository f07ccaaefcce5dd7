//! [`PostgresProposalStore`]: the [`ProposalStore`] trait on the `approvals_proposals` table.
//!
//! Every status change is one statement, a compare-and-set from `pending`:
//!
//! - a decision is `UPDATE … WHERE id = … AND status = 'pending' RETURNING …`, which sets the
//!   decided status, or `expired` when the proposal is past its expiry at the decision's
//!   `now` (a `CASE` in the same statement); `Expire` updates only a proposal past its expiry.
//!   Of racing deciders on any number of nodes exactly one gets a row back. Only when no row
//!   comes back is the proposal read, to say why: not found, or already closed;
//! - the expiry sweep is one `UPDATE … WHERE status = 'pending' AND expires_at_ns <= now
//!   RETURNING …`, so each expiry is reported once;
//! - `insert_new` is `INSERT … ON CONFLICT (id) DO NOTHING`, then a read of the holder.
//!
//! Each status change (and a recorded outcome) also sends `pg_notify('approvals_decisions',
//! id)` in its statement, so the notification goes out exactly when the change commits;
//! [`wait_for_decision`](PostgresProposalStore::wait_for_decision) wakes on it, and polls as a
//! fallback.
//!
//! A failing database is an error, never an answer: it is logged and returned as a
//! [`StoreError`] (a decision as [`TransitionError::Store`]) naming the operation and the
//! database; a failed statement changes nothing.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;
use switchboard_approvals::{
    Decision, Proposal, ProposalStatus, ProposalStore, StoreError, TransitionError,
};
use switchboard_core::{OrgId, ProposalId};
use switchboard_postgres::{Listener, OpenError, QueryError};

use crate::{
    codec::timestamp_to_sql,
    database::{ApprovalsDatabase, Shared},
    proposal_rows::{self, COLUMNS, ProposalRow},
    waiter::{DECISIONS_CHANNEL, POLL_INTERVAL},
};

/// Proposals in PostgreSQL: shared by every node that opens the database, decided once.
#[derive(Debug, Clone)]
pub struct PostgresProposalStore {
    shared: Arc<Shared>,
}

/// The decision as the columns its statement writes.
struct DecisionColumns {
    status: &'static str,
    decided_by: Option<String>,
    feedback: Option<String>,
    /// Whether a proposal not yet past its expiry is changed (every decision but `Expire`).
    before_expiry: bool,
}

impl DecisionColumns {
    fn new(decision: Decision) -> Self {
        let (status, decided_by, feedback, before_expiry) = match decision {
            Decision::Approve { by } => ("approved", Some(by.to_string()), None, true),
            Decision::Reject { by, feedback } => {
                ("rejected", Some(by.to_string()), Some(feedback), true)
            }
            Decision::Withdraw { by, reason } => {
                ("withdrawn", Some(by.to_string()), Some(reason), true)
            }
            Decision::Expire => ("expired", None, None, false),
        };
        Self {
            status,
            decided_by,
            feedback,
            before_expiry,
        }
    }
}

impl PostgresProposalStore {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Opens the approvals tables at `url` (see [`ApprovalsDatabase::open`]) for proposals
    /// only.
    pub fn open(url: &str) -> Result<Self, OpenError> {
        Ok(ApprovalsDatabase::open(url)?.proposal_store())
    }

    fn select_one(&self, org_id: &OrgId, id: &ProposalId) -> Result<Option<Proposal>, QueryError> {
        let (org_id, id) = (org_id.to_string(), id.to_string());
        self.shared.database.call(move |client| async move {
            let statement = client
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM approvals_proposals WHERE id = $1 AND org_id = $2"
                ))
                .await?;
            client
                .query_opt(&statement, &[&id, &org_id])
                .await?
                .as_ref()
                .map(proposal_rows::read)
                .transpose()
        })
    }

    /// The decision's one statement: the proposal as decided (or expired), or `None` when
    /// nothing changed.
    fn compare_and_set(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        decision: DecisionColumns,
        now: Timestamp,
    ) -> Result<Option<Proposal>, QueryError> {
        let (org_id, id) = (org_id.to_string(), id.to_string());
        let now = timestamp_to_sql(now);
        self.shared.database.call(move |client| async move {
            let statement = client
                .prepare_cached(&format!(
                    "WITH decided AS (UPDATE approvals_proposals SET \
                     status = CASE WHEN expires_at_ns <= $3 THEN 'expired' ELSE $4::text END, \
                     decided_by = CASE WHEN expires_at_ns <= $3 THEN NULL ELSE $5::text END, \
                     feedback = CASE WHEN expires_at_ns <= $3 THEN NULL ELSE $6::text END, \
                     decided_at_ns = $3, outcome = NULL \
                     WHERE id = $1 AND org_id = $2 AND status = 'pending' \
                     AND ($7::boolean OR expires_at_ns <= $3) RETURNING {COLUMNS}) \
                     SELECT {COLUMNS}, pg_notify('{DECISIONS_CHANNEL}', id) FROM decided"
                ))
                .await?;
            client
                .query_opt(
                    &statement,
                    &[
                        &id,
                        &org_id,
                        &now,
                        &decision.status,
                        &decision.decided_by,
                        &decision.feedback,
                        &decision.before_expiry,
                    ],
                )
                .await?
                .as_ref()
                .map(proposal_rows::read)
                .transpose()
        })
    }

    fn decide_once(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        decision: Decision,
        now: Timestamp,
    ) -> Result<Result<Proposal, TransitionError>, QueryError> {
        let asked_to_expire = matches!(decision, Decision::Expire);
        if let Some(decided) =
            self.compare_and_set(org_id, id, DecisionColumns::new(decision), now)?
        {
            let expired_instead = matches!(decided.status, ProposalStatus::Expired { .. });
            return Ok(if expired_instead && !asked_to_expire {
                Err(TransitionError::Expired(Box::new(decided)))
            } else {
                Ok(decided)
            });
        }
        // Nothing changed: say why. A pending proposal here is one `Expire` found not yet due.
        Ok(Err(match self.select_one(org_id, id)? {
            None => TransitionError::NotFound,
            Some(proposal) => TransitionError::Closed(Box::new(proposal)),
        }))
    }

    /// Waits until proposal `id` of `org_id` is no longer pending, at most `timeout`: the
    /// proposal as decided (by any node), or `None` when it is still pending at the timeout.
    /// Wakes on the `approvals_decisions` notification of its id, and re-reads it every
    /// [`POLL_INTERVAL`] whatever arrives, so a lost notification only delays.
    ///
    /// # Errors
    /// The store failed to read the proposal, or it does not exist (`NotFound`).
    pub async fn wait_for_decision(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        timeout: Duration,
    ) -> Result<Option<Proposal>, TransitionError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut subscription = self.shared.listener().subscribe();
        loop {
            let (org, wanted) = (org_id.to_string(), id.to_string());
            let read = self
                .shared
                .database
                .run(move |client| async move {
                    let statement = client
                        .prepare_cached(&format!(
                            "SELECT {COLUMNS} FROM approvals_proposals \
                             WHERE id = $1 AND org_id = $2"
                        ))
                        .await?;
                    client
                        .query_opt(&statement, &[&wanted, &org])
                        .await?
                        .as_ref()
                        .map(proposal_rows::read)
                        .transpose()
                })
                .await
                .map_err(|error| {
                    self.shared
                        .failure(format!("waiting for a decision on proposal {id}"), &error)
                })?;
            match read {
                None => return Err(TransitionError::NotFound),
                Some(proposal) if !proposal.status.is_pending() => return Ok(Some(proposal)),
                Some(_) => {}
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let id = id.as_str();
            Listener::wait(
                &mut subscription,
                POLL_INTERVAL.min(deadline - now),
                |channel, payload| channel == DECISIONS_CHANNEL && payload == id,
            )
            .await;
        }
    }
}

impl ProposalStore for PostgresProposalStore {
    fn insert(&self, proposal: Proposal) -> Result<(), StoreError> {
        let row = ProposalRow::new(&proposal);
        let sql = proposal_rows::insert_sql();
        self.shared
            .database
            .call(move |client| async move {
                let statement = client.prepare_cached(&sql).await?;
                client.execute(&statement, &row.params()).await?;
                Ok(())
            })
            .map_err(|error| {
                self.shared
                    .failure(format!("storing proposal {}", proposal.id), &error)
            })
    }

    fn insert_new(&self, proposal: Proposal) -> Result<Option<Proposal>, StoreError> {
        let action = || format!("storing proposal {}", proposal.id);
        let row = ProposalRow::new(&proposal);
        let sql = proposal_rows::insert_new_sql();
        let written = self
            .shared
            .database
            .call(move |client| async move {
                let statement = client.prepare_cached(&sql).await?;
                Ok(client.execute(&statement, &row.params()).await?)
            })
            .map_err(|error| self.shared.failure(action(), &error))?;
        if written > 0 {
            return Ok(None);
        }
        match self.select_one(&proposal.org_id, &proposal.id) {
            Ok(Some(existing)) => Ok(Some(existing)),
            // The id is another organisation's: not this proposal's to take or to show.
            Ok(None) => Err(StoreError::new(
                action(),
                "the id is taken by a proposal of another organisation",
            )),
            Err(error) => Err(self.shared.failure(action(), &error)),
        }
    }

    fn get(&self, org_id: &OrgId, id: &ProposalId) -> Result<Option<Proposal>, StoreError> {
        self.select_one(org_id, id).map_err(|error| {
            self.shared
                .failure(format!("reading proposal {id}"), &error)
        })
    }

    fn list(&self, org_id: &OrgId) -> Result<Vec<Proposal>, StoreError> {
        let org = org_id.to_string();
        self.shared
            .database
            .call(move |client| async move {
                let statement = client
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM approvals_proposals WHERE org_id = $1 \
                         ORDER BY created_at_ns DESC, id"
                    ))
                    .await?;
                client
                    .query(&statement, &[&org])
                    .await?
                    .iter()
                    .map(proposal_rows::read)
                    .collect()
            })
            .map_err(|error| {
                self.shared
                    .failure(format!("listing the proposals of {org_id}"), &error)
            })
    }

    fn decide(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        decision: Decision,
        now: Timestamp,
    ) -> Result<Proposal, TransitionError> {
        let _span = tracing::debug_span!("decide", proposal = %id).entered();
        self.decide_once(org_id, id, decision, now)
            .unwrap_or_else(|error| {
                Err(TransitionError::Store(
                    self.shared
                        .failure(format!("deciding proposal {id}"), &error),
                ))
            })
    }

    fn record_outcome(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        outcome: &str,
    ) -> Result<(), StoreError> {
        let (org, proposal, outcome) = (org_id.to_string(), id.to_string(), outcome.to_owned());
        self.shared
            .database
            .call(move |client| async move {
                let statement = client
                    .prepare_cached(&format!(
                        "WITH recorded AS (UPDATE approvals_proposals SET outcome = $3 \
                         WHERE id = $1 AND org_id = $2 AND status = 'approved' RETURNING id) \
                         SELECT pg_notify('{DECISIONS_CHANNEL}', id) FROM recorded"
                    ))
                    .await?;
                client
                    .execute(&statement, &[&proposal, &org, &outcome])
                    .await?;
                Ok(())
            })
            .map_err(|error| {
                self.shared
                    .failure(format!("recording the outcome of proposal {id}"), &error)
            })
    }

    fn expire_overdue(&self, now: Timestamp) -> Result<Vec<Proposal>, StoreError> {
        let now = timestamp_to_sql(now);
        self.shared
            .database
            .call(move |client| async move {
                let statement = client
                    .prepare_cached(&format!(
                        "WITH expired AS (UPDATE approvals_proposals SET status = 'expired', \
                         decided_at_ns = $1 \
                         WHERE status = 'pending' AND expires_at_ns <= $1 RETURNING {COLUMNS}) \
                         SELECT {COLUMNS}, pg_notify('{DECISIONS_CHANNEL}', id) FROM expired"
                    ))
                    .await?;
                client
                    .query(&statement, &[&now])
                    .await?
                    .iter()
                    .map(proposal_rows::read)
                    .collect()
            })
            .map_err(|error| {
                self.shared
                    .failure("expiring overdue proposals".to_owned(), &error)
            })
    }
}

//! How a [`Proposal`] becomes a row of `approvals_proposals` and back, column by column: the
//! same columns and encodings as the SQLite store's (params as JSON text, the proposer in
//! columns of its own, timestamps as nanoseconds, the status as its name with who decided,
//! when, the feedback and the run's outcome beside it). An unknown status or initiator reads
//! as a corrupt row ([`QueryError::Decode`]), never as a default.

use std::sync::Arc;

use switchboard_approvals::{Proposal, ProposalStatus, Proposer};
use switchboard_core::{Initiator, OrgId, ProposalId, UserId};
use switchboard_postgres::{QueryError, tokio_postgres::Row, tokio_postgres::types::ToSql};

use crate::codec::{timestamp_from_sql, timestamp_to_sql};

/// The columns, in the order [`ProposalRow::params`] binds them and [`read`] reads them.
pub(crate) const COLUMNS: &str = "id, org_id, tool, params, summary, proposer_user_id, \
     proposer_session_id, proposer_correlation_id, proposer_initiator, proposer_agent_type, \
     thread_id, project_id, created_at_ns, expires_at_ns, status, decided_by, decided_at_ns, \
     feedback, outcome";

const VALUES: &str =
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)";

/// Stores a proposal, replacing one with the same id.
pub(crate) fn insert_sql() -> String {
    format!(
        "INSERT INTO approvals_proposals ({COLUMNS}) {VALUES} ON CONFLICT (id) DO UPDATE SET \
         org_id = excluded.org_id, tool = excluded.tool, params = excluded.params, \
         summary = excluded.summary, proposer_user_id = excluded.proposer_user_id, \
         proposer_session_id = excluded.proposer_session_id, \
         proposer_correlation_id = excluded.proposer_correlation_id, \
         proposer_initiator = excluded.proposer_initiator, \
         proposer_agent_type = excluded.proposer_agent_type, thread_id = excluded.thread_id, \
         project_id = excluded.project_id, created_at_ns = excluded.created_at_ns, \
         expires_at_ns = excluded.expires_at_ns, status = excluded.status, \
         decided_by = excluded.decided_by, decided_at_ns = excluded.decided_at_ns, \
         feedback = excluded.feedback, outcome = excluded.outcome"
    )
}

/// Stores a proposal unless its id is taken (then nothing changes).
pub(crate) fn insert_new_sql() -> String {
    format!("INSERT INTO approvals_proposals ({COLUMNS}) {VALUES} ON CONFLICT (id) DO NOTHING")
}

/// The status columns of a row: name, decider, time, feedback, outcome.
pub(crate) struct StatusColumns {
    pub(crate) status: &'static str,
    pub(crate) decided_by: Option<String>,
    pub(crate) decided_at_ns: Option<i64>,
    pub(crate) feedback: Option<String>,
    pub(crate) outcome: Option<String>,
}

/// A status as its columns.
pub(crate) fn status_columns(status: &ProposalStatus) -> StatusColumns {
    let (decided_by, decided_at, feedback, outcome) = match status {
        ProposalStatus::Pending => (None, None, None, None),
        ProposalStatus::Approved { by, at, outcome } => {
            (Some(by.to_string()), Some(*at), None, outcome.clone())
        }
        ProposalStatus::Rejected { by, at, feedback } => (
            Some(by.to_string()),
            Some(*at),
            Some(feedback.clone()),
            None,
        ),
        ProposalStatus::Expired { at } => (None, Some(*at), None, None),
        ProposalStatus::Withdrawn { by, at, reason } => {
            (Some(by.to_string()), Some(*at), Some(reason.clone()), None)
        }
    };
    StatusColumns {
        status: status.as_str(),
        decided_by,
        decided_at_ns: decided_at.map(timestamp_to_sql),
        feedback,
        outcome,
    }
}

/// A proposal's column values, owned, so that they can travel to the store's runtime.
pub(crate) struct ProposalRow {
    id: String,
    org_id: String,
    tool: String,
    params: String,
    summary: String,
    user_id: String,
    session_id: String,
    correlation_id: String,
    initiator: &'static str,
    agent_type: Option<String>,
    thread_id: Option<String>,
    project_id: Option<String>,
    created_at_ns: i64,
    expires_at_ns: i64,
    status: StatusColumns,
}

impl ProposalRow {
    /// The columns of `proposal`.
    pub(crate) fn new(proposal: &Proposal) -> Self {
        let proposer = &proposal.proposer;
        Self {
            id: proposal.id.to_string(),
            org_id: proposal.org_id.to_string(),
            tool: proposal.tool.to_string(),
            // Serializing a `Value` cannot fail (no non-string keys, no failing `Serialize`).
            params: serde_json::to_string(&*proposal.params).unwrap_or_else(|_| "null".to_owned()),
            summary: proposal.summary.clone(),
            user_id: proposer.user_id.to_string(),
            session_id: proposer.session_id.to_string(),
            correlation_id: proposer.correlation_id.to_string(),
            initiator: proposer.initiator.as_str(),
            agent_type: proposer.agent_type.as_ref().map(ToString::to_string),
            thread_id: proposer.thread_id.as_ref().map(ToString::to_string),
            project_id: proposer.project_id.as_ref().map(ToString::to_string),
            created_at_ns: timestamp_to_sql(proposal.created_at),
            expires_at_ns: timestamp_to_sql(proposal.expires_at),
            status: status_columns(&proposal.status),
        }
    }

    /// The values in [`COLUMNS`] order, for `$1` to `$19`.
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 19] {
        [
            &self.id,
            &self.org_id,
            &self.tool,
            &self.params,
            &self.summary,
            &self.user_id,
            &self.session_id,
            &self.correlation_id,
            &self.initiator,
            &self.agent_type,
            &self.thread_id,
            &self.project_id,
            &self.created_at_ns,
            &self.expires_at_ns,
            &self.status.status,
            &self.status.decided_by,
            &self.status.decided_at_ns,
            &self.status.feedback,
            &self.status.outcome,
        ]
    }
}

fn decode(column: &str, error: impl std::fmt::Display) -> QueryError {
    QueryError::Decode(format!("column {column} of approvals_proposals: {error}"))
}

/// Reads a row whose first columns are [`COLUMNS`] back into a proposal.
pub(crate) fn read(row: &Row) -> Result<Proposal, QueryError> {
    let text = |index: usize| -> Result<String, QueryError> { Ok(row.try_get(index)?) };
    let optional = |index: usize| -> Result<Option<String>, QueryError> { Ok(row.try_get(index)?) };
    let params = serde_json::from_str(&text(3)?).map_err(|error| decode("params", error))?;
    let initiator: Initiator = text(8)?
        .parse()
        .map_err(|error: String| decode("proposer_initiator", error))?;
    Ok(Proposal {
        id: ProposalId::from(text(0)?),
        org_id: OrgId::from(text(1)?),
        tool: Arc::from(text(2)?),
        params: Arc::new(params),
        summary: text(4)?,
        proposer: Proposer {
            user_id: UserId::from(text(5)?),
            session_id: text(6)?.into(),
            correlation_id: text(7)?.into(),
            initiator,
            agent_type: optional(9)?.map(Into::into),
            thread_id: optional(10)?.map(Into::into),
            project_id: optional(11)?.map(Into::into),
        },
        created_at: timestamp_from_sql("created_at_ns", row.try_get(12)?)?,
        expires_at: timestamp_from_sql("expires_at_ns", row.try_get(13)?)?,
        status: read_status(row)?,
    })
}

/// The status columns (14 to 18) back into a status.
fn read_status(row: &Row) -> Result<ProposalStatus, QueryError> {
    let status: String = row.try_get(14)?;
    let by = || -> Result<UserId, QueryError> {
        row.try_get::<_, Option<String>>(15)?
            .map(UserId::from)
            .ok_or_else(|| decode("decided_by", "a decision needs its decider"))
    };
    let at = || -> Result<jiff::Timestamp, QueryError> {
        let nanoseconds: Option<i64> = row.try_get(16)?;
        let nanoseconds =
            nanoseconds.ok_or_else(|| decode("decided_at_ns", "a decision needs its time"))?;
        timestamp_from_sql("decided_at_ns", nanoseconds)
    };
    let text = |index: usize| -> Result<Option<String>, QueryError> { Ok(row.try_get(index)?) };
    Ok(match status.as_str() {
        "pending" => ProposalStatus::Pending,
        "approved" => ProposalStatus::Approved {
            by: by()?,
            at: at()?,
            outcome: text(18)?,
        },
        "rejected" => ProposalStatus::Rejected {
            by: by()?,
            at: at()?,
            feedback: text(17)?.unwrap_or_default(),
        },
        "expired" => ProposalStatus::Expired { at: at()? },
        "withdrawn" => ProposalStatus::Withdrawn {
            by: by()?,
            at: at()?,
            reason: text(17)?.unwrap_or_default(),
        },
        other => {
            return Err(decode(
                "status",
                format!("unknown proposal status `{other}`"),
            ));
        }
    })
}

//! How a [`Proposal`] becomes a row of `proposals` and back, column by column.
//!
//! Chosen so that a proposal reads back exactly as it was stored and the columns mean
//! something to anyone opening the file with `sqlite3`: the params as JSON text, the proposer
//! in columns of its own, timestamps as integer nanoseconds (UTC, exact from 1677 to 2262;
//! outside that range clamped), the status as its name with who decided, when, the feedback
//! and the run's outcome beside it. An unknown status or initiator reads as a corrupt row,
//! never as a default.

use std::sync::Arc;

use rusqlite::{Row, types::Type};
use switchboard_approvals::{Proposal, ProposalStatus, Proposer};
use switchboard_core::{Initiator, OrgId, ProposalId, UserId};
use switchboard_sqlite::{invalid_column, timestamp_from_sql, timestamp_to_sql};

/// The columns, in the order [`insert`] binds them and [`read`] reads them.
pub(crate) const COLUMNS: &str = "id, org_id, tool, params, summary, proposer_user_id, \
     proposer_session_id, proposer_correlation_id, proposer_initiator, proposer_agent_type, \
     thread_id, project_id, created_at_ns, expires_at_ns, status, decided_by, decided_at_ns, \
     feedback, outcome";

/// Stores a proposal, replacing one with the same id.
pub(crate) const INSERT: &str = "INSERT OR REPLACE INTO proposals (id, org_id, tool, params, \
     summary, proposer_user_id, proposer_session_id, proposer_correlation_id, \
     proposer_initiator, proposer_agent_type, thread_id, project_id, created_at_ns, \
     expires_at_ns, status, decided_by, decided_at_ns, feedback, outcome) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)";

/// Stores a proposal unless its id is taken (then nothing changes).
pub(crate) const INSERT_NEW: &str = "INSERT OR IGNORE INTO proposals (id, org_id, tool, params, \
     summary, proposer_user_id, proposer_session_id, proposer_correlation_id, \
     proposer_initiator, proposer_agent_type, thread_id, project_id, created_at_ns, \
     expires_at_ns, status, decided_by, decided_at_ns, feedback, outcome) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)";

/// The status columns of a row: name, decider, time, feedback, outcome.
pub(crate) struct StatusColumns<'a> {
    pub(crate) status: &'static str,
    pub(crate) decided_by: Option<&'a str>,
    pub(crate) decided_at_ns: Option<i64>,
    pub(crate) feedback: Option<&'a str>,
    pub(crate) outcome: Option<&'a str>,
}

/// A status as its columns.
pub(crate) fn status_columns(status: &ProposalStatus) -> StatusColumns<'_> {
    let (decided_by, decided_at, feedback, outcome) = match status {
        ProposalStatus::Pending => (None, None, None, None),
        ProposalStatus::Approved { by, at, outcome } => {
            (Some(by.as_str()), Some(*at), None, outcome.as_deref())
        }
        ProposalStatus::Rejected { by, at, feedback } => {
            (Some(by.as_str()), Some(*at), Some(feedback.as_str()), None)
        }
        ProposalStatus::Expired { at } => (None, Some(*at), None, None),
        ProposalStatus::Withdrawn { by, at, reason } => {
            (Some(by.as_str()), Some(*at), Some(reason.as_str()), None)
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

/// Stores `proposal` with the prepared [`INSERT`] (or [`INSERT_NEW`]); how many rows it wrote.
pub(crate) fn insert(
    statement: &mut rusqlite::Statement<'_>,
    proposal: &Proposal,
) -> rusqlite::Result<usize> {
    let params = serde_json::to_string(&*proposal.params)
        .map_err(|error| rusqlite::Error::ToSqlConversionFailure(Box::new(error)))?;
    let proposer = &proposal.proposer;
    let status = status_columns(&proposal.status);
    statement.execute(rusqlite::params![
        proposal.id.as_str(),
        proposal.org_id.as_str(),
        &*proposal.tool,
        params,
        proposal.summary,
        proposer.user_id.as_str(),
        proposer.session_id.as_str(),
        proposer.correlation_id.as_str(),
        proposer.initiator.as_str(),
        proposer
            .agent_type
            .as_ref()
            .map(|agent_type| agent_type.as_str()),
        proposer
            .thread_id
            .as_ref()
            .map(|thread_id| thread_id.as_str()),
        proposer
            .project_id
            .as_ref()
            .map(|project_id| project_id.as_str()),
        timestamp_to_sql(proposal.created_at),
        timestamp_to_sql(proposal.expires_at),
        status.status,
        status.decided_by,
        status.decided_at_ns,
        status.feedback,
        status.outcome,
    ])
}

/// Reads a row of `SELECT {COLUMNS}` back into a proposal.
pub(crate) fn read(row: &Row<'_>) -> rusqlite::Result<Proposal> {
    let text = |index: usize| -> rusqlite::Result<Option<String>> { row.get(index) };
    let params: String = row.get(3)?;
    let params =
        serde_json::from_str(&params).map_err(|error| invalid_column(3, Type::Text, error))?;
    let initiator: String = row.get(8)?;
    let initiator: Initiator = initiator
        .parse()
        .map_err(|error: String| invalid_column(8, Type::Text, error))?;
    Ok(Proposal {
        id: ProposalId::from(row.get::<_, String>(0)?),
        org_id: OrgId::from(row.get::<_, String>(1)?),
        tool: Arc::from(row.get::<_, String>(2)?),
        params: Arc::new(params),
        summary: row.get(4)?,
        proposer: Proposer {
            user_id: UserId::from(row.get::<_, String>(5)?),
            session_id: row.get::<_, String>(6)?.into(),
            correlation_id: row.get::<_, String>(7)?.into(),
            initiator,
            agent_type: text(9)?.map(Into::into),
            thread_id: text(10)?.map(Into::into),
            project_id: text(11)?.map(Into::into),
        },
        created_at: timestamp_from_sql(12, row.get(12)?)?,
        expires_at: timestamp_from_sql(13, row.get(13)?)?,
        status: read_status(row)?,
    })
}

/// The status columns (14 to 18) back into a status.
fn read_status(row: &Row<'_>) -> rusqlite::Result<ProposalStatus> {
    let status: String = row.get(14)?;
    let by = || -> rusqlite::Result<UserId> {
        row.get::<_, Option<String>>(15)?
            .map(UserId::from)
            .ok_or_else(|| invalid_column(15, Type::Null, "a decision needs its decider"))
    };
    let at = || -> rusqlite::Result<jiff::Timestamp> {
        let nanoseconds: Option<i64> = row.get(16)?;
        let nanoseconds = nanoseconds
            .ok_or_else(|| invalid_column(16, Type::Null, "a decision needs its time"))?;
        timestamp_from_sql(16, nanoseconds)
    };
    Ok(match status.as_str() {
        "pending" => ProposalStatus::Pending,
        "approved" => ProposalStatus::Approved {
            by: by()?,
            at: at()?,
            outcome: row.get(18)?,
        },
        "rejected" => ProposalStatus::Rejected {
            by: by()?,
            at: at()?,
            feedback: row.get::<_, Option<String>>(17)?.unwrap_or_default(),
        },
        "expired" => ProposalStatus::Expired { at: at()? },
        "withdrawn" => ProposalStatus::Withdrawn {
            by: by()?,
            at: at()?,
            reason: row.get::<_, Option<String>>(17)?.unwrap_or_default(),
        },
        other => {
            return Err(invalid_column(
                14,
                Type::Text,
                format!("unknown proposal status `{other}`"),
            ));
        }
    })
}

//! How a key's row of `idempotency_keys` is read and written, and the answers the store makes
//! up when a row cannot give the first result: a claim nobody finished (in doubt), a result
//! this build cannot read, a database that failed.
//!
//! A result is stored as JSON text: the output when the first run succeeded, else the error's
//! full record (`InvokeError::to_record`: kind, message, details and the fields the details
//! leave out), which `InvokeError::from_record` turns back into the very same error. `outcome`
//! repeats `ok` or the error kind for people reading the file. The typed copy of an output
//! (`StoredOutcome::typed`) is never written: it is a Rust value of this process.
//!
//! The made-up answers are all `tool_failed` errors with a stable code, so a retry is refused
//! without running anything and says why: `outcome_unknown` (someone claimed the key and has
//! not recorded how the run ended), `outcome_unreadable`, `idempotency_store_unavailable`.

use std::{path::Path, sync::Arc};

use jiff::Timestamp;
use rusqlite::{Row, types::Type};
use serde_json::Value;
use switchboard_approvals::{Fingerprint, IdempotencyScope, StoredOutcome};
use switchboard_core::{ActionId, InvokeError, ToolError};
use switchboard_sqlite::{invalid_column, timestamp_from_sql};

/// The columns [`KeyRow::read`] reads, in order.
pub(crate) const KEY_COLUMNS: &str =
    "tool, params_digest, state, claimed_at_ns, expires_at_ns, action_id, output, error";

/// A key's row, as a claim finds it.
#[derive(Debug)]
pub(crate) struct KeyRow {
    pub(crate) tool: String,
    pub(crate) params_digest: Vec<u8>,
    pub(crate) done: bool,
    pub(crate) claimed_at: Timestamp,
    pub(crate) expires_at: Timestamp,
    pub(crate) action_id: Option<String>,
    pub(crate) output: Option<String>,
    pub(crate) error: Option<String>,
}

impl KeyRow {
    /// Reads a row of `SELECT {KEY_COLUMNS}`.
    pub(crate) fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        let state: String = row.get(2)?;
        let done = match state.as_str() {
            "done" => true,
            "running" => false,
            other => {
                return Err(invalid_column(
                    2,
                    Type::Text,
                    format!("unknown key state `{other}`"),
                ));
            }
        };
        Ok(Self {
            tool: row.get(0)?,
            params_digest: row.get(1)?,
            done,
            claimed_at: timestamp_from_sql(3, row.get(3)?)?,
            expires_at: timestamp_from_sql(4, row.get(4)?)?,
            action_id: row.get(5)?,
            output: row.get(6)?,
            error: row.get(7)?,
        })
    }

    /// Whether the key was claimed for this tool with these params.
    pub(crate) fn matches(&self, fingerprint: &Fingerprint) -> bool {
        *self.tool == *fingerprint.tool && self.params_digest == fingerprint.params.0
    }

    /// The first result, rebuilt from a `done` row.
    pub(crate) fn outcome(&self) -> Result<StoredOutcome, String> {
        let action_id = self
            .action_id
            .as_deref()
            .ok_or("a done key has no action id")?;
        let result = match (&self.error, &self.output) {
            (Some(record), _) => {
                let record: Value = serde_json::from_str(record)
                    .map_err(|error| format!("the error record is not JSON: {error}"))?;
                Err(InvokeError::from_record(&record).map_err(|error| error.to_string())?)
            }
            (None, Some(output)) => Ok(serde_json::from_str(output)
                .map_err(|error| format!("the output is not JSON: {error}"))?),
            (None, None) => return Err("a done key has neither an output nor an error".to_owned()),
        };
        Ok(StoredOutcome {
            action_id: ActionId::from(action_id),
            result,
            typed: None,
        })
    }
}

/// The columns an outcome is written as: `outcome`, `output`, `error`.
pub(crate) fn outcome_columns(outcome: &StoredOutcome) -> (String, Option<String>, Option<String>) {
    match &outcome.result {
        // Serializing a `Value` cannot fail (no non-string keys, no failing `Serialize`).
        Ok(output) => (
            "ok".to_owned(),
            Some(serde_json::to_string(output).unwrap_or_else(|_| "null".to_owned())),
            None,
        ),
        Err(error) => (
            error.kind().as_str().to_owned(),
            None,
            Some(error.to_record().to_string()),
        ),
    }
}

fn refusal(tool: &str, error: ToolError, action_id: ActionId) -> Arc<StoredOutcome> {
    Arc::new(StoredOutcome {
        action_id,
        result: Err(InvokeError::ToolFailed {
            tool: tool.to_owned(),
            error,
        }),
        typed: None,
    })
}

/// The answer for a key another process (or an earlier run of this one) claimed and has not
/// completed: it may still be running, or it stopped mid-run and nobody knows whether the
/// change was made. Running it again could make it twice, so it is refused.
pub(crate) fn in_doubt(scope: &IdempotencyScope, row: &KeyRow) -> Arc<StoredOutcome> {
    let error = ToolError::new(
        "outcome_unknown",
        format!(
            "the action of idempotency key `{key}` was started at {claimed} by another process \
             (or an earlier run of this one) that has not recorded how it ended: it is still \
             running, or it stopped before finishing and the change may or may not have been \
             made. Nothing ran now. Retry later to get its result; if none comes, check whether \
             the change was made before acting again with a new key (this key stays reserved \
             until {until})",
            key = scope.key,
            claimed = row.claimed_at,
            until = row.expires_at,
        ),
    )
    .in_doubt();
    refusal(
        &row.tool,
        error,
        ActionId::new(format!("in-doubt:{}", scope.key)),
    )
}

/// The answer for a done key whose stored result this build cannot read back.
pub(crate) fn unreadable(
    scope: &IdempotencyScope,
    row: &KeyRow,
    path: &Path,
    problem: &str,
) -> Arc<StoredOutcome> {
    // What the first run did is known only to the version that can read it: in doubt.
    let error = ToolError::new(
        "outcome_unreadable",
        format!(
            "the first result of idempotency key `{key}` is stored in {path} but cannot be read \
             back ({problem}); nothing ran. It was probably written by a newer Switchboard: \
             retry through that version, or use a new key once you have checked what the first \
             run did",
            key = scope.key,
            path = path.display(),
        ),
    )
    .in_doubt();
    refusal(
        &row.tool,
        error,
        row.action_id.as_deref().map_or_else(
            || ActionId::new(format!("unreadable:{}", scope.key)),
            ActionId::from,
        ),
    )
}

/// The answer when the database failed while claiming: nothing ran, and nothing was recorded,
/// so a retry once the database is back runs normally.
pub(crate) fn unavailable(
    scope: &IdempotencyScope,
    fingerprint: &Fingerprint,
    path: &Path,
    error: &rusqlite::Error,
) -> Arc<StoredOutcome> {
    let error = ToolError::new(
        "idempotency_store_unavailable",
        format!(
            "the approvals database {path} failed while claiming idempotency key `{key}` \
             ({error}); nothing ran: retry once it is writable again",
            path = path.display(),
            key = scope.key,
        ),
    );
    refusal(
        &fingerprint.tool,
        error,
        ActionId::new(format!("unavailable:{}", scope.key)),
    )
}

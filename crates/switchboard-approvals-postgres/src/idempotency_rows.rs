//! How a key's row of `approvals_idempotency_keys` is read and written, and the answers the
//! store makes up when a row cannot give the first result: a claim nobody will finish (in
//! doubt), a result this build cannot read, a database that failed. The same encodings and the
//! same answers, word for word where they can be, as the SQLite store's.
//!
//! A result is stored as JSON text: the output when the first run succeeded, else the error's
//! full record (`InvokeError::to_record`), which `InvokeError::from_record` turns back into the
//! very same error. `outcome` repeats `ok` or the error kind for people reading the table. The
//! typed copy of an output (`StoredOutcome::typed`) is never written: it is a Rust value of the
//! process that made it.
//!
//! The made-up answers are all `tool_failed` errors with a stable code, so a retry is refused
//! without running anything and says why: `outcome_unknown`, `outcome_unreadable`,
//! `idempotency_store_unavailable`.

use std::sync::Arc;

use jiff::Timestamp;
use serde_json::Value;
use switchboard_approvals::{Fingerprint, IdempotencyScope, StoredOutcome};
use switchboard_core::{ActionId, InvokeError, ToolError, digest_json};
use switchboard_postgres::{QueryError, Target, tokio_postgres::Row};

use crate::codec::timestamp_from_sql;

/// The columns [`KeyRow::read`] reads, in order, from a table aliased `k`.
pub(crate) const KEY_COLUMNS: &str = "k.tool, k.params_digest, k.state, k.claimed_at_ns, \
     k.expires_at_ns, k.action_id, k.output, k.error, k.owner";

/// A key's row, as a claim or a waiter finds it.
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
    /// The store value that claimed it.
    pub(crate) owner: String,
}

impl KeyRow {
    /// Reads columns `first..first + 9` ([`KEY_COLUMNS`]); `None` when they are NULL (an
    /// outer join that found no row).
    pub(crate) fn read(row: &Row, first: usize) -> Result<Option<Self>, QueryError> {
        let Some(state) = row.try_get::<_, Option<String>>(first + 2)? else {
            return Ok(None);
        };
        let done = match state.as_str() {
            "done" => true,
            "running" => false,
            other => {
                return Err(QueryError::Decode(format!(
                    "column state of approvals_idempotency_keys: unknown key state `{other}`"
                )));
            }
        };
        Ok(Some(Self {
            tool: row.try_get(first)?,
            params_digest: row.try_get(first + 1)?,
            done,
            claimed_at: timestamp_from_sql("claimed_at_ns", row.try_get(first + 3)?)?,
            expires_at: timestamp_from_sql("expires_at_ns", row.try_get(first + 4)?)?,
            action_id: row.try_get(first + 5)?,
            output: row.try_get(first + 6)?,
            error: row.try_get(first + 7)?,
            owner: row.try_get(first + 8)?,
        }))
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

/// The payload of a key's notification: the hex BLAKE3 digest of the canonical JSON (RFC 8785)
/// `[org, key]` (`switchboard_core::digest_json`), the same on every node and build, and short
/// whatever the key's length.
pub(crate) fn key_payload(scope: &IdempotencyScope) -> String {
    digest_json(&serde_json::json!([
        scope.org_id.as_str(),
        scope.key.as_str()
    ]))
    .map(|digest| digest.to_hex())
    // Two strings always have a digest; a key without one is woken by the poll alone.
    .unwrap_or_default()
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

/// The answer for a key claimed by a store value that is not running it any more (its node
/// died mid-run, or this store value gave up on it) and has not recorded how the run ended:
/// nobody knows whether the change was made, and running it again could make it twice.
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
    target: &Target,
    problem: &str,
) -> Arc<StoredOutcome> {
    let error = ToolError::new(
        "outcome_unreadable",
        format!(
            "the first result of idempotency key `{key}` is stored in {target} but cannot be \
             read back ({problem}); nothing ran. It was probably written by a newer Switchboard: \
             retry through that version, or use a new key once you have checked what the first \
             run did",
            key = scope.key,
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

/// The answer when the database failed while claiming (or while waiting on another node's
/// run): nothing ran here, and nothing was recorded, so a retry once the database is back
/// runs normally (or finds the other node's result).
pub(crate) fn unavailable(
    scope: &IdempotencyScope,
    tool: &str,
    target: &Target,
    error: &QueryError,
) -> Arc<StoredOutcome> {
    let error = ToolError::new(
        "idempotency_store_unavailable",
        format!(
            "the approvals database {target} failed while claiming idempotency key `{key}` \
             ({error}); nothing ran: retry once it is writable again",
            key = scope.key,
        ),
    );
    refusal(
        tool,
        error,
        ActionId::new(format!("unavailable:{}", scope.key)),
    )
}

/// The first result a `done` row replays, or the in-doubt answer when this build cannot read
/// it back (logged).
pub(crate) fn replay(
    scope: &IdempotencyScope,
    row: &KeyRow,
    target: &Target,
) -> Arc<StoredOutcome> {
    match row.outcome() {
        Ok(outcome) => Arc::new(outcome),
        Err(problem) => {
            tracing::error!(
                database = %target,
                key = %scope.key,
                %problem,
                "a stored first result cannot be read back"
            );
            unreadable(scope, row, target, &problem)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_payload_is_the_digest_of_its_canonical_org_and_key() {
        let scope = IdempotencyScope::new("acme".into(), "assign-42".into());
        // BLAKE3 of `["acme","assign-42"]`: every node and every build computes the same.
        assert_eq!(
            key_payload(&scope),
            "2811664ffdb25ccbfa68433079c04c78543b58424f713d48fc23adca8456428b"
        );
        let other = IdempotencyScope::new("acme-assign".into(), "42".into());
        assert_ne!(key_payload(&other), key_payload(&scope));
    }
}

//! How runs, steps and events become rows and back, column by column.
//!
//! Chosen so that a record reads back exactly as it was stored and the columns mean something
//! to anyone opening the file with `sqlite3`: ids as their hyphenated text (whose order is the
//! ids' order), states, events and values as JSON text, timestamps as integer nanoseconds (UTC,
//! exact from 1677 to 2262; outside that range clamped). An optional JSON value is SQL `NULL`
//! when absent, so an output that is JSON `null` stays distinct from no output. A column this
//! build cannot read back (bad JSON, an unknown state, an id that is not a UUID) is a corrupt
//! row, never a default.

use rusqlite::{Row, types::Type};
use serde::{Serialize, de::DeserializeOwned};
use switchboard_core::OrgId;
use switchboard_sqlite::{invalid_column, timestamp_from_sql};
use switchboard_workflows::{EventRecord, NodePath, RunId, RunRecord, StepKey, StepRecord};

/// The columns of a run, in the order [`run`] reads them.
pub(crate) const RUN_COLUMNS: &str = "id, org_id, workflow, state, definition, input, caller, \
     parent, output, wake_at_ns, steps_taken, created_at_ns, updated_at_ns";

/// The columns of a step, in the order [`step`] reads them.
pub(crate) const STEP_COLUMNS: &str = "run, path, iteration, state, params, output, error, \
     completed_seq, started_at_ns, updated_at_ns, questions";

/// The columns of an event, in the order [`event`] reads them.
pub(crate) const EVENT_COLUMNS: &str = "run, seq, at_ns, event";

/// `value` as JSON text, or the write's error.
pub(crate) fn to_json(value: &impl Serialize) -> rusqlite::Result<String> {
    serde_json::to_string(value)
        .map_err(|error| rusqlite::Error::ToSqlConversionFailure(Box::new(error)))
}

/// An optional value as JSON text, `None` as SQL `NULL`.
pub(crate) fn to_optional_json(value: Option<&impl Serialize>) -> rusqlite::Result<Option<String>> {
    value.map(to_json).transpose()
}

/// An unsigned count as an `INTEGER`, or the write's error if it does not fit.
pub(crate) fn to_integer(value: u64, what: &str) -> rusqlite::Result<i64> {
    i64::try_from(value).map_err(|_| {
        rusqlite::Error::ToSqlConversionFailure(
            format!("{what} {value} is larger than SQLite's largest integer").into(),
        )
    })
}

/// Column `index`, JSON text, read back as a `T`.
fn json<T: DeserializeOwned>(row: &Row<'_>, index: usize) -> rusqlite::Result<T> {
    let text = row.get_ref(index)?.as_str()?;
    serde_json::from_str(text).map_err(|error| invalid_column(index, Type::Text, error))
}

/// Column `index`, JSON text or `NULL`, read back as an optional `T`.
fn optional_json<T: DeserializeOwned>(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<T>> {
    match row.get_ref(index)?.as_str_or_null()? {
        None => Ok(None),
        Some(text) => serde_json::from_str(text)
            .map(Some)
            .map_err(|error| invalid_column(index, Type::Text, error)),
    }
}

fn run_id(row: &Row<'_>, index: usize) -> rusqlite::Result<RunId> {
    row.get_ref(index)?
        .as_str()?
        .parse()
        .map_err(|error| invalid_column(index, Type::Text, error))
}

fn unsigned<T: TryFrom<i64>>(row: &Row<'_>, index: usize) -> rusqlite::Result<T>
where
    T::Error: std::error::Error + Send + Sync + 'static,
{
    T::try_from(row.get::<_, i64>(index)?)
        .map_err(|error| invalid_column(index, Type::Integer, error))
}

fn timestamp(row: &Row<'_>, index: usize) -> rusqlite::Result<jiff::Timestamp> {
    timestamp_from_sql(index, row.get(index)?)
}

/// A row of [`RUN_COLUMNS`] as a run.
pub(crate) fn run(row: &Row<'_>) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        id: run_id(row, 0)?,
        org_id: OrgId::from(row.get_ref(1)?.as_str()?),
        workflow: row.get(2)?,
        state: json(row, 3)?,
        definition: json(row, 4)?,
        input: json(row, 5)?,
        caller: json(row, 6)?,
        parent: optional_json(row, 7)?,
        output: optional_json(row, 8)?,
        wake_at: row
            .get::<_, Option<i64>>(9)?
            .map(|nanoseconds| timestamp_from_sql(9, nanoseconds))
            .transpose()?,
        steps_taken: unsigned(row, 10)?,
        created_at: timestamp(row, 11)?,
        updated_at: timestamp(row, 12)?,
    })
}

/// A row of [`STEP_COLUMNS`] as a step.
pub(crate) fn step(row: &Row<'_>) -> rusqlite::Result<StepRecord> {
    Ok(StepRecord {
        key: StepKey {
            run: run_id(row, 0)?,
            path: NodePath::new(row.get_ref(1)?.as_str()?),
            iteration: unsigned(row, 2)?,
        },
        state: json(row, 3)?,
        params: optional_json(row, 4)?,
        output: optional_json(row, 5)?,
        error: optional_json(row, 6)?,
        completed_seq: row
            .get::<_, Option<i64>>(7)?
            .map(|seq| u64::try_from(seq).map_err(|error| invalid_column(7, Type::Integer, error)))
            .transpose()?,
        questions: optional_json(row, 10)?.unwrap_or_default(),
        started_at: timestamp(row, 8)?,
        updated_at: timestamp(row, 9)?,
    })
}

/// A row of [`EVENT_COLUMNS`] as an event.
pub(crate) fn event(row: &Row<'_>) -> rusqlite::Result<EventRecord> {
    Ok(EventRecord {
        run: run_id(row, 0)?,
        seq: unsigned(row, 1)?,
        at: timestamp(row, 2)?,
        event: json(row, 3)?,
    })
}

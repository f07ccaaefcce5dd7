//! How runs, steps and events become rows and back, column by column.
//!
//! The same encoding as the SQLite store's, so the columns read alike in either: ids as their
//! hyphenated text, states, events and values as JSON text, timestamps as `BIGINT` nanoseconds
//! since the epoch (UTC, exact from 1677 to 2262; outside that range clamped). An optional JSON
//! value is SQL `NULL` when absent, so an output that is JSON `null` stays distinct from no
//! output. A column this build cannot read back (bad JSON, an unknown state, an id that is not
//! a UUID) is [`QueryError::Decode`] naming the column, never a default.
//!
//! Everything a statement sends is encoded on the caller's thread into owned values
//! ([`RunRow`], [`CheckpointRow`]), which the query then borrows on the store's runtime.

use jiff::Timestamp;
use serde::{Serialize, de::DeserializeOwned};
use switchboard_core::OrgId;
use switchboard_postgres::{QueryError, tokio_postgres::Row};
use switchboard_workflows::{
    Checkpoint, EventRecord, NodePath, RunId, RunRecord, StepKey, StepRecord,
};

/// The columns of a run, in the order [`run`] reads them.
pub(crate) const RUN_COLUMNS: &str = "id, org_id, workflow, state, definition, input, caller, \
     parent, output, wake_at_ns, steps_taken, created_at_ns, updated_at_ns";

/// The columns of a step, in the order [`step`] reads them.
pub(crate) const STEP_COLUMNS: &str = "run, path, iteration, state, params, output, error, \
     completed_seq, started_at_ns, updated_at_ns, questions";

/// The columns of an event, in the order [`event`] reads them.
pub(crate) const EVENT_COLUMNS: &str = "run, seq, at_ns, event";

/// A timestamp as integer nanoseconds since the epoch, clamped to what an `i64` holds.
pub(crate) fn timestamp_to_sql(timestamp: Timestamp) -> i64 {
    let nanoseconds = timestamp.as_nanosecond();
    i64::try_from(nanoseconds).unwrap_or(if nanoseconds < 0 { i64::MIN } else { i64::MAX })
}

/// Integer nanoseconds read from `column` back as a timestamp.
fn timestamp_from_sql(column: &str, nanoseconds: i64) -> Result<Timestamp, QueryError> {
    Timestamp::from_nanosecond(i128::from(nanoseconds))
        .map_err(|error| QueryError::Decode(format!("column {column}: {error}")))
}

/// `value` as JSON text.
pub(crate) fn to_json(value: &impl Serialize) -> Result<String, QueryError> {
    serde_json::to_string(value)
        .map_err(|error| QueryError::Decode(format!("a value has no JSON form: {error}")))
}

/// An optional value as JSON text, `None` as SQL `NULL`.
pub(crate) fn to_optional_json(
    value: Option<&impl Serialize>,
) -> Result<Option<String>, QueryError> {
    value.map(to_json).transpose()
}

/// An unsigned count as a `BIGINT`, or an error if it does not fit.
pub(crate) fn to_integer(value: u64, what: &str) -> Result<i64, QueryError> {
    i64::try_from(value).map_err(|_| {
        QueryError::Decode(format!(
            "{what} {value} is larger than PostgreSQL's largest integer"
        ))
    })
}

fn get<'r, T: switchboard_postgres::tokio_postgres::types::FromSql<'r>>(
    row: &'r Row,
    column: &str,
) -> Result<T, QueryError> {
    row.try_get(column)
        .map_err(|error| QueryError::Decode(format!("column {column}: {error}")))
}

/// A JSON text column read back as a `T`.
fn json<T: DeserializeOwned>(row: &Row, column: &str) -> Result<T, QueryError> {
    let text: &str = get(row, column)?;
    serde_json::from_str(text)
        .map_err(|error| QueryError::Decode(format!("column {column}: {error}")))
}

/// A JSON text or `NULL` column read back as an optional `T`.
fn optional_json<T: DeserializeOwned>(row: &Row, column: &str) -> Result<Option<T>, QueryError> {
    get::<Option<&str>>(row, column)?
        .map(|text| {
            serde_json::from_str(text)
                .map_err(|error| QueryError::Decode(format!("column {column}: {error}")))
        })
        .transpose()
}

fn run_id(row: &Row, column: &str) -> Result<RunId, QueryError> {
    get::<&str>(row, column)?
        .parse()
        .map_err(|error| QueryError::Decode(format!("column {column}: {error}")))
}

fn unsigned<T: TryFrom<i64>>(row: &Row, column: &str) -> Result<T, QueryError>
where
    T::Error: std::fmt::Display,
{
    T::try_from(get::<i64>(row, column)?)
        .map_err(|error| QueryError::Decode(format!("column {column}: {error}")))
}

fn timestamp(row: &Row, column: &str) -> Result<Timestamp, QueryError> {
    timestamp_from_sql(column, get(row, column)?)
}

fn optional_timestamp(row: &Row, column: &str) -> Result<Option<Timestamp>, QueryError> {
    get::<Option<i64>>(row, column)?
        .map(|nanoseconds| timestamp_from_sql(column, nanoseconds))
        .transpose()
}

/// A row of [`RUN_COLUMNS`] as a run.
pub(crate) fn run(row: &Row) -> Result<RunRecord, QueryError> {
    Ok(RunRecord {
        id: run_id(row, "id")?,
        org_id: OrgId::from(get::<&str>(row, "org_id")?),
        workflow: get(row, "workflow")?,
        state: json(row, "state")?,
        definition: json(row, "definition")?,
        input: json(row, "input")?,
        caller: json(row, "caller")?,
        parent: optional_json(row, "parent")?,
        output: optional_json(row, "output")?,
        wake_at: optional_timestamp(row, "wake_at_ns")?,
        steps_taken: unsigned(row, "steps_taken")?,
        created_at: timestamp(row, "created_at_ns")?,
        updated_at: timestamp(row, "updated_at_ns")?,
    })
}

/// A row of [`STEP_COLUMNS`] as a step.
pub(crate) fn step(row: &Row) -> Result<StepRecord, QueryError> {
    Ok(StepRecord {
        key: StepKey {
            run: run_id(row, "run")?,
            path: NodePath::new(get::<&str>(row, "path")?),
            iteration: unsigned(row, "iteration")?,
        },
        state: json(row, "state")?,
        params: optional_json(row, "params")?,
        output: optional_json(row, "output")?,
        error: optional_json(row, "error")?,
        completed_seq: get::<Option<i64>>(row, "completed_seq")?
            .map(|seq| {
                u64::try_from(seq)
                    .map_err(|error| QueryError::Decode(format!("column completed_seq: {error}")))
            })
            .transpose()?,
        questions: optional_json(row, "questions")?.unwrap_or_default(),
        started_at: timestamp(row, "started_at_ns")?,
        updated_at: timestamp(row, "updated_at_ns")?,
    })
}

/// A row of [`EVENT_COLUMNS`] as an event.
pub(crate) fn event(row: &Row) -> Result<EventRecord, QueryError> {
    Ok(EventRecord {
        run: run_id(row, "run")?,
        seq: unsigned(row, "seq")?,
        at: timestamp(row, "at_ns")?,
        event: json(row, "event")?,
    })
}

/// A run, encoded for `INSERT`.
pub(crate) struct RunRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) workflow: String,
    pub(crate) state: String,
    pub(crate) state_name: &'static str,
    pub(crate) definition: String,
    pub(crate) input: String,
    pub(crate) caller: String,
    pub(crate) parent: Option<String>,
    pub(crate) output: Option<String>,
    pub(crate) wake_at_ns: Option<i64>,
    pub(crate) steps_taken: i64,
    pub(crate) created_at_ns: i64,
    pub(crate) updated_at_ns: i64,
}

impl RunRow {
    pub(crate) fn new(run: &RunRecord) -> Result<Self, QueryError> {
        Ok(Self {
            id: run.id.to_string(),
            org_id: run.org_id.as_str().to_owned(),
            workflow: run.workflow.clone(),
            state: to_json(&run.state)?,
            state_name: run.state.as_str(),
            definition: to_json(&run.definition)?,
            input: to_json(&run.input)?,
            caller: to_json(&run.caller)?,
            parent: to_optional_json(run.parent.as_ref())?,
            output: to_optional_json(run.output.as_ref())?,
            wake_at_ns: run.wake_at.map(timestamp_to_sql),
            steps_taken: i64::from(run.steps_taken),
            created_at_ns: timestamp_to_sql(run.created_at),
            updated_at_ns: timestamp_to_sql(run.updated_at),
        })
    }
}

/// A checkpoint, encoded for the checkpoint statement: every parameter, `NULL` where the
/// checkpoint has no run change or no step.
pub(crate) struct CheckpointRow {
    pub(crate) id: String,
    pub(crate) has_change: bool,
    pub(crate) from: Option<String>,
    pub(crate) to: Option<String>,
    pub(crate) to_name: Option<&'static str>,
    pub(crate) output: Option<String>,
    pub(crate) wake_at_ns: Option<i64>,
    pub(crate) steps_taken: Option<i64>,
    pub(crate) at_ns: i64,
    pub(crate) step_path: Option<String>,
    pub(crate) step_iteration: Option<i64>,
    pub(crate) step_state: Option<String>,
    pub(crate) step_params: Option<String>,
    pub(crate) step_output: Option<String>,
    pub(crate) step_error: Option<String>,
    pub(crate) step_completed_seq: Option<i64>,
    pub(crate) step_started_at_ns: Option<i64>,
    pub(crate) step_updated_at_ns: Option<i64>,
    pub(crate) step_questions: Option<String>,
    pub(crate) event: String,
    pub(crate) fence_owner: Option<String>,
    pub(crate) fence_token: Option<i64>,
}

impl CheckpointRow {
    pub(crate) fn new(checkpoint: &Checkpoint) -> Result<Self, QueryError> {
        let change = checkpoint.run_change.as_ref();
        let step = checkpoint.step.as_ref();
        Ok(Self {
            id: checkpoint.run.to_string(),
            has_change: change.is_some(),
            from: change.map(|change| to_json(&change.from)).transpose()?,
            to: change.map(|change| to_json(&change.to)).transpose()?,
            to_name: change.map(|change| change.to.as_str()),
            output: change
                .and_then(|change| change.output.as_ref())
                .map(to_json)
                .transpose()?,
            wake_at_ns: change
                .and_then(|change| change.wake_at)
                .map(timestamp_to_sql),
            steps_taken: change.map(|change| i64::from(change.steps_taken)),
            at_ns: timestamp_to_sql(checkpoint.at),
            step_path: step.map(|step| step.key.path.as_str().to_owned()),
            step_iteration: step.map(|step| i64::from(step.key.iteration)),
            step_state: step.map(|step| to_json(&step.state)).transpose()?,
            step_params: step
                .and_then(|step| step.params.as_ref())
                .map(to_json)
                .transpose()?,
            step_output: step
                .and_then(|step| step.output.as_ref())
                .map(to_json)
                .transpose()?,
            step_error: step
                .and_then(|step| step.error.as_ref())
                .map(to_json)
                .transpose()?,
            step_completed_seq: step
                .and_then(|step| step.completed_seq)
                .map(|seq| to_integer(seq, "the completion number"))
                .transpose()?,
            step_started_at_ns: step.map(|step| timestamp_to_sql(step.started_at)),
            step_updated_at_ns: step.map(|step| timestamp_to_sql(step.updated_at)),
            step_questions: step
                .filter(|step| !step.questions.is_empty())
                .map(|step| to_json(&step.questions))
                .transpose()?,
            event: to_json(&checkpoint.event)?,
            fence_owner: checkpoint.fence.as_ref().map(|fence| fence.owner.clone()),
            fence_token: checkpoint
                .fence
                .as_ref()
                .map(|fence| to_integer(fence.token, "the fencing token"))
                .transpose()?,
        })
    }
}

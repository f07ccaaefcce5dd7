//! The [`RunStore`] trait on the `runs`, `steps` and `events` tables.
//!
//! A checkpoint is one immediate transaction (`BEGIN IMMEDIATE` takes SQLite's write lock
//! first, so nothing can change the run between the read and the write, in this process or
//! another on the file): read the run's stored state, compare it with the change's `from`
//! (parsed and compared whole, payload included, so the comparison is exact whatever the JSON's
//! spelling), update the run, upsert the step, and insert the event numbered one past the run's
//! last, then commit. A refusal (no such run, another state) returns before anything is
//! written, and a failure rolls the transaction back, so a checkpoint is on the file whole or
//! not at all. `checkpoint_all` writes several in one transaction, one commit for all: the
//! commit is most of a checkpoint's cost. Each statement is prepared once and kept in the
//! connection's cache; nothing reads the schema per checkpoint.
//!
//! A run's lease is three columns of its row (`lease_owner`, `lease_expires_ns`,
//! `lease_token`); acquiring, renewing and releasing are each one conditional `UPDATE`, atomic
//! under SQLite's write lock, and a checkpoint that carries a fence compares it with the row in
//! the same transaction as the state.
//!
//! A failing database is an error, never an answer: every failure is logged and returned as
//! [`RunStoreError::Backend`] naming the operation and the file.

use jiff::Timestamp;
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use switchboard_sqlite::timestamp_to_sql;
use switchboard_workflows::{
    Checkpoint, EventRecord, Lease, RunFilter, RunId, RunRecord, RunState, RunStore, RunStoreError,
    StepRecord, store::unless_missing,
};

use crate::{
    database::SqliteRunStore,
    rows::{self, EVENT_COLUMNS, RUN_COLUMNS, STEP_COLUMNS, to_integer, to_json, to_optional_json},
};

/// The condition of an unfinished run, written exactly as the `runs_unfinished` index's.
const UNFINISHED: &str = "state_name NOT IN ('completed', 'failed', 'cancelled')";

/// A count or a bound as an `INTEGER`, the largest one if it does not fit (a limit of
/// `usize::MAX` means no limit).
fn bound(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// What a checkpoint's transaction decided, when it did not fail.
enum Written<T> {
    /// Written, with the events' numbers.
    Seq(T),
    /// Refused, nothing written.
    Refused(RunStoreError),
}

impl SqliteRunStore {
    fn insert_run(&self, run: &RunRecord) -> rusqlite::Result<bool> {
        let connection = self.connection();
        let inserted = connection
            .prepare_cached(
                "INSERT INTO runs (id, org_id, workflow, state, state_name, definition, input, \
                 caller, parent, output, wake_at_ns, steps_taken, created_at_ns, updated_at_ns) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) \
                 ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![
                run.id.to_string(),
                run.org_id.as_str(),
                run.workflow,
                to_json(&run.state)?,
                run.state.as_str(),
                to_json(&run.definition)?,
                to_json(&run.input)?,
                to_json(&run.caller)?,
                to_optional_json(run.parent.as_ref())?,
                to_optional_json(run.output.as_ref())?,
                run.wake_at.map(timestamp_to_sql),
                i64::from(run.steps_taken),
                timestamp_to_sql(run.created_at),
                timestamp_to_sql(run.updated_at),
            ])?;
        Ok(inserted == 1)
    }

    /// The checkpoints as one immediate transaction, each read, compared and written in turn,
    /// then one commit; the first refusal rolls back the whole batch.
    fn write_checkpoints(&self, checkpoints: &[Checkpoint]) -> rusqlite::Result<Written<Vec<u64>>> {
        let mut connection = self.connection();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut seqs = Vec::with_capacity(checkpoints.len());
        for checkpoint in checkpoints {
            match write_checkpoint(&transaction, checkpoint)? {
                Written::Seq(seq) => seqs.push(seq),
                Written::Refused(refusal) => return Ok(Written::Refused(refusal)),
            }
        }
        transaction.commit()?;
        Ok(Written::Seq(seqs))
    }

    fn run_exists(&self, id: &str) -> rusqlite::Result<bool> {
        self.connection()
            .prepare_cached("SELECT 1 FROM runs WHERE id = ?1")?
            .exists([id])
    }

    /// Takes the lease, or `None` when another owner holds a live one; `Err(None)` when the
    /// run does not exist.
    fn take_lease(
        &self,
        run: RunId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> rusqlite::Result<Result<Option<Lease>, RunStoreError>> {
        let id = run.to_string();
        let token: Option<i64> = self
            .connection()
            .prepare_cached(
                "UPDATE runs SET \
                 lease_token = CASE WHEN lease_owner = ?2 THEN lease_token ELSE lease_token + 1 END, \
                 lease_owner = ?2, lease_expires_ns = ?4 \
                 WHERE id = ?1 \
                 AND (lease_owner IS NULL OR lease_owner = ?2 OR lease_expires_ns <= ?3) \
                 RETURNING lease_token",
            )?
            .query_row(
                params![id, owner, timestamp_to_sql(now), timestamp_to_sql(until)],
                |row| row.get(0),
            )
            .optional()?;
        let lease = token.map(|token| Lease {
            run,
            owner: owner.to_owned(),
            token: u64::try_from(token).unwrap_or_default(),
            expires_at: until,
        });
        unless_missing(run, lease, || self.run_exists(&id))
    }

    /// Runs `sql` (an `UPDATE` of run `?1` where the lease is `?2`'s with token `?3`, setting
    /// `?4`); `Some` if it matched, or `Err` when the run does not exist.
    fn update_held(
        &self,
        sql: &str,
        lease: &Lease,
        until: Option<i64>,
    ) -> rusqlite::Result<Result<Option<()>, RunStoreError>> {
        let id = lease.run.to_string();
        let token = i64::try_from(lease.token).unwrap_or(i64::MAX);
        let changed = self.connection().prepare_cached(sql)?.execute(params![
            id,
            lease.owner,
            token,
            until
        ])?;
        unless_missing(lease.run, (changed == 1).then_some(()), || {
            self.run_exists(&id)
        })
    }

    fn written<T>(
        &self,
        checkpoints: &[Checkpoint],
        written: rusqlite::Result<Written<T>>,
    ) -> Result<T, RunStoreError> {
        match written {
            Ok(Written::Seq(seq)) => Ok(seq),
            Ok(Written::Refused(refusal)) => Err(refusal),
            Err(error) => {
                let run = checkpoints
                    .first()
                    .map_or_else(String::new, |checkpoint| checkpoint.run.to_string());
                Err(self.failure(format!("writing a checkpoint of run {run}"), &error))
            }
        }
    }
}

/// One checkpoint within `transaction`: read the run's state, compare, write.
fn write_checkpoint(
    transaction: &rusqlite::Transaction<'_>,
    checkpoint: &Checkpoint,
) -> rusqlite::Result<Written<u64>> {
    let id = checkpoint.run.to_string();
    let at = timestamp_to_sql(checkpoint.at);
    let stored: Option<(String, Option<String>, i64)> = transaction
        .prepare_cached("SELECT state, lease_owner, lease_token FROM runs WHERE id = ?1")?
        .query_row([&id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    let Some((stored, lease_owner, lease_token)) = stored else {
        return Ok(Written::Refused(RunStoreError::RunNotFound(checkpoint.run)));
    };
    if let Some(fence) = &checkpoint.fence {
        let token = u64::try_from(lease_token).unwrap_or_default();
        if let Err(lost) = fence.check(checkpoint.run, lease_owner.as_deref(), token) {
            return Ok(Written::Refused(lost));
        }
    }
    match &checkpoint.run_change {
        Some(change) => {
            let actual: RunState = serde_json::from_str(&stored).map_err(|error| {
                switchboard_sqlite::invalid_column(0, rusqlite::types::Type::Text, error)
            })?;
            if actual != change.from {
                return Ok(Written::Refused(RunStoreError::StateChanged {
                    run: checkpoint.run,
                    expected: Box::new(change.from.clone()),
                    actual: Box::new(actual),
                }));
            }
            transaction
                .prepare_cached(
                    "UPDATE runs SET state = ?2, state_name = ?3, output = ?4, \
                         wake_at_ns = ?5, steps_taken = ?6, updated_at_ns = ?7 WHERE id = ?1",
                )?
                .execute(params![
                    id,
                    to_json(&change.to)?,
                    change.to.as_str(),
                    to_optional_json(change.output.as_ref())?,
                    change.wake_at.map(timestamp_to_sql),
                    i64::from(change.steps_taken),
                    at,
                ])?;
        }
        None => {
            transaction
                .prepare_cached("UPDATE runs SET updated_at_ns = ?2 WHERE id = ?1")?
                .execute(params![id, at])?;
        }
    }
    if let Some(step) = &checkpoint.step {
        transaction
            .prepare_cached(
                "INSERT OR REPLACE INTO steps (run, path, iteration, state, params, output, \
                     error, completed_seq, started_at_ns, updated_at_ns, questions) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?
            .execute(params![
                step.key.run.to_string(),
                step.key.path.as_str(),
                i64::from(step.key.iteration),
                to_json(&step.state)?,
                to_optional_json(step.params.as_ref())?,
                to_optional_json(step.output.as_ref())?,
                to_optional_json(step.error.as_ref())?,
                step.completed_seq
                    .map(|seq| to_integer(seq, "the completion number"))
                    .transpose()?,
                timestamp_to_sql(step.started_at),
                timestamp_to_sql(step.updated_at),
                to_optional_json((!step.questions.is_empty()).then_some(&step.questions))?,
            ])?;
    }
    // The run's last number, read through the primary key under the write lock.
    let seq: i64 = transaction
        .prepare_cached(
            "INSERT INTO events (run, seq, at_ns, event) \
                 SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3 FROM events WHERE run = ?1 \
                 RETURNING seq",
        )?
        .query_row(params![id, at, to_json(&checkpoint.event)?], |row| {
            row.get(0)
        })?;
    Ok(Written::Seq(u64::try_from(seq).unwrap_or_default()))
}

impl RunStore for SqliteRunStore {
    fn create_run(&self, run: &RunRecord) -> Result<(), RunStoreError> {
        match self.insert_run(run) {
            Ok(true) => Ok(()),
            Ok(false) => Err(RunStoreError::DuplicateRun(run.id)),
            Err(error) => Err(self.failure(format!("creating run {}", run.id), &error)),
        }
    }

    fn run(&self, id: RunId) -> Result<Option<RunRecord>, RunStoreError> {
        let connection = self.connection();
        connection
            .prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"))
            .and_then(|mut statement| statement.query_row([id.to_string()], rows::run).optional())
            .map_err(|error| self.failure(format!("reading run {id}"), &error))
    }

    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError> {
        let checkpoints = std::slice::from_ref(checkpoint);
        let written = self.write_checkpoints(checkpoints);
        let mut seqs = self.written(checkpoints, written)?;
        Ok(seqs.pop().unwrap_or_default())
    }

    fn checkpoint_all(&self, checkpoints: &[Checkpoint]) -> Result<Vec<u64>, RunStoreError> {
        let written = self.write_checkpoints(checkpoints);
        self.written(checkpoints, written)
    }

    fn steps(&self, run: RunId) -> Result<Vec<StepRecord>, RunStoreError> {
        let connection = self.connection();
        connection
            .prepare_cached(&format!(
                "SELECT {STEP_COLUMNS} FROM steps WHERE run = ?1 ORDER BY path, iteration"
            ))
            .and_then(|mut statement| {
                statement
                    .query_map([run.to_string()], rows::step)?
                    .collect()
            })
            .map_err(|error| self.failure(format!("reading the steps of run {run}"), &error))
    }

    fn events(
        &self,
        run: RunId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, RunStoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let connection = self.connection();
        connection
            .prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE run = ?1 AND seq > ?2 \
                 ORDER BY seq LIMIT ?3"
            ))
            .and_then(|mut statement| {
                statement
                    .query_map(
                        params![run.to_string(), bound(after), bound(limit)],
                        rows::event,
                    )?
                    .collect()
            })
            .map_err(|error| self.failure(format!("reading the events of run {run}"), &error))
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, RunStoreError> {
        if filter.limit == 0 {
            return Ok(Vec::new());
        }
        let connection = self.connection();
        connection
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE org_id = ?1 \
                 AND (?2 IS NULL OR workflow = ?2) AND (?3 = 0 OR {UNFINISHED}) \
                 ORDER BY id DESC LIMIT ?4"
            ))
            .and_then(|mut statement| {
                statement
                    .query_map(
                        params![
                            filter.org_id.as_str(),
                            filter.workflow,
                            filter.unfinished_only,
                            bound(filter.limit),
                        ],
                        rows::run,
                    )?
                    .collect()
            })
            .map_err(|error| {
                self.failure(
                    format!("listing the runs of organisation {}", filter.org_id),
                    &error,
                )
            })
    }

    fn unfinished_runs(&self) -> Result<Vec<RunRecord>, RunStoreError> {
        let connection = self.connection();
        connection
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE {UNFINISHED} ORDER BY id"
            ))
            .and_then(|mut statement| statement.query_map([], rows::run)?.collect())
            .map_err(|error| self.failure("listing the unfinished runs".to_owned(), &error))
    }

    fn acquire_lease(
        &self,
        run: RunId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Option<Lease>, RunStoreError> {
        let _span = tracing::trace_span!("workflows.acquire_lease", run = %run, owner).entered();
        self.take_lease(run, owner, now, until)
            .map_err(|error| self.failure(format!("taking the lease of run {run}"), &error))?
    }

    fn renew_lease(&self, lease: &Lease, until: Timestamp) -> Result<Lease, RunStoreError> {
        let _span = tracing::trace_span!("workflows.renew_lease", run = %lease.run).entered();
        let held = self
            .update_held(
                "UPDATE runs SET lease_expires_ns = ?4 \
                 WHERE id = ?1 AND lease_owner = ?2 AND lease_token = ?3",
                lease,
                Some(timestamp_to_sql(until)),
            )
            .map_err(|error| {
                self.failure(format!("renewing the lease of run {}", lease.run), &error)
            })??;
        lease.renewed(held.is_some(), until)
    }

    fn release_lease(&self, lease: &Lease) -> Result<(), RunStoreError> {
        let _span = tracing::trace_span!("workflows.release_lease", run = %lease.run).entered();
        self.update_held(
            "UPDATE runs SET lease_owner = NULL, lease_expires_ns = ?4 \
             WHERE id = ?1 AND lease_owner = ?2 AND lease_token = ?3",
            lease,
            None,
        )
        .map_err(|error| self.failure(format!("releasing the lease of run {}", lease.run), &error))?
        .map(drop)
    }

    fn unleased_runs(
        &self,
        now: Timestamp,
        after: Option<RunId>,
        limit: usize,
    ) -> Result<Vec<RunRecord>, RunStoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let connection = self.connection();
        connection
            .prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE {UNFINISHED} \
                 AND (lease_owner IS NULL OR lease_expires_ns <= ?1) \
                 AND (?3 IS NULL OR id > ?3) ORDER BY id LIMIT ?2"
            ))
            .and_then(|mut statement| {
                statement
                    .query_map(
                        params![
                            timestamp_to_sql(now),
                            bound(limit),
                            after.map(|after| after.to_string())
                        ],
                        rows::run,
                    )?
                    .collect()
            })
            .map_err(|error| self.failure("listing the unleased runs".to_owned(), &error))
    }
}

//! [`PostgresRunStore`]: the [`RunStore`] trait on the `workflows_runs`, `workflows_steps` and
//! `workflows_events` tables.
//!
//! A checkpoint is one statement, so it is atomic without a transaction and costs one round
//! trip and one commit: an `UPDATE` of the run that is the compare-and-set (its `WHERE` holds
//! the expected state, compared as `jsonb`, so whole and payload included whatever the JSON's
//! spelling) and increments the run's last event number, and two `INSERT`s in data-modifying
//! `WITH` clauses that write the step and the event only if the update matched. The update
//! takes the run's row lock: a concurrent checkpoint of the same run waits for it, then
//! re-evaluates the compare-and-set against the row as committed (PostgreSQL's read-committed
//! rule for `UPDATE`), so of two engines moving a run from the same state exactly one wins,
//! and every event gets its own number. When nothing matched, a second read tells a missing
//! run from a state that changed.
//!
//! `checkpoint_all` sends `BEGIN`, its statements and `COMMIT` together, pipelined (all sent
//! before the first answer is read): one round trip and one commit. A refused checkpoint fails
//! its statement (its event's number is `NULL`, which the events table refuses), which aborts
//! the transaction, so the `COMMIT` rolls the whole batch back.
//!
//! A run's lease is three columns of its row (`lease_owner`, `lease_expires_ns`,
//! `lease_token`). Taking it is one conditional `UPDATE … RETURNING` (free, expired, or already
//! the caller's), which the row lock makes atomic among nodes; renewing and releasing are
//! `UPDATE`s conditional on the holder and token. The fencing is in the checkpoint's own
//! `WHERE`: a checkpoint that carries a fence matches only while the run's lease is still that
//! holder's with that token, so the check and the write are one atomic step.
//!
//! A failing database is an error, never an answer: every failure is logged and returned as
//! [`RunStoreError::Backend`] naming the operation and the database (without its password).

use jiff::Timestamp;
use switchboard_postgres::{
    Database, OpenError, PostgresOptions, QueryError, Target,
    tokio_postgres::{error::SqlState, types::ToSql},
};
use switchboard_workflows::{
    Checkpoint, EventRecord, Lease, RunFilter, RunId, RunRecord, RunState, RunStore, RunStoreError,
    StepRecord, store::unless_missing,
};

use crate::{
    rows::{
        self, CheckpointRow, EVENT_COLUMNS, RUN_COLUMNS, RunRow, STEP_COLUMNS, timestamp_to_sql,
        to_integer,
    },
    schema::{SCHEMA, SCHEMA_VERSION},
};

/// The condition of an unfinished run, written exactly as the `workflows_runs_unfinished`
/// index's.
const UNFINISHED: &str = "state_name NOT IN ('completed', 'failed', 'cancelled')";

/// A whole checkpoint in one statement; `$1` the run, `$2` whether it has a run change, `$3`
/// the state it expects, `$4..$8` the change, `$9` its time, `$10..$18` the step (`$10` is
/// `NULL` without one), `$19` the event, `$20` and `$21` the fence (`NULL` without one), `$22`
/// the step's questions (`NULL` when it asked none).
/// Returns the event's number. When the run is missing, its lease is not the fence's, or its
/// state is not the expected one, the update matches nothing and the event's number is
/// `NULL`: the statement fails on the event's `NOT NULL` (see [`refused`]), and nothing is
/// written. Failing, rather than answering no row, is what lets a batch be sent whole with
/// its `COMMIT`: a refusal aborts the transaction, and the `COMMIT` then rolls it back.
const CHECKPOINT: &str = "
    WITH changed AS (
        UPDATE workflows_runs SET
            state         = CASE WHEN $2::bool THEN $4::text   ELSE state END,
            state_name    = CASE WHEN $2::bool THEN $5::text   ELSE state_name END,
            output        = CASE WHEN $2::bool THEN $6::text   ELSE output END,
            wake_at_ns    = CASE WHEN $2::bool THEN $7::bigint ELSE wake_at_ns END,
            steps_taken   = CASE WHEN $2::bool THEN $8::bigint ELSE steps_taken END,
            updated_at_ns = $9::bigint,
            last_seq      = last_seq + 1
        WHERE id = $1::text AND (NOT $2::bool OR state::jsonb = $3::text::jsonb)
          AND ($20::text IS NULL OR (lease_owner = $20::text AND lease_token = $21::bigint))
        RETURNING last_seq
    ),
    step AS (
        INSERT INTO workflows_steps (run, path, iteration, state, params, output, error,
                                     completed_seq, started_at_ns, updated_at_ns, questions)
        SELECT $1::text, $10::text, $11::bigint, $12::text, $13::text, $14::text, $15::text,
               $16::bigint, $17::bigint, $18::bigint, $22::text
        FROM changed WHERE $10::text IS NOT NULL
        ON CONFLICT (run, path, iteration) DO UPDATE SET
            state = excluded.state, params = excluded.params, output = excluded.output,
            error = excluded.error, completed_seq = excluded.completed_seq,
            started_at_ns = excluded.started_at_ns, updated_at_ns = excluded.updated_at_ns,
            questions = excluded.questions
    ),
    event AS (
        INSERT INTO workflows_events (run, seq, at_ns, event)
        SELECT $1::text, (SELECT last_seq FROM changed), $9::bigint, $19::text
    )
    SELECT last_seq FROM changed";

/// Workflow runs, their steps and their events in PostgreSQL: every node of a fleet that opens
/// the same database shares them, and they survive any node.
#[derive(Debug, Clone)]
pub struct PostgresRunStore {
    database: Database,
}

impl PostgresRunStore {
    /// Connects to the database `options` name and migrates the workflows tables to
    /// [`SCHEMA_VERSION`]. Blocks until then; call it at startup, from any thread.
    ///
    /// Fails with one clear line (never the password) when the URL is wrong, the server is
    /// down or refuses the login, the database does not exist, or its workflows tables were
    /// written by a newer build.
    pub fn open(options: &PostgresOptions) -> Result<Self, OpenError> {
        let _span =
            tracing::debug_span!("open_workflows_database", target = %options.target()).entered();
        let database = Database::open(options, &SCHEMA)?;
        Ok(Self { database })
    }

    /// [`open`](Self::open), migrating only to `version`: for tests that check migrating from
    /// every earlier version.
    #[doc(hidden)]
    pub fn open_at(options: &PostgresOptions, version: i64) -> Result<Self, OpenError> {
        let database = Database::open_at(options, &SCHEMA, version)?;
        Ok(Self { database })
    }

    /// The database, as messages name it (no password).
    pub fn target(&self) -> &Target {
        self.database.target()
    }

    /// The schema version this build reads and writes (the database's, once open).
    pub fn schema_version(&self) -> i64 {
        SCHEMA_VERSION
    }

    /// The store's connections, for a caller that needs the database itself (a test).
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// Logs a failed operation and returns it as the error its caller gets, naming the
    /// database.
    fn failure(&self, action: String, error: &QueryError) -> RunStoreError {
        let target = self.database.target();
        tracing::error!(%target, %error, "the workflows database failed while {action}");
        RunStoreError::Backend {
            action,
            reason: format!("{error} (workflows database {target})"),
        }
    }

    /// Why `checkpoint`, which matched nothing, was refused: the run is missing, its lease is
    /// not the checkpoint's fence, or its state is not the expected one.
    fn refusal(&self, checkpoint: &Checkpoint) -> Result<RunStoreError, QueryError> {
        let run = checkpoint.run;
        let expected = checkpoint.run_change.as_ref().map(|change| &change.from);
        let id = run.to_string();
        let stored: Option<(String, Option<String>, i64)> =
            self.database.call(move |client| async move {
                let statement = client
                    .prepare_cached(
                        "SELECT state, lease_owner, lease_token FROM workflows_runs \
                         WHERE id = $1::text",
                    )
                    .await?;
                Ok(client
                    .query_opt(&statement, &[&id])
                    .await?
                    .map(|row| (row.get(0), row.get(1), row.get(2))))
            })?;
        let Some((stored, lease_owner, lease_token)) = stored else {
            return Ok(RunStoreError::RunNotFound(run));
        };
        if let Some(fence) = &checkpoint.fence
            && let Err(lost) = fence.check(run, lease_owner.as_deref(), sequence(lease_token))
        {
            return Ok(lost);
        }
        let actual: RunState = serde_json::from_str(&stored)
            .map_err(|error| QueryError::Decode(format!("column state: {error}")))?;
        Ok(match expected {
            Some(expected) => RunStoreError::StateChanged {
                run,
                expected: Box::new(expected.clone()),
                actual: Box::new(actual),
            },
            // Without a run change only a missing run matches nothing; it was deleted since.
            None => RunStoreError::RunNotFound(run),
        })
    }

    /// Writes `checkpoints`: one statement for one, a pipelined transaction for several.
    /// Returns their numbers, or the index of the first that matched nothing (then nothing
    /// was written).
    fn write(&self, checkpoints: &[Checkpoint]) -> Result<Result<Vec<u64>, usize>, QueryError> {
        let rows = checkpoints
            .iter()
            .map(CheckpointRow::new)
            .collect::<Result<Vec<_>, _>>()?;
        self.database.call(move |client| async move {
            let statement = client.prepare_cached(CHECKPOINT).await?;
            let all_params: Vec<_> = rows.iter().map(params).collect();
            if let [params] = all_params.as_slice() {
                return match client.query_one(&statement, params).await {
                    Ok(row) => Ok(Ok(vec![sequence(row.get(0))])),
                    Err(error) if refused(&error) => Ok(Err(0)),
                    Err(error) => Err(error.into()),
                };
            }
            // `BEGIN`, the checkpoints and `COMMIT` go out together, in order: one round trip.
            let (begun, answers, committed) = futures::future::join3(
                client.batch_execute("BEGIN"),
                futures::future::join_all(
                    all_params
                        .iter()
                        .map(|params| client.query_one(&statement, params)),
                ),
                client.batch_execute("COMMIT"),
            )
            .await;
            begun?;
            let mut seqs = Vec::with_capacity(answers.len());
            for (index, answer) in answers.into_iter().enumerate() {
                match answer {
                    Ok(row) => seqs.push(sequence(row.get(0))),
                    // The transaction failed there: the `COMMIT` rolled it back.
                    Err(error) if refused(&error) => {
                        committed?;
                        return Ok(Err(index));
                    }
                    Err(error) => return Err(error.into()),
                }
            }
            committed?;
            Ok(Ok(seqs))
        })
    }

    fn checkpoints(&self, checkpoints: &[Checkpoint]) -> Result<Vec<u64>, RunStoreError> {
        let Some(first) = checkpoints.first() else {
            return Ok(Vec::new());
        };
        let _span = tracing::trace_span!("workflows.checkpoint", run = %first.run,
            count = checkpoints.len())
        .entered();
        let action = || format!("writing a checkpoint of run {}", first.run);
        match self.write(checkpoints) {
            Ok(Ok(seqs)) => Ok(seqs),
            Ok(Err(index)) => self
                .refusal(&checkpoints[index])
                .map_err(|error| self.failure(action(), &error))
                .and_then(Err),
            Err(error) => Err(self.failure(action(), &error)),
        }
    }
}

/// Takes a run's lease: free, expired at `$3`, or already `$2`'s. A new holder gets the next
/// fencing token (the `SET` reads the row as it was). Under concurrent takers the row lock
/// orders them and each re-checks the condition against the committed row, so one wins.
const ACQUIRE: &str = "
    UPDATE workflows_runs SET
        lease_token = CASE WHEN lease_owner = $2::text THEN lease_token ELSE lease_token + 1 END,
        lease_owner = $2::text,
        lease_expires_ns = $4::bigint
    WHERE id = $1::text
      AND (lease_owner IS NULL OR lease_owner = $2::text OR lease_expires_ns <= $3::bigint)
    RETURNING lease_token";

/// Extends a lease still held (holder and token), expired or not.
const RENEW: &str = "
    UPDATE workflows_runs SET lease_expires_ns = $4::bigint
    WHERE id = $1::text AND lease_owner = $2::text AND lease_token = $3::bigint";

/// Frees a lease still held; `$4` is NULL, so that both lease statements take the same
/// parameters.
const RELEASE: &str = "
    UPDATE workflows_runs SET lease_owner = NULL, lease_expires_ns = $4::bigint
    WHERE id = $1::text AND lease_owner = $2::text AND lease_token = $3::bigint";

impl PostgresRunStore {
    fn run_exists(&self, run: RunId) -> Result<bool, QueryError> {
        let id = run.to_string();
        self.database.call(move |client| async move {
            let statement = client
                .prepare_cached("SELECT 1 FROM workflows_runs WHERE id = $1::text")
                .await?;
            Ok(client.query_opt(&statement, &[&id]).await?.is_some())
        })
    }

    fn take_lease(
        &self,
        run: RunId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Result<Option<Lease>, RunStoreError>, QueryError> {
        let id = run.to_string();
        let holder = owner.to_owned();
        let (now_ns, until_ns) = (timestamp_to_sql(now), timestamp_to_sql(until));
        let token: Option<i64> = self.database.call(move |client| async move {
            let statement = client.prepare_cached(ACQUIRE).await?;
            Ok(client
                .query_opt(&statement, &[&id, &holder, &now_ns, &until_ns])
                .await?
                .map(|row| row.get(0)))
        })?;
        let lease = token.map(|token| Lease {
            run,
            owner: owner.to_owned(),
            token: sequence(token),
            expires_at: until,
        });
        unless_missing(run, lease, || self.run_exists(run))
    }

    /// Runs a lease statement (`RENEW` or `RELEASE`) on `lease`; `Some` if it matched, or
    /// `Err` when the run does not exist.
    fn update_held(
        &self,
        sql: &'static str,
        lease: &Lease,
        until: Option<i64>,
    ) -> Result<Result<Option<()>, RunStoreError>, QueryError> {
        let id = lease.run.to_string();
        let owner = lease.owner.clone();
        let token = to_integer(lease.token, "the fencing token")?;
        let changed = self.database.call(move |client| async move {
            let statement = client.prepare_cached(sql).await?;
            Ok(client
                .execute(&statement, &[&id, &owner, &token, &until])
                .await?)
        })?;
        unless_missing(lease.run, (changed == 1).then_some(()), || {
            self.run_exists(lease.run)
        })
    }
}

/// Whether the checkpoint statement failed because it matched nothing: its event's number is
/// `NULL`, which the events table refuses.
fn refused(error: &switchboard_postgres::tokio_postgres::Error) -> bool {
    error.as_db_error().is_some_and(|error| {
        *error.code() == SqlState::NOT_NULL_VIOLATION
            && error.table() == Some("workflows_events")
            && error.column() == Some("seq")
    })
}

/// A stored event number (never negative: the store counts from 1).
fn sequence(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}

/// The checkpoint statement's parameters for `row`.
fn params(row: &CheckpointRow) -> [&(dyn ToSql + Sync); 22] {
    [
        &row.id,
        &row.has_change,
        &row.from,
        &row.to,
        &row.to_name,
        &row.output,
        &row.wake_at_ns,
        &row.steps_taken,
        &row.at_ns,
        &row.step_path,
        &row.step_iteration,
        &row.step_state,
        &row.step_params,
        &row.step_output,
        &row.step_error,
        &row.step_completed_seq,
        &row.step_started_at_ns,
        &row.step_updated_at_ns,
        &row.event,
        &row.fence_owner,
        &row.fence_token,
        &row.step_questions,
    ]
}

/// A count or a bound as a `BIGINT`, the largest one if it does not fit (a limit of
/// `usize::MAX` means no limit).
fn bound(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

impl RunStore for PostgresRunStore {
    fn create_run(&self, run: &RunRecord) -> Result<(), RunStoreError> {
        let _span = tracing::trace_span!("workflows.create_run", run = %run.id).entered();
        let action = || format!("creating run {}", run.id);
        let row = RunRow::new(run).map_err(|error| self.failure(action(), &error))?;
        let inserted = self.database.call(move |client| async move {
            let statement = client
                .prepare_cached(
                    "INSERT INTO workflows_runs (id, org_id, workflow, state, state_name, \
                     definition, input, caller, parent, output, wake_at_ns, steps_taken, \
                     created_at_ns, updated_at_ns) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
                     ON CONFLICT (id) DO NOTHING",
                )
                .await?;
            Ok(client
                .execute(
                    &statement,
                    &[
                        &row.id,
                        &row.org_id,
                        &row.workflow,
                        &row.state,
                        &row.state_name,
                        &row.definition,
                        &row.input,
                        &row.caller,
                        &row.parent,
                        &row.output,
                        &row.wake_at_ns,
                        &row.steps_taken,
                        &row.created_at_ns,
                        &row.updated_at_ns,
                    ],
                )
                .await?)
        });
        match inserted {
            Ok(1) => Ok(()),
            Ok(_) => Err(RunStoreError::DuplicateRun(run.id)),
            Err(error) => Err(self.failure(action(), &error)),
        }
    }

    fn run(&self, id: RunId) -> Result<Option<RunRecord>, RunStoreError> {
        let _span = tracing::trace_span!("workflows.run", run = %id).entered();
        let key = id.to_string();
        self.database
            .call(move |client| async move {
                let statement = client
                    .prepare_cached(&format!(
                        "SELECT {RUN_COLUMNS} FROM workflows_runs WHERE id = $1::text"
                    ))
                    .await?;
                client
                    .query_opt(&statement, &[&key])
                    .await?
                    .as_ref()
                    .map(rows::run)
                    .transpose()
            })
            .map_err(|error| self.failure(format!("reading run {id}"), &error))
    }

    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError> {
        let mut seqs = self.checkpoints(std::slice::from_ref(checkpoint))?;
        Ok(seqs.pop().unwrap_or_default())
    }

    fn checkpoint_all(&self, checkpoints: &[Checkpoint]) -> Result<Vec<u64>, RunStoreError> {
        self.checkpoints(checkpoints)
    }

    fn steps(&self, run: RunId) -> Result<Vec<StepRecord>, RunStoreError> {
        let _span = tracing::trace_span!("workflows.steps", run = %run).entered();
        let key = run.to_string();
        self.database
            .call(move |client| async move {
                let statement = client
                    .prepare_cached(&format!(
                        "SELECT {STEP_COLUMNS} FROM workflows_steps WHERE run = $1::text \
                         ORDER BY path, iteration"
                    ))
                    .await?;
                client
                    .query(&statement, &[&key])
                    .await?
                    .iter()
                    .map(rows::step)
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
        let _span = tracing::trace_span!("workflows.events", run = %run, after).entered();
        let key = run.to_string();
        let (after, limit) = (bound(after), bound(limit));
        self.database
            .call(move |client| async move {
                let statement = client
                    .prepare_cached(&format!(
                        "SELECT {EVENT_COLUMNS} FROM workflows_events \
                         WHERE run = $1::text AND seq > $2::bigint ORDER BY seq LIMIT $3::bigint"
                    ))
                    .await?;
                client
                    .query(&statement, &[&key, &after, &limit])
                    .await?
                    .iter()
                    .map(rows::event)
                    .collect()
            })
            .map_err(|error| self.failure(format!("reading the events of run {run}"), &error))
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, RunStoreError> {
        if filter.limit == 0 {
            return Ok(Vec::new());
        }
        let _span = tracing::trace_span!("workflows.list_runs", org = %filter.org_id).entered();
        let org = filter.org_id.as_str().to_owned();
        let workflow = filter.workflow.clone();
        let unfinished_only = filter.unfinished_only;
        let limit = bound(filter.limit);
        self.database
            .call(move |client| async move {
                let statement = client
                    .prepare_cached(&format!(
                        "SELECT {RUN_COLUMNS} FROM workflows_runs WHERE org_id = $1::text \
                         AND ($2::text IS NULL OR workflow = $2::text) \
                         AND (NOT $3::bool OR {UNFINISHED}) \
                         ORDER BY id DESC LIMIT $4::bigint"
                    ))
                    .await?;
                client
                    .query(&statement, &[&org, &workflow, &unfinished_only, &limit])
                    .await?
                    .iter()
                    .map(rows::run)
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
        let _span = tracing::trace_span!("workflows.unfinished_runs").entered();
        self.database
            .call(move |client| async move {
                let statement = client
                    .prepare_cached(&format!(
                        "SELECT {RUN_COLUMNS} FROM workflows_runs WHERE {UNFINISHED} ORDER BY id"
                    ))
                    .await?;
                client
                    .query(&statement, &[])
                    .await?
                    .iter()
                    .map(rows::run)
                    .collect()
            })
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
            .update_held(RENEW, lease, Some(timestamp_to_sql(until)))
            .map_err(|error| {
                self.failure(format!("renewing the lease of run {}", lease.run), &error)
            })??;
        lease.renewed(held.is_some(), until)
    }

    fn release_lease(&self, lease: &Lease) -> Result<(), RunStoreError> {
        let _span = tracing::trace_span!("workflows.release_lease", run = %lease.run).entered();
        self.update_held(RELEASE, lease, None)
            .map_err(|error| {
                self.failure(format!("releasing the lease of run {}", lease.run), &error)
            })?
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
        let _span = tracing::trace_span!("workflows.unleased_runs").entered();
        let (now_ns, limit) = (timestamp_to_sql(now), bound(limit));
        let after = after.map(|after| after.to_string());
        self.database
            .call(move |client| async move {
                let statement = client
                    .prepare_cached(&format!(
                        "SELECT {RUN_COLUMNS} FROM workflows_runs WHERE {UNFINISHED} \
                         AND (lease_owner IS NULL OR lease_expires_ns <= $1::bigint) \
                         AND ($3::text IS NULL OR id > $3::text) \
                         ORDER BY id LIMIT $2::bigint"
                    ))
                    .await?;
                client
                    .query(&statement, &[&now_ns, &limit, &after])
                    .await?
                    .iter()
                    .map(rows::run)
                    .collect()
            })
            .map_err(|error| self.failure("listing the unleased runs".to_owned(), &error))
    }
}

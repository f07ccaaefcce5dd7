//! The workflows database's schema: its application id and the versioned migrations that run
//! at startup (opening and migrating is `switchboard-sqlite`'s job, shared with the audit and
//! approvals stores).
//!
//! Three tables, all `STRICT`:
//!
//! - `runs`: one row per run. Its state is kept twice: `state` is the state's JSON (what is
//!   read back, and what a checkpoint's compare-and-set compares), `state_name` its name
//!   (`RunState::as_str`), for filtering and for people reading the file. The definition,
//!   input, caller, parent and output are JSON; times are integer nanoseconds.
//! - `steps`: one row per (run, node path, iteration), the primary key, so a checkpoint's step
//!   replaces the row of its key. `WITHOUT ROWID`: the rows live in key order, which is the
//!   order `steps` returns them in (a path compares by its UTF-8 bytes, as Rust compares
//!   strings; the iteration as a number).
//! - `events`: one row per (run, seq), numbered per run from 1 by the checkpoint that writes
//!   it, under the write lock.
//!
//! Version 2 adds each run's lease (`lease_owner`, `lease_expires_ns`, `lease_token`): which
//! engine drives it, until when, and the fencing token its checkpoints must carry. Version 3
//! adds each step's `questions`: what its tool asked its client, with the answers given (JSON,
//! `NULL` when it asked nothing).
//!
//! Migrations only ever append to [`MIGRATIONS`]: an entry, once released, never changes.

use switchboard_sqlite::{Migration, Schema};

/// `PRAGMA application_id` of a Switchboard workflows database: "SBWF" in ASCII.
pub const APPLICATION_ID: i32 = 0x5342_5746;

/// Every migration, oldest first. Version `n` means the first `n` have run.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "the runs, steps and events tables",
        // `runs_by_org` serves `list_runs` (an organisation's runs, newest first) without a sort;
        // the partial index holds the unfinished runs only, oldest first, which is what a starting
        // engine and the stuck-run monitor read. Its condition is written exactly as the query's,
        // so the planner uses it.
        sql: "
        CREATE TABLE runs (
            id            TEXT    PRIMARY KEY,
            org_id        TEXT    NOT NULL,
            workflow      TEXT    NOT NULL,
            state         TEXT    NOT NULL,
            state_name    TEXT    NOT NULL,
            definition    TEXT    NOT NULL,
            input         TEXT    NOT NULL,
            caller        TEXT    NOT NULL,
            parent        TEXT,
            output        TEXT,
            wake_at_ns    INTEGER,
            steps_taken   INTEGER NOT NULL,
            created_at_ns INTEGER NOT NULL,
            updated_at_ns INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX runs_by_org ON runs (org_id, id DESC);
        CREATE INDEX runs_unfinished ON runs (id)
            WHERE state_name NOT IN ('completed', 'failed', 'cancelled');

        CREATE TABLE steps (
            run           TEXT    NOT NULL,
            path          TEXT    NOT NULL,
            iteration     INTEGER NOT NULL,
            state         TEXT    NOT NULL,
            params        TEXT,
            output        TEXT,
            error         TEXT,
            completed_seq INTEGER,
            started_at_ns INTEGER NOT NULL,
            updated_at_ns INTEGER NOT NULL,
            PRIMARY KEY (run, path, iteration)
        ) STRICT, WITHOUT ROWID;

        CREATE TABLE events (
            run   TEXT    NOT NULL,
            seq   INTEGER NOT NULL,
            at_ns INTEGER NOT NULL,
            event TEXT    NOT NULL,
            PRIMARY KEY (run, seq)
        ) STRICT, WITHOUT ROWID;
    ",
    },
    Migration {
        description: "runs' leases: holder, expiry and fencing token",
        // A run's lease: who drives it (`lease_owner`, NULL when free) until when
        // (`lease_expires_ns`), and the fencing token of its last grant to a new holder.
        sql: "
        ALTER TABLE runs ADD COLUMN lease_owner TEXT;
        ALTER TABLE runs ADD COLUMN lease_expires_ns INTEGER;
        ALTER TABLE runs ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
    ",
    },
    Migration {
        description: "steps' questions to the client, and their answers",
        // What a step's tool asked its client (`StepRecord::questions`) as JSON, `NULL` when it
        // asked nothing: a step waiting for an answer reads it back on any engine.
        sql: "
        ALTER TABLE steps ADD COLUMN questions TEXT;
    ",
    },
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The workflows store's schema, as `switchboard-sqlite` opens and migrates it.
pub(crate) static SCHEMA: Schema = Schema {
    store: "workflows",
    application_id: APPLICATION_ID,
    migrations: MIGRATIONS,
};

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use jiff::Timestamp;
    use serde_json::json;
    use switchboard_core::CallContext;
    use switchboard_sqlite::{ConnectionSettings, Synchronous, open_database};
    use switchboard_workflows::{RunId, RunRecord, RunState, RunStore};

    use super::*;
    use crate::SqliteRunStore;

    #[test]
    fn every_earlier_version_is_migrated_forward_keeping_its_runs() {
        for version in 1..MIGRATIONS.len() {
            let older = Schema {
                store: SCHEMA.store,
                application_id: APPLICATION_ID,
                migrations: MIGRATIONS.split_at(version).0,
            };
            let dir = tempfile::tempdir().expect("a temporary directory");
            let path = dir.path().join("workflows.db");
            let now = Timestamp::constant(1_795_000_000, 0);
            let run = RunRecord {
                id: RunId::new(),
                org_id: "acme".into(),
                workflow: "assign_week".to_owned(),
                definition: Arc::new(json!({ "name": "assign_week" })),
                input: json!({}),
                caller: CallContext::builder().org("acme").user("sam").build(),
                parent: None,
                state: RunState::Running,
                output: None,
                wake_at: None,
                steps_taken: 0,
                created_at: now,
                updated_at: now,
            };
            {
                let connection = open_database(
                    &path,
                    &older,
                    ConnectionSettings::new(Synchronous::Normal, Duration::from_secs(5)),
                )
                .expect("a database at the older version");
                connection
                    .execute(
                        "INSERT INTO runs (id, org_id, workflow, state, state_name, definition, \
                         input, caller, steps_taken, created_at_ns, updated_at_ns) \
                         VALUES (?1, 'acme', 'assign_week', ?2, 'running', ?3, '{}', ?4, 0, ?5, ?5)",
                        rusqlite::params![
                            run.id.to_string(),
                            serde_json::to_string(&run.state).expect("JSON"),
                            serde_json::to_string(&run.definition).expect("JSON"),
                            serde_json::to_string(&run.caller).expect("JSON"),
                            switchboard_sqlite::timestamp_to_sql(now),
                        ],
                    )
                    .expect("a run at the older version");
            }
            let store = SqliteRunStore::open(&path).expect("migrates forward");
            assert_eq!(store.run(run.id).expect("readable"), Some(run.clone()));
            let lease = store
                .acquire_lease(run.id, "node-a", now, now)
                .expect("the lease columns exist");
            assert_eq!(
                lease.map(|lease| lease.token),
                Some(1),
                "from version {version}"
            );
        }
    }
}

//! The workflows store's tables in PostgreSQL, and the migrations that make them.
//!
//! Every name starts with `workflows_`, so the store can share one database with the audit and
//! approvals stores (an operator's single `[store] url`); its version is the `workflows` row of
//! the shared `switchboard_schema` table, which `switchboard-postgres` keeps.
//!
//! Ids and node paths are text in the `"C"` collation: byte order, which is the order of
//! hyphenated version 7 UUIDs (creation order) and of Rust's `str`, whatever the database's
//! default collation. JSON is `TEXT`, so what reads back is exactly what was written, and
//! timestamps are `BIGINT` nanoseconds since the epoch, exact to the nanosecond. A run keeps the
//! number of its last event (`last_seq`): a checkpoint increments it in the statement that
//! updates the run, under the run's row lock, so events are numbered once each without reading
//! the events table. Version 2 adds each run's lease: its holder, its expiry and its fencing
//! token. Version 3 adds each step's `questions`: what its tool asked its client, with the
//! answers given (JSON, `NULL` when it asked nothing).

use switchboard_postgres::{Migration, Schema};

/// Every migration, oldest first. Version `n` means the first `n` have run. Released entries
/// never change; a change of schema is a new entry.
const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "the runs, steps and events tables",
        // `workflows_runs_by_org` serves `list_runs` (an organisation's runs, newest first); the
        // partial index holds the unfinished runs only, oldest first, which is what a starting
        // engine and the stuck-run monitor read. Its condition is written exactly as the queries'.
        sql: r#"
        CREATE TABLE workflows_runs (
            id            TEXT COLLATE "C" PRIMARY KEY,
            org_id        TEXT   NOT NULL,
            workflow      TEXT   NOT NULL,
            state         TEXT   NOT NULL,
            state_name    TEXT   NOT NULL,
            definition    TEXT   NOT NULL,
            input         TEXT   NOT NULL,
            caller        TEXT   NOT NULL,
            parent        TEXT,
            output        TEXT,
            wake_at_ns    BIGINT,
            steps_taken   BIGINT NOT NULL,
            created_at_ns BIGINT NOT NULL,
            updated_at_ns BIGINT NOT NULL,
            last_seq      BIGINT NOT NULL DEFAULT 0
        );
        CREATE INDEX workflows_runs_by_org ON workflows_runs (org_id, id DESC);
        CREATE INDEX workflows_runs_unfinished ON workflows_runs (id)
            WHERE state_name NOT IN ('completed', 'failed', 'cancelled');

        CREATE TABLE workflows_steps (
            run           TEXT COLLATE "C" NOT NULL,
            path          TEXT COLLATE "C" NOT NULL,
            iteration     BIGINT NOT NULL,
            state         TEXT   NOT NULL,
            params        TEXT,
            output        TEXT,
            error         TEXT,
            completed_seq BIGINT,
            started_at_ns BIGINT NOT NULL,
            updated_at_ns BIGINT NOT NULL,
            PRIMARY KEY (run, path, iteration)
        );

        CREATE TABLE workflows_events (
            run   TEXT COLLATE "C" NOT NULL,
            seq   BIGINT NOT NULL,
            at_ns BIGINT NOT NULL,
            event TEXT   NOT NULL,
            PRIMARY KEY (run, seq)
        );
    "#,
    },
    Migration {
        description: "runs' leases: holder, expiry and fencing token",
        // Which engine drives a run (`lease_owner`, NULL when free), until when
        // (`lease_expires_ns`, the engine's clock), and the fencing token of the run's last grant
        // to a new holder, which the engine's checkpoints must carry.
        sql: "
        ALTER TABLE workflows_runs
            ADD COLUMN lease_owner      TEXT,
            ADD COLUMN lease_expires_ns BIGINT,
            ADD COLUMN lease_token      BIGINT NOT NULL DEFAULT 0;
    ",
    },
    Migration {
        description: "steps' questions to the client, and their answers",
        // What a step's tool asked its client (`StepRecord::questions`) as JSON, `NULL` when it
        // asked nothing: a step waiting for an answer reads it back on any node of the fleet.
        sql: "
        ALTER TABLE workflows_steps ADD COLUMN questions TEXT;
    ",
    },
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The workflows store's schema, as `switchboard-postgres` opens and migrates it.
pub(crate) static SCHEMA: Schema = Schema {
    store: "workflows",
    migrations: MIGRATIONS,
};

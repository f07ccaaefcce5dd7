//! The audit database's schema: its application id, the versioned migrations that run at
//! startup, and why the tables are shaped as they are.
//!
//! Opening, recognising our own files, refusing others' and running the migrations is
//! `switchboard-sqlite`'s job, shared with the other SQLite stores: a file is ours when its
//! `PRAGMA application_id` is [`APPLICATION_ID`]; its schema version is `PRAGMA user_version`,
//! the number of [`MIGRATIONS`] applied. Migrations only ever append to [`MIGRATIONS`]: an
//! entry, once released, never changes.
//!
//! # The shape (version 3), and why
//!
//! The writer must sustain hundreds of thousands of records a second in batches, under
//! `synchronous = FULL`; queries must still reach any filter's records without scanning the
//! table. Measured on raw SQLite (same rows, batches of 4,096, `docs/benchmarks.md`): the table
//! itself costs about 2 µs of CPU per record, and each per-record secondary index 0.6–1 µs
//! more, plus the pages it dirties in every commit. Version 2 had four (correlation, org, tool,
//! time); version 3 keeps one and finds the rest per batch:
//!
//! - `audit_records`: one row per record. `id` is the rowid, reserved by the writer from
//!   `audit_sequence` (one row, the last id given: ids are never reused, as `AUTOINCREMENT`
//!   promised, for one update per batch instead of one per record; a batch's first row is
//!   written with its id, the others numbered by SQLite and checked, see `codec`). The tool and the org are
//!   keys into `audit_tools` and `audit_orgs` (`dictionary`): small integers, in the row and in
//!   the postings. Every other field is a plain column (`codec`): a row means something in
//!   `sqlite3`.
//! - `audit_records_by_correlation`: the one per-record index. A correlation id has a handful
//!   of records, often one, so nothing coarser would do; ids minted as UUIDv7 (the CLI and the
//!   MCP server do) grow with time and land at the index's end.
//! - `audit_org_postings`, `audit_tool_postings`, `audit_outcome_postings` (`postings`): per
//!   batch and per key, the offsets of the batch's records with that key. An org, tool or
//!   outcome query walks its key's postings newest batch first and reads only the records
//!   listed, as it would walk an index, but a batch of 4,096 records from 50 orgs writes 50 org
//!   postings, not 4,096 index entries.
//! - `audit_time_highs`, `audit_time_lows` (`time_bounds`): per batch, bounds that turn a time
//!   range into an id range that holds every record in it, instead of a per-record time index.
//!
//! `user_id` has no structure of its own, as in version 2: a user's records are found within
//! an org (or a correlation, a tool, a time range), and postings per user would dirty a page
//! per distinct user in every batch (measured: about 1 µs more per record with 200 users).
//!
//! Migration 3 rebuilds version 2's table into this shape, keeping every id, and builds the
//! postings and bounds of the existing records as if they had come in batches of 1,024.

use switchboard_sqlite::{Migration, Schema};

/// `PRAGMA application_id` of a Switchboard audit database: "SBAU" in ASCII.
pub const APPLICATION_ID: i32 = 0x5342_4155;

/// Every migration, oldest first. Version `n` means the first `n` have run.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "the audit_records table and its query indexes",
        // `id` is the rowid. AUTOINCREMENT keeps ids from being reused even after retention has
        // deleted every record, so a cursor never lands on a different record. Secondary indexes
        // end with the rowid implicitly, so `(org_id)` orders by `(org_id, id)`: a query filtered
        // on one of them walks its index backwards, newest first, with no sort.
        sql: "
        CREATE TABLE audit_records (
            id             INTEGER PRIMARY KEY AUTOINCREMENT,
            timestamp_ns   INTEGER NOT NULL,
            tool           TEXT    NOT NULL,
            domain         TEXT,
            category       TEXT,
            org_id         TEXT,
            user_id        TEXT,
            session_id     TEXT,
            correlation_id TEXT,
            initiator      TEXT    NOT NULL,
            input_hash     BLOB    NOT NULL,
            output_hash    BLOB,
            duration_us    INTEGER NOT NULL,
            outcome        TEXT    NOT NULL
        ) STRICT;
        CREATE INDEX audit_records_by_correlation ON audit_records (correlation_id);
        CREATE INDEX audit_records_by_org ON audit_records (org_id);
        CREATE INDEX audit_records_by_tool ON audit_records (tool);
        CREATE INDEX audit_records_by_time ON audit_records (timestamp_ns);
    ",
    },
    Migration {
        description: "the action a record belongs to (idempotent mutations and proposals)",
        sql: "
            ALTER TABLE audit_records ADD COLUMN action_id TEXT;
            ALTER TABLE audit_records ADD COLUMN action_event TEXT;
        ",
    },
    Migration {
        description: "one index per record (correlation) instead of four; tools and orgs as \
                      dictionary keys; per-batch postings for org, tool and outcome; per-batch \
                      time bounds instead of a time index; ids from audit_sequence",
        sql: MIGRATION_3,
    },
];

/// Version 3: the shape the module docs explain. The existing records are copied into the
/// new `audit_records` (same ids, tools and orgs replaced by their dictionary keys), then the
/// postings and time bounds are built for them as if they had been appended in batches of
/// 1,024 consecutive ids, so that every query finds them exactly as it finds new ones.
const MIGRATION_3: &str = "
    CREATE TABLE audit_tools (
        key  INTEGER PRIMARY KEY,
        name TEXT    NOT NULL UNIQUE
    ) STRICT;
    CREATE TABLE audit_orgs (
        key  INTEGER PRIMARY KEY,
        name TEXT    NOT NULL UNIQUE
    ) STRICT;
    INSERT INTO audit_tools (name) SELECT DISTINCT tool FROM audit_records ORDER BY tool;
    INSERT INTO audit_orgs (name)
        SELECT DISTINCT org_id FROM audit_records WHERE org_id IS NOT NULL ORDER BY org_id;

    CREATE TABLE audit_records_v3 (
        id             INTEGER PRIMARY KEY,
        timestamp_ns   INTEGER NOT NULL,
        tool_key       INTEGER NOT NULL,
        domain         TEXT,
        category       TEXT,
        org_key        INTEGER,
        user_id        TEXT,
        session_id     TEXT,
        correlation_id TEXT,
        initiator      TEXT    NOT NULL,
        input_hash     BLOB    NOT NULL,
        output_hash    BLOB,
        duration_us    INTEGER NOT NULL,
        outcome        TEXT    NOT NULL,
        action_id      TEXT,
        action_event   TEXT
    ) STRICT;
    INSERT INTO audit_records_v3
        SELECT r.id, r.timestamp_ns, t.key, r.domain, r.category, o.key, r.user_id,
               r.session_id, r.correlation_id, r.initiator, r.input_hash, r.output_hash,
               r.duration_us, r.outcome, r.action_id, r.action_event
        FROM audit_records r
        JOIN audit_tools t ON t.name = r.tool
        LEFT JOIN audit_orgs o ON o.name = r.org_id
        ORDER BY r.id;

    CREATE TABLE audit_sequence (last_id INTEGER NOT NULL) STRICT;
    INSERT INTO audit_sequence (last_id) VALUES (max(
        coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'audit_records'), 0),
        coalesce((SELECT max(id) FROM audit_records), 0)
    ));

    DROP TABLE audit_records;
    ALTER TABLE audit_records_v3 RENAME TO audit_records;
    CREATE INDEX audit_records_by_correlation ON audit_records (correlation_id);

    CREATE TABLE audit_org_postings (
        org_key  INTEGER NOT NULL,
        first_id INTEGER NOT NULL,
        offsets  TEXT    NOT NULL,
        PRIMARY KEY (org_key, first_id)
    ) WITHOUT ROWID, STRICT;
    CREATE INDEX audit_org_postings_by_batch ON audit_org_postings (first_id);
    CREATE TABLE audit_tool_postings (
        tool_key INTEGER NOT NULL,
        first_id INTEGER NOT NULL,
        offsets  TEXT    NOT NULL,
        PRIMARY KEY (tool_key, first_id)
    ) WITHOUT ROWID, STRICT;
    CREATE INDEX audit_tool_postings_by_batch ON audit_tool_postings (first_id);
    CREATE TABLE audit_outcome_postings (
        outcome  TEXT    NOT NULL,
        first_id INTEGER NOT NULL,
        offsets  TEXT    NOT NULL,
        PRIMARY KEY (outcome, first_id)
    ) WITHOUT ROWID, STRICT;
    CREATE INDEX audit_outcome_postings_by_batch ON audit_outcome_postings (first_id);

    CREATE TABLE audit_time_highs (
        first_id INTEGER PRIMARY KEY,
        max_ts   INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX audit_time_highs_by_time ON audit_time_highs (max_ts);
    CREATE TABLE audit_time_lows (
        last_id INTEGER PRIMARY KEY,
        min_ts  INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX audit_time_lows_by_time ON audit_time_lows (min_ts);

    WITH batched AS (
        SELECT id, org_key, min(id) OVER (PARTITION BY (id - 1) / 1024) AS first_id
        FROM audit_records
    )
    INSERT INTO audit_org_postings (org_key, first_id, offsets)
        SELECT org_key, first_id, json_group_array(id - first_id ORDER BY id DESC)
        FROM batched WHERE org_key IS NOT NULL GROUP BY org_key, first_id;
    WITH batched AS (
        SELECT id, tool_key, min(id) OVER (PARTITION BY (id - 1) / 1024) AS first_id
        FROM audit_records
    )
    INSERT INTO audit_tool_postings (tool_key, first_id, offsets)
        SELECT tool_key, first_id, json_group_array(id - first_id ORDER BY id DESC)
        FROM batched GROUP BY tool_key, first_id;
    WITH batched AS (
        SELECT id, outcome, min(id) OVER (PARTITION BY (id - 1) / 1024) AS first_id
        FROM audit_records
    )
    INSERT INTO audit_outcome_postings (outcome, first_id, offsets)
        SELECT outcome, first_id, json_group_array(id - first_id ORDER BY id DESC)
        FROM batched GROUP BY outcome, first_id;

    WITH batches AS (
        SELECT min(id) AS first_id, max(id) AS last_id,
               min(timestamp_ns) AS min_ts, max(timestamp_ns) AS max_ts
        FROM audit_records GROUP BY (id - 1) / 1024
    ),
    highs AS (
        SELECT first_id, max_ts, max(max_ts) OVER (
            ORDER BY first_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS earlier_max
        FROM batches
    )
    INSERT INTO audit_time_highs (first_id, max_ts)
        SELECT first_id, max_ts FROM highs WHERE earlier_max IS NULL OR max_ts > earlier_max;
    WITH batches AS (
        SELECT min(id) AS first_id, max(id) AS last_id,
               min(timestamp_ns) AS min_ts, max(timestamp_ns) AS max_ts
        FROM audit_records GROUP BY (id - 1) / 1024
    ),
    lows AS (
        SELECT last_id, min_ts, min(min_ts) OVER (
            ORDER BY first_id ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING
        ) AS later_min
        FROM batches
    )
    INSERT INTO audit_time_lows (last_id, min_ts)
        SELECT last_id, min_ts FROM lows WHERE later_min IS NULL OR min_ts < later_min;
";

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The audit store's schema, as `switchboard-sqlite` opens and migrates it.
pub(crate) static SCHEMA: Schema = Schema {
    store: "audit",
    application_id: APPLICATION_ID,
    migrations: MIGRATIONS,
};

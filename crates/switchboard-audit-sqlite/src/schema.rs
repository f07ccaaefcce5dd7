//! The audit database's schema: its application id, the versioned migrations that run at
//! startup, and the shape they build.
//!
//! Opening, recognising our own files, refusing others' and running the migrations is
//! `switchboard-sqlite`'s job, shared with the other SQLite stores: a file is ours when its
//! `PRAGMA application_id` is [`APPLICATION_ID`]; its schema version is `PRAGMA user_version`,
//! the number of [`MIGRATIONS`] applied. Migrations only ever append to [`MIGRATIONS`]: an
//! entry, once released, never changes, so a file of any earlier version upgrades by running
//! the ones it lacks, in order.
//!
//! # The shape (version 7)
//!
//! One table, `audit_records`, with a row per record and a column per field, each a plain
//! value (`codec` says how each field is written), so that a row means something in `sqlite3`.
//! `id` is `INTEGER PRIMARY KEY AUTOINCREMENT`: the rowid, increasing in append order, and never
//! reused, even after retention deleted every record, so a cursor never lands on a different
//! record. `node` names the node that ran the call and `asks` holds the questions the call
//! asked the client, as a JSON array; `switch` holds what a switch of tools did, in that
//! switch's record (`tool` = `registry.switch`), as a JSON object; all three are `NULL` for
//! most records.
//!
//! One ordinary index per filter of `AuditQuery` that narrows a search on its own:
//! correlation id, org, tool, outcome and time. SQLite ends every index entry with the rowid,
//! so an index on `org_id` is in effect on `(org_id, id)`: a query for one org walks it
//! backwards and reads its records newest first, with no sort. The user has no index: a user's
//! records are looked for within an org, a correlation, a tool or a time range.
//!
//! When a query sets several filters, SQLite picks one index by how many rows it expects each
//! to leave, which it reads from `sqlite_stat1`. Migration 4 writes there the rough shape of an
//! audit table (a correlation id has a couple of records, an org or a tool thousands, an
//! outcome a large share, a timestamp one), as SQLite's documentation suggests for data whose
//! shape is known in advance: a query for one correlation id within an org then walks the
//! correlation index from the first record on, not the org's. `ANALYZE` replaces these figures
//! with measured ones.
//!
//! Versions 1 and 2 had this table without `digest_error`, with `input_hash` required.
//! Version 3 replaced the per-record org, tool and time indexes with per-batch structures
//! (postings, dictionaries, time bounds, an id sequence); migration 4 copies its records back
//! into the plain table, keeping every id and the highest id ever given, and drops them.
//! Migrations 5 and 6 add the `node` and `asks` columns; the records already there have
//! neither. Migration 7 adds the `switch` column, `NULL` in the records already there.

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
    Migration {
        description: "plain tables and indexes: tools and orgs as text, one index per filter \
                      (correlation, org, tool, outcome, time), nullable digests and the reason \
                      one is missing",
        sql: MIGRATION_4,
    },
    Migration {
        description: "the node that ran the call, when several share one store",
        sql: "ALTER TABLE audit_records ADD COLUMN node TEXT;",
    },
    Migration {
        description: "what the call asked the client (forms, pages, completions), as digests",
        sql: "ALTER TABLE audit_records ADD COLUMN asks TEXT;",
    },
    Migration {
        description: "what a switch of tools did (disable or enable, the selector, the tools)",
        sql: "ALTER TABLE audit_records ADD COLUMN switch TEXT;",
    },
];

/// Version 3: one per-record index (correlation); tools and orgs as keys into dictionary
/// tables; per-batch postings (the offsets of a batch's records of each org, tool and outcome)
/// and time bounds instead of per-record indexes; ids handed out from `audit_sequence`. The
/// existing records are copied under their ids and their postings and bounds built as if they
/// had been appended in batches of 1,024. Migration 4 turns this back into plain indexes.
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

/// Version 4: version 3's records, each under its own id, copied into a plain
/// `audit_records` (tools and orgs resolved from their dictionaries, no digest error), with
/// the `AUTOINCREMENT` counter set to the highest id version 3 ever gave; then version 3's
/// tables are dropped, the indexes built and their expected shape written to `sqlite_stat1`
/// (`ANALYZE sqlite_schema` creates that table without reading any other).
const MIGRATION_4: &str = "
    ALTER TABLE audit_records RENAME TO audit_records_v3;
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
        input_hash     BLOB,
        output_hash    BLOB,
        digest_error   TEXT,
        duration_us    INTEGER NOT NULL,
        outcome        TEXT    NOT NULL,
        action_id      TEXT,
        action_event   TEXT
    ) STRICT;
    INSERT INTO audit_records (id, timestamp_ns, tool, domain, category, org_id, user_id,
                               session_id, correlation_id, initiator, input_hash, output_hash,
                               duration_us, outcome, action_id, action_event)
        SELECT r.id, r.timestamp_ns, t.name, r.domain, r.category, o.name, r.user_id,
               r.session_id, r.correlation_id, r.initiator, r.input_hash, r.output_hash,
               r.duration_us, r.outcome, r.action_id, r.action_event
        FROM audit_records_v3 r
        JOIN audit_tools t ON t.key = r.tool_key
        LEFT JOIN audit_orgs o ON o.key = r.org_key
        ORDER BY r.id;
    DELETE FROM sqlite_sequence WHERE name IN ('audit_records', 'audit_records_v3');
    INSERT INTO sqlite_sequence (name, seq)
        SELECT 'audit_records', max(last_id, coalesce((SELECT max(id) FROM audit_records), 0))
        FROM audit_sequence;

    DROP TABLE audit_records_v3;
    DROP TABLE audit_tools;
    DROP TABLE audit_orgs;
    DROP TABLE audit_org_postings;
    DROP TABLE audit_tool_postings;
    DROP TABLE audit_outcome_postings;
    DROP TABLE audit_time_highs;
    DROP TABLE audit_time_lows;
    DROP TABLE audit_sequence;

    CREATE INDEX audit_records_by_correlation ON audit_records (correlation_id);
    CREATE INDEX audit_records_by_org ON audit_records (org_id);
    CREATE INDEX audit_records_by_tool ON audit_records (tool);
    CREATE INDEX audit_records_by_outcome ON audit_records (outcome);
    CREATE INDEX audit_records_by_time ON audit_records (timestamp_ns);

    ANALYZE sqlite_schema;
    DELETE FROM sqlite_stat1 WHERE tbl = 'audit_records';
    INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
        ('audit_records', 'audit_records_by_correlation', '1000000 2'),
        ('audit_records', 'audit_records_by_org', '1000000 20000'),
        ('audit_records', 'audit_records_by_tool', '1000000 50000'),
        ('audit_records', 'audit_records_by_outcome', '1000000 250000'),
        ('audit_records', 'audit_records_by_time', '1000000 1');
";

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The audit store's schema, as `switchboard-sqlite` opens and migrates it.
pub(crate) static SCHEMA: Schema = Schema {
    store: "audit",
    application_id: APPLICATION_ID,
    migrations: MIGRATIONS,
};

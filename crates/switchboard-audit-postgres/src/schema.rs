//! The audit store's tables in PostgreSQL: the versioned migrations that run when a store opens,
//! and the shape they build.
//!
//! Opening, migrating once across nodes and refusing a newer schema is `switchboard-postgres`'s
//! job; the store's version is its row (`audit`) in the shared `switchboard_schema` table.
//! Migrations only ever append to [`MIGRATIONS`]: an entry, once released, never changes, so a
//! database of any earlier version upgrades by running the ones it lacks, in order.
//!
//! # The shape (version 1)
//!
//! One table, `audit_records`, a row per record and a column per field, each a plain value
//! (`codec` says how each field is written), the same columns as the SQLite store's table so
//! that a row means the same in `psql` as in `sqlite3`. Every name starts with `audit_`, so the
//! audit store shares a database with the other stores.
//!
//! - `id` is a `BIGINT` identity (`GENERATED ALWAYS`): a sequence hands out ids in insertion
//!   order and never hands one out twice, even after retention deleted every record or a
//!   transaction rolled back (a rolled-back batch leaves a gap, never a reuse).
//! - The text columns that queries compare (tool, org, user, correlation, outcome) use the `C`
//!   collation: comparisons are byte comparisons, the same whatever locale the database was
//!   created with, and the cheapest for the indexes to keep.
//! - Digests are `BYTEA` of exactly 32 bytes, or `NULL`; `CHECK` constraints keep the stable
//!   names (`initiator`, `outcome`, `category`, `action_event`) non-empty and a half-written
//!   action out.
//!
//! Indexes: a PostgreSQL index does not end with the row's id the way a SQLite one ends with the
//! rowid, so each index of a filter that narrows a search on its own is on `(column, id)`:
//! correlation id, org, tool and outcome. A query for one org walks `(org_id, id)` backwards
//! and reads its records newest first with no sort. Time has `(timestamp_ns)`, for time ranges
//! and for retention. The user has no index: a user's records are looked for within an org, a
//! correlation id, a tool or a time range, as in the SQLite store.
//!
//! Every statement of the store names its columns, so a later migration can add one (the node
//! that ran a call, for one) with `ALTER TABLE audit_records ADD COLUMN …` without touching the
//! records already there.
//!
//! # Version 2: the node
//!
//! `audit_records.node`, the node that ran the call (`NULL` in older records).
//!
//! # Version 3: batch keys
//!
//! `audit_batches`, a row per batch appended: its key (`batch_key UUID`, the primary key; a
//! UUID version 7, so keys sort by when they were minted) and the ids its records got
//! (`ids BIGINT[]`, ascending). A batch's records and its row commit in one statement, so a
//! key is there exactly when its records are; an attempt at a batch whose key is there stores
//! nothing and reads the ids back (see the store's `append_keyed_batch`). Keys are only needed
//! while the audit writer may still retry their batch, so the store deletes the old ones.
//!
//! # Version 4: what a call asked
//!
//! `audit_records.asks`, the questions the call asked the client (forms, pages, completions)
//! as one JSON array in `TEXT` (`asks::jsonb` in SQL looks inside), the SQLite store's text;
//! `NULL` when it asked nothing, as almost every call, and in older records.
//!
//! # Version 5: what a switch of tools did
//!
//! `audit_records.switch`, in the record of a switch of tools (`tool` = `registry.switch`):
//! disable or enable, the selector and the tools it changed, as one JSON object in `TEXT`, the
//! SQLite store's text; `NULL` in a call's record and in older records.

use switchboard_postgres::{Migration, Schema};

/// Every migration, oldest first. Version `n` means the first `n` have run.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "the audit_records table and its query indexes",
        sql: "
        CREATE TABLE audit_records (
            id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            timestamp_ns   BIGINT NOT NULL,
            tool           TEXT COLLATE \"C\" NOT NULL,
            domain         TEXT,
            category       TEXT CHECK (category <> ''),
            org_id         TEXT COLLATE \"C\",
            user_id        TEXT COLLATE \"C\",
            session_id     TEXT,
            correlation_id TEXT COLLATE \"C\",
            initiator      TEXT NOT NULL CHECK (initiator <> ''),
            input_hash     BYTEA CHECK (octet_length(input_hash) = 32),
            output_hash    BYTEA CHECK (octet_length(output_hash) = 32),
            digest_error   TEXT,
            duration_us    BIGINT NOT NULL,
            outcome        TEXT COLLATE \"C\" NOT NULL CHECK (outcome <> ''),
            action_id      TEXT,
            action_event   TEXT CHECK (action_event <> ''),
            CONSTRAINT audit_records_action_whole
                CHECK ((action_id IS NULL) = (action_event IS NULL))
        );
        CREATE INDEX audit_records_by_correlation ON audit_records (correlation_id, id);
        CREATE INDEX audit_records_by_org ON audit_records (org_id, id);
        CREATE INDEX audit_records_by_tool ON audit_records (tool, id);
        CREATE INDEX audit_records_by_outcome ON audit_records (outcome, id);
        CREATE INDEX audit_records_by_time ON audit_records (timestamp_ns);
    ",
    },
    Migration {
        description: "the node that ran the call, when several share one store",
        sql: "ALTER TABLE audit_records ADD COLUMN node TEXT",
    },
    Migration {
        description: "the keys of the batches appended, so that a retried batch is stored once",
        sql: "
        CREATE TABLE audit_batches (
            batch_key UUID PRIMARY KEY,
            ids       BIGINT[] NOT NULL
        );
    ",
    },
    Migration {
        description: "what the call asked the client (forms, pages, completions), as digests",
        sql: "ALTER TABLE audit_records ADD COLUMN asks TEXT",
    },
    Migration {
        description: "what a switch of tools did (disable or enable, the selector, the tools)",
        sql: "ALTER TABLE audit_records ADD COLUMN switch TEXT",
    },
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The audit store's tables, as `switchboard-postgres` opens and migrates them: for
/// [`Database::open_at`](switchboard_postgres::Database::open_at) in migration tests, and for a
/// command that migrates without opening a store.
pub static SCHEMA: Schema = Schema {
    store: "audit",
    migrations: MIGRATIONS,
};

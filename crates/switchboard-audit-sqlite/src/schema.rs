//! The audit database's schema: its application id and the versioned migrations that run at
//! startup.
//!
//! Opening, recognising our own files, refusing others' and running the migrations is
//! `switchboard-sqlite`'s job, shared with the other SQLite stores: a file is ours when its
//! `PRAGMA application_id` is [`APPLICATION_ID`]; its schema version is `PRAGMA user_version`,
//! the number of [`MIGRATIONS`] applied. Migrations only ever append to [`MIGRATIONS`]: an
//! entry, once released, never changes.

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
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The audit store's schema, as `switchboard-sqlite` opens and migrates it.
pub(crate) static SCHEMA: Schema = Schema {
    store: "audit",
    application_id: APPLICATION_ID,
    migrations: MIGRATIONS,
};

//! The approvals database's schema: its application id and the versioned migrations that run
//! at startup (opening and migrating is `switchboard-sqlite`'s job, shared with the audit
//! store).
//!
//! Two tables, both `STRICT`:
//!
//! - `proposals`: one row per proposal, its proposer in columns, its status as `pending`,
//!   `approved`, `rejected`, `expired` or `withdrawn` with who decided (or withdrew), when, the
//!   feedback (or the reason for withdrawing) and the run's outcome. A decision is an `UPDATE … WHERE status = 'pending'`, so of racing deciders (in
//!   any number of processes) exactly one changes the row.
//! - `idempotency_keys`: one row per `(org_id, idempotency_key)`, written *before* the tool
//!   runs (`state = 'running'`, with the claiming store's `owner` id) and completed with the
//!   first result (`state = 'done'`: the action id, `outcome` = `ok` or the error kind, the
//!   output's JSON or the error's record). `expires_at_ns` is when the key may be claimed
//!   anew: the claim time plus the retention while running, the completion time plus the
//!   retention once done.
//!
//! Migrations only ever append to [`MIGRATIONS`]: an entry, once released, never changes.

use switchboard_sqlite::{Migration, Schema};

/// `PRAGMA application_id` of a Switchboard approvals database: "SBAP" in ASCII.
pub const APPLICATION_ID: i32 = 0x5342_4150;

/// Every migration, oldest first. Version `n` means the first `n` have run.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "the proposals and idempotency_keys tables",
        // `proposals_by_org` serves `list` (newest first, ties by id) without a sort; the partial
        // index on pending expiries makes the expiry sweep read only the rows it changes.
        // `idempotency_keys` is keyed by its primary key alone (WITHOUT ROWID), and swept by the
        // expiry index.
        sql: "
        CREATE TABLE proposals (
            id                      TEXT    PRIMARY KEY,
            org_id                  TEXT    NOT NULL,
            tool                    TEXT    NOT NULL,
            params                  TEXT    NOT NULL,
            summary                 TEXT    NOT NULL,
            proposer_user_id        TEXT    NOT NULL,
            proposer_session_id     TEXT    NOT NULL,
            proposer_correlation_id TEXT    NOT NULL,
            proposer_initiator      TEXT    NOT NULL,
            proposer_agent_type     TEXT,
            thread_id               TEXT,
            project_id              TEXT,
            created_at_ns           INTEGER NOT NULL,
            expires_at_ns           INTEGER NOT NULL,
            status                  TEXT    NOT NULL
                CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
            decided_by              TEXT,
            decided_at_ns           INTEGER,
            feedback                TEXT,
            outcome                 TEXT
        ) STRICT;
        CREATE INDEX proposals_by_org ON proposals (org_id, created_at_ns DESC, id);
        CREATE INDEX proposals_pending_by_expiry ON proposals (expires_at_ns)
            WHERE status = 'pending';

        CREATE TABLE idempotency_keys (
            org_id          TEXT    NOT NULL,
            idempotency_key TEXT    NOT NULL,
            tool            TEXT    NOT NULL,
            params_digest   BLOB    NOT NULL,
            state           TEXT    NOT NULL CHECK (state IN ('running', 'done')),
            owner           TEXT    NOT NULL,
            claimed_at_ns   INTEGER NOT NULL,
            expires_at_ns   INTEGER NOT NULL,
            completed_at_ns INTEGER,
            action_id       TEXT,
            outcome         TEXT,
            output          TEXT,
            error           TEXT,
            PRIMARY KEY (org_id, idempotency_key)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at_ns);
    ",
    },
    Migration {
        description: "proposals may be withdrawn",
        // SQLite cannot change a CHECK constraint: the table is rebuilt with the new one, its rows
        // copied unchanged, and its indexes made again.
        sql: "
        CREATE TABLE proposals_withdrawable (
            id                      TEXT    PRIMARY KEY,
            org_id                  TEXT    NOT NULL,
            tool                    TEXT    NOT NULL,
            params                  TEXT    NOT NULL,
            summary                 TEXT    NOT NULL,
            proposer_user_id        TEXT    NOT NULL,
            proposer_session_id     TEXT    NOT NULL,
            proposer_correlation_id TEXT    NOT NULL,
            proposer_initiator      TEXT    NOT NULL,
            proposer_agent_type     TEXT,
            thread_id               TEXT,
            project_id              TEXT,
            created_at_ns           INTEGER NOT NULL,
            expires_at_ns           INTEGER NOT NULL,
            status                  TEXT    NOT NULL
                CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'withdrawn')),
            decided_by              TEXT,
            decided_at_ns           INTEGER,
            feedback                TEXT,
            outcome                 TEXT
        ) STRICT;
        INSERT INTO proposals_withdrawable SELECT * FROM proposals;
        DROP TABLE proposals;
        ALTER TABLE proposals_withdrawable RENAME TO proposals;
        CREATE INDEX proposals_by_org ON proposals (org_id, created_at_ns DESC, id);
        CREATE INDEX proposals_pending_by_expiry ON proposals (expires_at_ns)
            WHERE status = 'pending';
    ",
    },
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The approvals store's schema, as `switchboard-sqlite` opens and migrates it.
pub(crate) static SCHEMA: Schema = Schema {
    store: "approvals",
    application_id: APPLICATION_ID,
    migrations: MIGRATIONS,
};

//! The approvals store's tables in PostgreSQL and the versioned migrations that make them
//! (opening and migrating is `switchboard-postgres`'s job; the version lives in the shared
//! `switchboard_schema` table, row `approvals`).
//!
//! Every name starts with `approvals_`, so the store can share one database with the audit
//! and workflow stores. Two tables, the same columns as the SQLite store's:
//!
//! - `approvals_proposals`: one row per proposal, its proposer in columns, its status as
//!   `pending`, `approved`, `rejected`, `expired` or `withdrawn` with who decided (or
//!   withdrew), when, the feedback (or the reason) and the run's outcome. A decision is one
//!   `UPDATE … WHERE status = 'pending'`, so of racing deciders on any number of nodes exactly
//!   one changes the row.
//! - `approvals_idempotency_keys`: one row per `(org_id, idempotency_key)`, written *before* the
//!   tool runs (`state = 'running'`, with the claiming store's `owner` id and its node's
//!   `owner_lock`, the advisory lock that says the node is alive) and completed with the first
//!   result (`state = 'done'`). `expires_at_ns` is when the key may be claimed anew.
//!
//! Keys, ids and organisations are `COLLATE "C"` (bytewise, like SQLite's), so equality and
//! the listing's order do not depend on the server's locale. JSON is `TEXT`: the params and
//! results read back byte for byte. Timestamps are `BIGINT` nanoseconds.
//!
//! Migrations only ever append to [`MIGRATIONS`]: an entry, once released, never changes.

use switchboard_postgres::{Migration, Schema};

/// Every migration, oldest first. Version `n` means the first `n` have run.
pub(crate) const MIGRATIONS: &[Migration] = &[Migration {
    description: "the approvals_proposals and approvals_idempotency_keys tables",
    // `approvals_proposals_by_org` serves `list` (newest first, ties by id); the partial index
    // on pending expiries makes the expiry sweep read only the rows it changes. Keys are swept
    // by their expiry index.
    sql: r#"
        CREATE TABLE approvals_proposals (
            id                      TEXT COLLATE "C" PRIMARY KEY,
            org_id                  TEXT COLLATE "C" NOT NULL,
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
            created_at_ns           BIGINT  NOT NULL,
            expires_at_ns           BIGINT  NOT NULL,
            status                  TEXT    NOT NULL
                CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'withdrawn')),
            decided_by              TEXT,
            decided_at_ns           BIGINT,
            feedback                TEXT,
            outcome                 TEXT
        );
        CREATE INDEX approvals_proposals_by_org
            ON approvals_proposals (org_id, created_at_ns DESC, id);
        CREATE INDEX approvals_proposals_pending_by_expiry
            ON approvals_proposals (expires_at_ns) WHERE status = 'pending';

        CREATE TABLE approvals_idempotency_keys (
            org_id          TEXT COLLATE "C" NOT NULL,
            idempotency_key TEXT COLLATE "C" NOT NULL,
            tool            TEXT    NOT NULL,
            params_digest   BYTEA   NOT NULL,
            state           TEXT    NOT NULL CHECK (state IN ('running', 'done')),
            owner           TEXT    NOT NULL,
            owner_lock      INTEGER NOT NULL,
            claimed_at_ns   BIGINT  NOT NULL,
            expires_at_ns   BIGINT  NOT NULL,
            completed_at_ns BIGINT,
            action_id       TEXT,
            outcome         TEXT,
            output          TEXT,
            error           TEXT,
            PRIMARY KEY (org_id, idempotency_key)
        );
        CREATE INDEX approvals_idempotency_keys_by_expiry
            ON approvals_idempotency_keys (expires_at_ns);
    "#,
}];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The approvals store's schema, as `switchboard-postgres` opens and migrates it.
pub(crate) static SCHEMA: Schema = Schema {
    store: "approvals",
    migrations: MIGRATIONS,
};

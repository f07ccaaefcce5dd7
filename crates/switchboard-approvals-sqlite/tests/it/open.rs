//! Opening an approvals database: a new file is created with the approvals schema in WAL mode,
//! a reopened one migrates nothing, a file of the first schema migrates its rows unchanged, and the refusals that depend on the approvals store (a
//! database damaged past its header, found when the store counts its rows; the audit store's
//! database) come back as an `OpenError` naming the file and the approvals store. The refusals
//! every store shares (garbage, another application's file, a newer schema, a missing or
//! unwritable directory) are tested once, in `switchboard-sqlite`.

use std::{fs, path::Path};

use rusqlite::Connection;
use switchboard_approvals::ProposalStore;
use switchboard_approvals_sqlite::{APPLICATION_ID, ApprovalsDatabase, OpenError, SCHEMA_VERSION};
use switchboard_sqlite::conformance::{self, header_fields};

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Opens `path` expecting a refusal, and checks the error names the file and the store.
fn refused(path: &Path) -> OpenError {
    conformance::refused(ApprovalsDatabase::open(path), path, "approvals")
}

#[test]
fn a_missing_file_is_created_migrated_and_in_wal_mode() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    let database = ApprovalsDatabase::open(&path).expect("a new database opens");
    assert!(path.is_file());
    assert_eq!(database.schema_version(), SCHEMA_VERSION);
    assert!(
        database
            .proposal_store()
            .list(&"acme".into())
            .expect("readable")
            .is_empty()
    );
    drop(database);
    assert_eq!(
        header_fields(&path),
        (APPLICATION_ID, SCHEMA_VERSION, "wal".to_owned())
    );
    // Reopening migrates nothing.
    drop(ApprovalsDatabase::open(&path).expect("reopens"));
    assert_eq!(header_fields(&path).1, SCHEMA_VERSION);
}

#[test]
fn a_database_damaged_past_its_header_is_refused_as_corrupt() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    drop(ApprovalsDatabase::open(&path).expect("opens"));
    {
        // Fill some pages, then move the WAL into the file so the damage is not masked.
        let connection = Connection::open(&path).expect("opens with plain SQLite");
        connection
            .execute_batch(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) \
                 INSERT INTO idempotency_keys (org_id, idempotency_key, tool, params_digest, \
                 state, owner, claimed_at_ns, expires_at_ns) \
                 SELECT 'acme', 'key-' || i, 'tool', zeroblob(32), 'running', 'x', 0, 0 FROM n; \
                 PRAGMA wal_checkpoint(TRUNCATE);",
            )
            .expect("rows written");
    }
    let mut bytes = fs::read(&path).expect("the database");
    assert!(bytes.len() > 8_192, "the rows fill several pages");
    for (offset, byte) in bytes.iter_mut().enumerate().skip(4_096) {
        *byte = (offset * 31 % 251) as u8;
    }
    fs::write(&path, &bytes).expect("damaged");
    let error = refused(&path);
    assert!(matches!(error, OpenError::Corrupt { .. }), "{error:?}");
}

#[test]
fn an_audit_database_is_another_stores_file_and_is_refused_untouched() {
    // Application id SBAU.
    conformance::another_stores_file_is_refused_untouched(
        "approvals",
        "audit_records",
        0x5342_4155,
        scratch().path(),
        |path| ApprovalsDatabase::open(path),
    );
}

/// The first released schema's tables, as a file written by that build holds them.
const FIRST_SCHEMA: &str = "
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
";

#[test]
fn a_file_of_the_first_schema_migrates_its_proposals_unchanged_and_they_can_be_withdrawn() {
    let dir = scratch();
    let path = dir.path().join("approvals.db");
    {
        let connection = Connection::open(&path).expect("a new file");
        connection
            .pragma_update(None, "application_id", APPLICATION_ID)
            .expect("application_id");
        connection
            .execute_batch(FIRST_SCHEMA)
            .expect("the first schema");
        connection
            .execute_batch(
                "INSERT INTO proposals (id, org_id, tool, params, summary, proposer_user_id, \
                 proposer_session_id, proposer_correlation_id, proposer_initiator, created_at_ns, \
                 expires_at_ns, status, decided_by, decided_at_ns, outcome) VALUES \
                 ('prop-pending', 'acme', 'roster_assign_shift', '{\"user_id\":\"sam\"}', \
                  'assign sam', 'alice', 's-1', 'c-1', 'agent', 1000, 4000000000000000000, \
                  'pending', NULL, NULL, NULL), \
                 ('prop-approved', 'acme', 'roster_assign_shift', '{\"user_id\":\"mark\"}', \
                  'assign mark', 'alice', 's-1', 'c-2', 'agent', 2000, 4000000000000000000, \
                  'approved', 'mark', 3000, 'ok');",
            )
            .expect("rows of the first schema");
        connection
            .pragma_update(None, "user_version", 1)
            .expect("user_version");
    }
    let database = ApprovalsDatabase::open(&path).expect("the file migrates");
    assert_eq!(database.schema_version(), SCHEMA_VERSION);
    let store = database.proposal_store();
    let listed = store.list(&"acme".into()).expect("readable");
    let ids: Vec<&str> = listed.iter().map(|proposal| proposal.id.as_str()).collect();
    assert_eq!(
        ids,
        ["prop-approved", "prop-pending"],
        "newest first, both kept"
    );
    assert!(matches!(
        &listed[0].status,
        switchboard_approvals::ProposalStatus::Approved { by, outcome: Some(outcome), .. }
            if by == "mark" && outcome == "ok"
    ));
    let withdrawn = store
        .decide(
            &"acme".into(),
            &"prop-pending".into(),
            switchboard_approvals::Decision::Withdraw {
                by: "alice".into(),
                reason: "the run was cancelled".to_owned(),
            },
            jiff::Timestamp::from_second(5).expect("a time"),
        )
        .expect("a migrated pending proposal can be withdrawn");
    assert_eq!(withdrawn.status.as_str(), "withdrawn");
    drop(database);
    assert_eq!(header_fields(&path).1, SCHEMA_VERSION);
}

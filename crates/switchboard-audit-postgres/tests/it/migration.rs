//! Opening the audit tables: an empty database is migrated to the latest version, a database of
//! every earlier version is upgraded with its records intact, reopening migrates nothing, a
//! database newer than this build is refused untouched, and a wrong password is one line
//! without the password.

use switchboard_audit::{AuditQuery, AuditRecord, AuditStore};
use switchboard_audit_postgres::{
    OpenError, PostgresAuditStore, PostgresOptions, SCHEMA, SCHEMA_VERSION,
};
use switchboard_core::ask::{AskKind, AskOutcome, AskRecord};
use switchboard_postgres::Database;
use switchboard_test_postgres::TestDatabase;

use crate::common::fresh_database;

/// Runs `work` with a plain client of the database (not the store's), on a runtime of its own.
fn with_client<T>(
    database: &TestDatabase,
    work: impl AsyncFnOnce(&switchboard_postgres::tokio_postgres::Client) -> T,
) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(async {
            let client = database.connect().await.expect("a plain client connects");
            work(&client).await
        })
}

/// Runs `sql` on the database as a plain client would.
fn execute(database: &TestDatabase, sql: &str) {
    with_client(database, async |client| {
        client.batch_execute(sql).await.expect("the statements run");
    });
}

/// The audit store's version recorded in the database.
fn recorded_version(database: &TestDatabase) -> i64 {
    with_client(database, async |client| {
        switchboard_postgres::schema_version(client, "audit")
            .await
            .expect("the version reads")
    })
}

/// The names of the audit store's tables and indexes.
fn objects(database: &TestDatabase) -> Vec<String> {
    with_client(database, async |client| {
        client
            .query(
                "SELECT relkind::text || ' ' || relname FROM pg_class \
                 WHERE relname LIKE 'audit%' ORDER BY relname",
                &[],
            )
            .await
            .expect("the catalog reads")
            .iter()
            .map(|row| row.get::<_, String>(0))
            .collect()
    })
}

/// Records written the way a build of schema `version` wrote them, with plain SQL, so that a
/// migration from `version` has records to carry; the correlation ids they carry, oldest first.
/// Version 0 has no tables, so no records.
fn seed_at(database: &TestDatabase, version: i64) -> Vec<&'static str> {
    match version {
        0 => Vec::new(),
        1 => {
            execute(
                database,
                "INSERT INTO audit_records (timestamp_ns, tool, domain, category, org_id, \
                 user_id, session_id, correlation_id, initiator, input_hash, output_hash, \
                 digest_error, duration_us, outcome, action_id, action_event) VALUES \
                 (1795000000123456789, 'roster_list_shifts', 'roster', 'read', 'acme', 'alice', \
                  's1', 'v1-first', 'human', decode(repeat('ab', 32), 'hex'), NULL, NULL, 12, \
                  'ok', NULL, NULL), \
                 (1795000001000000000, 'roster_assign_shift', 'roster', 'execute', 'acme', \
                  'mark', 's2', 'v1-second', 'agent', NULL, NULL, 'input: not JSON', 7, \
                  'permission_denied', 'action-1', 'executed')",
            );
            vec!["v1-first", "v1-second"]
        }
        2 => {
            execute(
                database,
                "INSERT INTO audit_records (timestamp_ns, tool, domain, category, org_id, \
                 user_id, session_id, correlation_id, initiator, input_hash, output_hash, \
                 digest_error, duration_us, outcome, action_id, action_event, node) VALUES \
                 (1795000002000000000, 'roster_post_notice', 'roster', 'execute', 'acme', \
                  'alice', 's3', 'v2-first', 'human', NULL, NULL, NULL, 9, 'ok', 'action-2', \
                  'executed', 'node-a')",
            );
            vec!["v2-first"]
        }
        3 => {
            execute(
                database,
                "INSERT INTO audit_records (timestamp_ns, tool, domain, category, org_id, \
                 user_id, session_id, correlation_id, initiator, input_hash, output_hash, \
                 digest_error, duration_us, outcome, action_id, action_event, node) VALUES \
                 (1795000003000000000, 'roster_list_shifts', 'roster', 'read', 'globex', \
                  'sue', 's4', 'v3-first', 'agent', decode(repeat('cd', 32), 'hex'), \
                  decode(repeat('ef', 32), 'hex'), NULL, 4, 'ok', NULL, NULL, NULL)",
            );
            vec!["v3-first"]
        }
        4 => {
            execute(
                database,
                "INSERT INTO audit_records (timestamp_ns, tool, domain, category, org_id, \
                 user_id, session_id, correlation_id, initiator, input_hash, output_hash, \
                 digest_error, duration_us, outcome, action_id, action_event, node, asks) \
                 VALUES (1795000004000000000, 'roster_plan_week', 'roster', 'propose', 'acme', \
                  'mark', 's5', 'v4-first', 'human', NULL, NULL, NULL, 5, 'ok', NULL, NULL, \
                  NULL, NULL)",
            );
            vec!["v4-first"]
        }
        other => panic!("no seed for schema version {other}: add one with its migration"),
    }
}

#[test]
fn an_empty_database_is_migrated_to_the_latest_version_and_reopening_changes_nothing() {
    let database = fresh_database();
    let store = PostgresAuditStore::open(database.url()).expect("an empty database opens");
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    assert_eq!(store.stats().held, 0);
    drop(store);
    assert_eq!(recorded_version(&database), SCHEMA_VERSION);
    let before = objects(&database);
    for index in [
        "audit_records_by_correlation",
        "audit_records_by_org",
        "audit_records_by_tool",
        "audit_records_by_outcome",
        "audit_records_by_time",
        "audit_batches_pkey",
    ] {
        assert!(
            before.contains(&format!("i {index}")),
            "{index}: {before:?}"
        );
    }
    assert!(before.contains(&"r audit_batches".to_owned()), "{before:?}");
    let store = PostgresAuditStore::open(database.url()).expect("reopens");
    let mut records = vec![crate::common::record("reopened"); 3];
    store.append_batch(&mut records).expect("appends");
    drop(store);
    let store = PostgresAuditStore::open(database.url()).expect("reopens again");
    assert_eq!(
        store.stats().held,
        3,
        "held counts the records already there"
    );
    assert_eq!(store.stats().appended, 0, "appended counts since this open");
    assert_eq!(objects(&database), before);
    assert_eq!(recorded_version(&database), SCHEMA_VERSION);
}

#[test]
fn every_earlier_version_is_upgraded_with_its_records_intact() {
    for version in 0..SCHEMA_VERSION {
        let database = fresh_database();
        drop(
            Database::open_at(&PostgresOptions::new(database.url()), &SCHEMA, version)
                .expect("the database opens at the earlier version"),
        );
        assert_eq!(recorded_version(&database), version);
        let seeded = seed_at(&database, version);
        let store = PostgresAuditStore::open(database.url())
            .unwrap_or_else(|error| panic!("version {version} upgrades: {error}"));
        assert_eq!(recorded_version(&database), SCHEMA_VERSION);
        let found = store.query(&AuditQuery::all()).expect("every row decodes");
        let mut correlations: Vec<&str> = found
            .iter()
            .filter_map(|record| record.correlation_id.as_ref().map(|id| id.as_str()))
            .collect();
        correlations.reverse();
        assert_eq!(correlations, seeded, "from version {version}");
        assert!(
            found.iter().all(|record| record.asks.is_empty()),
            "from version {version}: a record written before `asks` asked nothing"
        );
        assert!(
            found.iter().all(|record| record.switch.is_none()),
            "from version {version}: a record written before `switch` is a call's"
        );
        // New records come after the old ones, and a batch's key keeps a retry from storing it
        // again.
        let key = switchboard_audit::BatchKey::new();
        let asked = AuditRecord {
            asks: vec![AskRecord {
                kind: AskKind::Form,
                outcome: AskOutcome::Declined,
                error: None,
                request_hash: crate::common::correlation_digest("the form"),
                answer_hash: None,
                duration_us: 2_000,
            }],
            ..crate::common::record("after-upgrade")
        };
        let mut records = vec![asked];
        store
            .append_keyed_batch(key, &mut records)
            .expect("appends");
        assert!(found.iter().all(|old| old.id < records[0].id));
        let mut retried = vec![crate::common::record("after-upgrade")];
        store
            .append_keyed_batch(key, &mut retried)
            .expect("a retry");
        assert_eq!(retried[0].id, records[0].id, "from version {version}");
        let after = store
            .query(&AuditQuery::correlation("after-upgrade"))
            .expect("queries");
        assert_eq!(after, records, "from version {version}");
    }
}

#[test]
fn a_database_newer_than_this_build_is_refused_untouched() {
    let database = fresh_database();
    let store = PostgresAuditStore::open(database.url()).expect("opens");
    let mut records = vec![crate::common::record("kept")];
    store.append_batch(&mut records).expect("appends");
    drop(store);
    execute(
        &database,
        "UPDATE switchboard_schema SET version = version + 1 WHERE store = 'audit'",
    );
    let error = PostgresAuditStore::open(database.url()).expect_err("a newer schema is refused");
    assert!(matches!(error, OpenError::TooNew { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("audit"), "{message}");
    assert!(
        message.contains(&(SCHEMA_VERSION + 1).to_string()),
        "{message}"
    );
    assert_eq!(recorded_version(&database), SCHEMA_VERSION + 1);
}

#[test]
fn a_wrong_password_is_one_line_without_the_password() {
    let database = fresh_database();
    let url = database.url();
    let (scheme_and_user, host_and_rest) = url.split_once('@').expect("a URL with a user");
    let user = scheme_and_user
        .rsplit_once(':')
        .map_or(scheme_and_user, |(user, _)| user);
    let wrong = format!("{user}:not-the-password-4711@{host_and_rest}");
    let error = PostgresAuditStore::open(wrong).expect_err("a wrong password is refused");
    let message = error.to_string();
    assert!(
        matches!(error, OpenError::Authentication { .. }),
        "{error:?}"
    );
    assert!(!message.contains("not-the-password-4711"), "{message}");
    assert!(!message.contains('\n'), "{message}");
}

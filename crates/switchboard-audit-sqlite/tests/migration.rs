//! A database written by the previous build (schema version 2: one wide table, four indexes)
//! opens with this one, migrates, and keeps every record: each reads back unchanged under its
//! old id, every query finds what it found before, new records get new ids, and retention
//! works across old and new records.
//!
//! The version 2 file is made here with plain SQLite, from the statements that build released
//! (frozen below), so the test keeps checking the upgrade whatever the current schema becomes.

use std::path::Path;

use jiff::{SignedDuration, Timestamp};
use rusqlite::{Connection, params};
use switchboard_audit::{
    ActionEvent, AuditAction, AuditQuery, AuditRecord, AuditStore, Digest, Outcome,
};
use switchboard_audit_sqlite::{APPLICATION_ID, SCHEMA_VERSION, SqliteAuditStore};
use switchboard_core::{ActionId, Category, ErrorKind, Initiator, OrgId};

/// Schema version 2, as released: migrations 1 and 2 of that build, verbatim.
const VERSION_2: &str = "
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
    ALTER TABLE audit_records ADD COLUMN action_id TEXT;
    ALTER TABLE audit_records ADD COLUMN action_event TEXT;
";

/// How many records the old file holds before some are deleted: more than two of the
/// migration's 1,024-record batches.
const OLD_RECORDS: u64 = 2_600;

const TOOLS: [&str; 3] = [
    "roster_list_shifts",
    "core_get_current_user",
    "outil é ' \"",
];

fn base() -> Timestamp {
    Timestamp::constant(1_795_000_000, 0)
}

/// The `n`th old record (ids start at 1): every field varies, and every 37th record's call
/// started long before its neighbours', so timestamps are not in id order.
fn old_record(n: u64) -> AuditRecord {
    let late = if n.is_multiple_of(37) { -7_200 } else { 0 };
    let outcome = match n % 11 {
        0 => Outcome::Error(ErrorKind::Timeout),
        1 => Outcome::Error(ErrorKind::PermissionDenied),
        _ => Outcome::Ok,
    };
    AuditRecord {
        id: n,
        timestamp: base()
            + SignedDuration::new(n as i64 + late, (n * 7_919 % 1_000_000_000) as i32),
        tool: TOOLS[(n % 3) as usize].into(),
        domain: (!n.is_multiple_of(5)).then(|| "roster".into()),
        category: (!n.is_multiple_of(6)).then(|| Category::ALL[(n % 4) as usize]),
        org_id: match n % 4 {
            0 => None,
            1 => Some(OrgId::from("acme")),
            2 => Some(OrgId::from("globex")),
            _ => Some(OrgId::from("")),
        },
        user_id: (!n.is_multiple_of(7)).then(|| format!("user-{}", n % 5).into()),
        session_id: Some(format!("session-{}", n / 50).into()),
        correlation_id: (!n.is_multiple_of(9)).then(|| format!("corr-{}", n / 3).into()),
        initiator: if n.is_multiple_of(2) {
            Initiator::Human
        } else {
            Initiator::Agent
        },
        input_hash: Some(Digest([(n % 251) as u8; 32])),
        output_hash: (!n.is_multiple_of(10)).then_some(Digest([(n % 13) as u8; 32])),
        digest_error: None,
        duration_us: if n == 5 { u64::MAX } else { n * 31 },
        outcome,
        action: (n.is_multiple_of(8)).then(|| {
            AuditAction::new(
                ActionId::from(format!("action-{n}").as_str()),
                ActionEvent::Executed,
            )
        }),
    }
}

/// Writes `records` as the previous build did, then deletes some: a gap in the middle, and
/// the newest three (so the old `AUTOINCREMENT` counter is above the highest id left).
fn write_version_2(path: &Path, records: &[AuditRecord], deleted: &[u64]) {
    let mut connection = Connection::open(path).expect("plain SQLite creates the file");
    connection
        .pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))
        .expect("WAL");
    connection
        .execute_batch(VERSION_2)
        .expect("the version 2 schema");
    connection
        .pragma_update(None, "application_id", APPLICATION_ID)
        .expect("application id");
    connection
        .pragma_update(None, "user_version", 2)
        .expect("schema version 2");
    let transaction = connection.transaction().expect("a transaction");
    {
        let mut insert = transaction
            .prepare(
                "INSERT INTO audit_records (timestamp_ns, tool, domain, category, org_id, \
                 user_id, session_id, correlation_id, initiator, input_hash, output_hash, \
                 duration_us, outcome, action_id, action_event) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )
            .expect("the version 2 insert");
        for record in records {
            let id = insert
                .insert(params![
                    i64::try_from(record.timestamp.as_nanosecond()).expect("in range"),
                    &*record.tool,
                    record.domain.as_deref(),
                    record.category.map(Category::as_str),
                    record.org_id.as_ref().map(OrgId::as_str),
                    record.user_id.as_ref().map(|id| id.as_str()),
                    record.session_id.as_ref().map(|id| id.as_str()),
                    record.correlation_id.as_ref().map(|id| id.as_str()),
                    record.initiator.as_str(),
                    record.input_hash.map(|digest| digest.0),
                    record.output_hash.map(|digest| digest.0),
                    record.duration_us as i64,
                    record.outcome.as_str(),
                    record.action.as_ref().map(|action| action.id.as_str()),
                    record.action.as_ref().map(|action| action.event.as_str()),
                ])
                .expect("a version 2 row");
            assert_eq!(
                id.unsigned_abs(),
                record.id,
                "ids are given in order from 1"
            );
        }
        let mut delete = transaction
            .prepare("DELETE FROM audit_records WHERE id = ?1")
            .expect("delete");
        for id in deleted {
            delete.execute([*id as i64]).expect("deleted");
        }
    }
    transaction.commit().expect("committed");
}

/// What the store must answer: the matching records, newest first, at most `limit`.
fn expected(records: &[AuditRecord], query: &AuditQuery) -> Vec<AuditRecord> {
    records
        .iter()
        .rev()
        .filter(|record| query.matches(record))
        .take(query.limit.unwrap_or(usize::MAX))
        .cloned()
        .collect()
}

fn at(seconds: i64) -> Timestamp {
    base() + SignedDuration::from_secs(seconds)
}

/// Queries over every filter the store has a structure for, and a few combinations.
fn questions() -> Vec<AuditQuery> {
    let mut questions = vec![
        AuditQuery::all(),
        AuditQuery::all().limit(25),
        AuditQuery::correlation("corr-100"),
        AuditQuery::correlation("corr-866").org("globex"),
        AuditQuery::all().between(at(-7_000), at(300)),
        AuditQuery::all().between(at(1_000), at(1_200)),
        AuditQuery {
            since: Some(at(2_500)),
            ..AuditQuery::all()
        },
        AuditQuery {
            until: Some(at(40)),
            ..AuditQuery::all()
        },
        AuditQuery {
            before_id: Some(1_500),
            ..AuditQuery::all().limit(40)
        },
        AuditQuery {
            user_id: Some("user-3".into()),
            ..AuditQuery::all().limit(30)
        },
    ];
    for org in ["acme", "globex", "", "nobody"] {
        questions.push(AuditQuery::all().org(org));
        questions.push(AuditQuery::all().org(org).tool(TOOLS[2]).limit(9));
        questions.push(AuditQuery::all().org(org).between(at(500), at(2_000)));
        questions.push(AuditQuery {
            before_id: Some(1_100),
            ..AuditQuery::all().org(org).limit(17)
        });
    }
    for tool in TOOLS {
        questions.push(AuditQuery::all().tool(tool));
        questions.push(AuditQuery::all().tool(tool).between(at(1_000), at(1_100)));
    }
    for outcome in [
        Outcome::Ok,
        Outcome::Error(ErrorKind::Timeout),
        Outcome::Error(ErrorKind::PermissionDenied),
        Outcome::Error(ErrorKind::Cancelled),
    ] {
        questions.push(AuditQuery {
            outcome: Some(outcome),
            ..AuditQuery::all()
        });
    }
    questions
}

fn ensure_answers(store: &SqliteAuditStore, records: &[AuditRecord]) {
    for question in questions() {
        let got = store.query(&question).expect("the query runs");
        assert!(
            got == expected(records, &question),
            "{question:?} returned ids {:?}, expected {:?}",
            got.iter().map(|record| record.id).collect::<Vec<_>>(),
            expected(records, &question)
                .iter()
                .map(|record| record.id)
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_version_2_database_migrates_with_every_record_intact() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.db");
    let written: Vec<AuditRecord> = (1..=OLD_RECORDS).map(old_record).collect();
    let deleted: Vec<u64> = (1_000..1_010)
        .chain(OLD_RECORDS - 2..=OLD_RECORDS)
        .collect();
    write_version_2(&path, &written, &deleted);
    let mut records: Vec<AuditRecord> = written
        .into_iter()
        .filter(|record| !deleted.contains(&record.id))
        .collect();

    let store = SqliteAuditStore::open(&path).expect("the version 2 file opens");
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    assert_eq!(store.stats().held, records.len() as u64);
    ensure_answers(&store, &records);

    // New records follow the highest id ever given, not the highest left.
    let mut new: Vec<AuditRecord> = (0..50)
        .map(|n| AuditRecord {
            id: 0,
            timestamp: at(3_000 + n),
            ..old_record(n as u64 + 1)
        })
        .collect();
    store
        .append_batch(&mut new)
        .expect("appends after migrating");
    assert_eq!(new[0].id, OLD_RECORDS + 1, "ids are never reused");
    records.extend(new);
    ensure_answers(&store, &records);

    // Retention deletes the oldest old records, and queries still agree.
    let deleted = store.delete_before(at(1_500), 700).expect("retention runs");
    assert_eq!(deleted, 700);
    let mut left = 700;
    records.retain(|record| {
        let expire = left > 0 && record.timestamp < at(1_500);
        left -= usize::from(expire);
        !expire
    });
    ensure_answers(&store, &records);
    drop(store);

    let connection = Connection::open(&path).expect("plain SQLite opens it");
    let integrity: String = connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("integrity_check");
    assert_eq!(integrity, "ok");
    let old_indexes: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name IN ('audit_records_by_org', \
             'audit_records_by_tool', 'audit_records_by_time')",
            [],
            |row| row.get(0),
        )
        .expect("the schema");
    assert_eq!(
        old_indexes, 0,
        "the per-record org, tool and time indexes are gone"
    );
}

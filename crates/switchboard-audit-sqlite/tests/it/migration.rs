//! Databases of earlier schema versions open with this build, migrate, and keep every record:
//! each reads back unchanged under its old id, every query finds what it found before, new
//! records get ids above the highest ever given, and retention works across old and new
//! records.
//!
//! Two kinds of old file:
//!
//! - a large version 2 file, made here with plain SQLite from the statements that build
//!   released (frozen below), with thousands of records whose every field varies;
//! - a small version 5 file (the last without `asks`), made here the same way from the shape
//!   that version left;
//! - a small file of each earlier version (1, 2 and 3) written by the real `switchboard` CLI of
//!   that version, with that build's own export of its records beside it (`tests/it/fixtures`,
//!   whose README says how they were made).

use std::path::Path;

use jiff::{SignedDuration, Timestamp};
use rusqlite::{Connection, params};
use switchboard_audit::{
    ActionEvent, AuditAction, AuditQuery, AuditRecord, AuditStore, Digest, Outcome,
};
use switchboard_audit_sqlite::{APPLICATION_ID, SCHEMA_VERSION, SqliteAuditStore};
use switchboard_core::{
    ActionId, Category, ErrorKind, Initiator, OrgId,
    ask::{AskKind, AskOutcome, AskRecord},
};

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
        asks: Vec::new(),
        switch: None,
        node: None,
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
                    record
                        .input_hash
                        .expect("every old record has an input digest")
                        .0,
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
            node: None,
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
    assert_eq!(schema_objects(&connection), CURRENT_OBJECTS);
}

/// The tables and indexes of the current schema, by name.
const CURRENT_OBJECTS: [&str; 6] = [
    "table audit_records",
    "index audit_records_by_correlation",
    "index audit_records_by_org",
    "index audit_records_by_outcome",
    "index audit_records_by_time",
    "index audit_records_by_tool",
];

/// Every table and index of the database (`type name`), SQLite's own left out.
fn schema_objects(connection: &Connection) -> Vec<String> {
    connection
        .prepare(
            "SELECT type || ' ' || name FROM sqlite_schema \
             WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .expect("prepares")
        .query_map([], |row| row.get(0))
        .expect("reads the schema")
        .collect::<Result<_, _>>()
        .expect("reads the schema")
}

/// A fixture database of schema `version`, copied into a new temporary directory (the
/// migration rewrites it), and its records as that build exported them, newest first.
fn fixture(
    version: i64,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Vec<serde_json::Value>,
) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.db");
    std::fs::copy(fixtures.join(format!("audit-v{version}.db")), &path)
        .expect("the fixture copies");
    let export = std::fs::read_to_string(fixtures.join(format!("audit-v{version}.jsonl")))
        .expect("the fixture's export reads");
    let exported = export
        .lines()
        .map(|line| serde_json::from_str(line).expect("an exported record is JSON"))
        .collect();
    (dir, path, exported)
}

fn as_json(records: &[AuditRecord]) -> Vec<serde_json::Value> {
    records
        .iter()
        .map(|record| serde_json::to_value(record).expect("a record serializes"))
        .collect()
}

/// One query per value each filter takes in `records`, and a few combinations, cursors,
/// limits and time ranges.
fn questions_about(records: &[AuditRecord]) -> Vec<AuditQuery> {
    let mut questions = vec![AuditQuery::all(), AuditQuery::all().limit(3)];
    for record in records {
        if let Some(correlation_id) = &record.correlation_id {
            questions.push(AuditQuery::correlation(correlation_id.clone()));
        }
        questions.push(AuditQuery::all().tool(&*record.tool));
        questions.push(AuditQuery {
            user_id: record.user_id.clone(),
            ..AuditQuery::all()
        });
        questions.push(AuditQuery {
            outcome: Some(record.outcome),
            ..AuditQuery::all()
        });
        if let Some(org_id) = &record.org_id {
            questions.push(AuditQuery::all().org(org_id.clone()));
            questions.push(AuditQuery::all().org(org_id.clone()).tool(&*record.tool));
            questions.push(AuditQuery {
                outcome: Some(record.outcome),
                ..AuditQuery::all().org(org_id.clone()).limit(2)
            });
        }
        questions.push(AuditQuery {
            before_id: Some(record.id),
            ..AuditQuery::all().limit(4)
        });
        questions.push(AuditQuery {
            since: Some(record.timestamp),
            ..AuditQuery::all()
        });
        questions.push(AuditQuery {
            until: Some(record.timestamp),
            ..AuditQuery::all()
        });
        questions.push(AuditQuery::all().between(
            record.timestamp,
            record.timestamp + SignedDuration::from_millis(1),
        ));
    }
    questions
}

/// The fixture of `version` migrates with every record intact, answers every query as the
/// records say it should, and takes new records after its highest id.
fn upgrade_from_fixture(version: i64) {
    let (_dir, path, exported) = fixture(version);
    let store = SqliteAuditStore::open(&path).expect("the fixture opens and migrates");
    assert_eq!(store.schema_version(), SCHEMA_VERSION);

    let mut records = store.query(&AuditQuery::all()).expect("every record reads");
    assert_eq!(
        as_json(&records),
        exported,
        "version {version}: every record, with its id and every field, in the same order"
    );
    assert_eq!(store.stats().held, records.len() as u64);
    records.reverse();
    for question in questions_about(&records) {
        let got = store.query(&question).expect("the query runs");
        assert!(
            got == expected(&records, &question),
            "version {version}: {question:?} returned ids {:?}, expected {:?}",
            got.iter().map(|record| record.id).collect::<Vec<_>>(),
            expected(&records, &question)
                .iter()
                .map(|record| record.id)
                .collect::<Vec<_>>()
        );
    }

    let highest = records
        .iter()
        .map(|record| record.id)
        .max()
        .expect("records");
    let mut new: Vec<AuditRecord> = records
        .iter()
        .take(3)
        .map(|record| AuditRecord {
            node: None,
            id: 0,
            ..record.clone()
        })
        .collect();
    store
        .append_batch(&mut new)
        .expect("appends after migrating");
    let ids: Vec<u64> = new.iter().map(|record| record.id).collect();
    assert_eq!(ids, [highest + 1, highest + 2, highest + 3]);
    records.extend(new);
    let mut all = store.query(&AuditQuery::all()).expect("every record reads");
    all.reverse();
    assert_eq!(all, records);
    drop(store);

    let connection = Connection::open(&path).expect("plain SQLite opens it");
    let integrity: String = connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("integrity_check");
    assert_eq!(integrity, "ok");
    assert_eq!(schema_objects(&connection), CURRENT_OBJECTS);
}

/// What the fixtures hold, so that they keep covering what the upgrade must carry: several
/// orgs and tools, records without an org, refusals and, from version 2, actions.
fn ensure_fixture_covers(version: i64) {
    let (_dir, _path, exported) = fixture(version);
    let strings = |field: &str| -> std::collections::BTreeSet<String> {
        exported
            .iter()
            .map(|record| record[field].as_str().unwrap_or("(none)").to_owned())
            .collect()
    };
    assert!(
        strings("org_id").len() >= 3,
        "orgs: {:?}",
        strings("org_id")
    );
    assert!(strings("org_id").contains("(none)"));
    assert!(strings("tool").len() >= 3, "tools: {:?}", strings("tool"));
    assert!(
        strings("outcome").len() >= 3,
        "outcomes: {:?}",
        strings("outcome")
    );
    if version >= 2 {
        assert!(exported.iter().any(|record| record["action"].is_object()));
    }
}

#[test]
fn a_version_1_file_written_by_the_version_1_cli_upgrades() {
    ensure_fixture_covers(1);
    upgrade_from_fixture(1);
}

#[test]
fn a_version_2_file_written_by_the_version_2_cli_upgrades() {
    ensure_fixture_covers(2);
    upgrade_from_fixture(2);
}

#[test]
fn a_version_3_file_written_by_the_version_3_cli_upgrades() {
    ensure_fixture_covers(3);
    upgrade_from_fixture(3);
}

/// Schema version 5, as released: the table and indexes migrations 1 to 5 leave, the last
/// shape without `asks`.
const VERSION_5: &str = "
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
        action_event   TEXT,
        node           TEXT
    ) STRICT;
    CREATE INDEX audit_records_by_correlation ON audit_records (correlation_id);
    CREATE INDEX audit_records_by_org ON audit_records (org_id);
    CREATE INDEX audit_records_by_tool ON audit_records (tool);
    CREATE INDEX audit_records_by_outcome ON audit_records (outcome);
    CREATE INDEX audit_records_by_time ON audit_records (timestamp_ns);
";

/// Writes `records` into a new version 5 file at `path`, as that build did.
fn write_version_5(path: &Path, records: &[AuditRecord]) {
    let connection = Connection::open(path).expect("plain SQLite creates the file");
    connection
        .execute_batch(VERSION_5)
        .expect("the version 5 schema");
    connection
        .pragma_update(None, "application_id", APPLICATION_ID)
        .expect("application id");
    connection
        .pragma_update(None, "user_version", 5)
        .expect("schema version 5");
    let mut insert = connection
        .prepare(
            "INSERT INTO audit_records (timestamp_ns, tool, domain, category, org_id, user_id, \
             session_id, correlation_id, initiator, input_hash, output_hash, digest_error, \
             duration_us, outcome, action_id, action_event, node) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )
        .expect("the version 5 insert");
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
                record.digest_error.as_deref(),
                record.duration_us as i64,
                record.outcome.as_str(),
                record.action.as_ref().map(|action| action.id.as_str()),
                record.action.as_ref().map(|action| action.event.as_str()),
                record.node.as_deref(),
            ])
            .expect("a version 5 row");
        assert_eq!(
            id.unsigned_abs(),
            record.id,
            "ids are given in order from 1"
        );
    }
}

#[test]
fn a_version_5_database_gains_asks_and_its_records_read_back_with_none() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.db");
    let mut records: Vec<AuditRecord> = (1..=6_u64)
        .map(|n| AuditRecord {
            node: n.is_multiple_of(2).then(|| "node-a".into()),
            digest_error: (n == 3).then(|| "output: not JSON".to_owned()),
            output_hash: None,
            ..old_record(n)
        })
        .collect();
    write_version_5(&path, &records);

    let store = SqliteAuditStore::open(&path).expect("the version 5 file opens");
    assert_eq!(store.schema_version(), SCHEMA_VERSION);
    let mut read = store.query(&AuditQuery::all()).expect("every record reads");
    read.reverse();
    assert_eq!(read, records, "every old record, unchanged");
    assert!(read.iter().all(|record| record.asks.is_empty()));

    // A new record keeps its questions; a new one without any has none.
    let asks = vec![
        AskRecord {
            kind: AskKind::Sampling,
            outcome: AskOutcome::Failed,
            error: Some("client_timeout".to_owned()),
            request_hash: Some(Digest([4; 32])),
            answer_hash: None,
            duration_us: 30_000_000,
        },
        AskRecord {
            kind: AskKind::Form,
            outcome: AskOutcome::Accepted,
            error: None,
            request_hash: Some(Digest([5; 32])),
            answer_hash: Some(Digest([6; 32])),
            duration_us: 812,
        },
    ];
    let mut new = vec![
        AuditRecord {
            id: 0,
            asks: asks.clone(),
            ..old_record(7)
        },
        AuditRecord {
            id: 0,
            ..old_record(8)
        },
    ];
    store
        .append_batch(&mut new)
        .expect("appends after migrating");
    records.extend(new);
    let mut read = store.query(&AuditQuery::all()).expect("every record reads");
    read.reverse();
    assert_eq!(read, records);
    assert_eq!(read[6].asks, asks);
    drop(store);

    // In `sqlite3`: `NULL` for every record that asked nothing, a JSON array for the one that
    // did.
    let connection = Connection::open(&path).expect("plain SQLite opens it");
    let columns: Vec<(i64, Option<String>)> = connection
        .prepare("SELECT id, asks FROM audit_records ORDER BY id")
        .expect("prepares")
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("reads")
        .collect::<Result<_, _>>()
        .expect("reads");
    let asked: Vec<i64> = columns
        .iter()
        .filter(|(_, asks)| asks.is_some())
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(asked, [7]);
    let (kinds, error): (String, String) = connection
        .query_row(
            "SELECT (SELECT group_concat(value ->> 'kind') FROM json_each(asks)), \
             asks -> '$[0]' ->> 'error' FROM audit_records WHERE id = 7",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .expect("the column is JSON");
    assert_eq!(
        (kinds.as_str(), error.as_str()),
        ("sampling,form", "client_timeout")
    );
    let version: i64 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .expect("the version reads");
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(schema_objects(&connection), CURRENT_OBJECTS);
}

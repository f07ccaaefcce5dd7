//! Durability: under strict durability, every record whose call was acknowledged is in the file
//! after the process goes away, whether everything is dropped in an orderly way or the process
//! is killed with `SIGKILL` in the middle of a load; and reopening the file migrates nothing.
//!
//! The kill test runs this very test binary a second time as the victim: with
//! [`CHILD_ENV`] set, the test function writes records until it is killed, printing each
//! acknowledged correlation id. The parent kills it mid-load, reopens the file (SQLite recovers
//! from the write-ahead log) and looks for every acknowledged record.

use std::{
    collections::BTreeSet,
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use rusqlite::Connection;
use switchboard_audit::{AuditConfig, AuditLog, AuditQuery, AuditStore, Durability};
use switchboard_audit_sqlite::{SCHEMA_VERSION, SqliteAuditStore};

/// Set (to the database path) in the child process of the kill test.
const CHILD_ENV: &str = "SWITCHBOARD_AUDIT_SQLITE_KILL_CHILD";

fn strict_log(path: &Path) -> AuditLog {
    let store = Arc::new(SqliteAuditStore::open(path).expect("the audit database opens"));
    AuditLog::start(store, AuditConfig::default().durability(Durability::Strict))
        .expect("the audit log starts")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Submits one record and waits for its acknowledgement.
async fn write(log: &AuditLog, correlation_id: &str) {
    log.reserve()
        .await
        .expect("room in the queue")
        .submit(crate::common::record(correlation_id))
        .acknowledged()
        .await
        .expect("the record is acknowledged");
}

/// Checks that the file holds exactly one intact record per acknowledged correlation id, that
/// every row decodes, and that SQLite finds the file intact.
fn ensure_all_present(path: &Path, acknowledged: &BTreeSet<String>) {
    let store = SqliteAuditStore::open(path).expect("the audit database reopens");
    let all = store.query(&AuditQuery::all()).expect("every row decodes");
    assert!(all.len() >= acknowledged.len());
    for correlation_id in acknowledged {
        let found = store
            .query(&AuditQuery::correlation(correlation_id.as_str()))
            .expect("query");
        assert_eq!(
            found.len(),
            1,
            "acknowledged record `{correlation_id}` should be in the file exactly once"
        );
        assert_eq!(
            found[0].input_hash,
            crate::common::correlation_digest(correlation_id)
        );
    }
    drop(store);
    let connection = Connection::open(path).expect("plain SQLite opens the file");
    let integrity: String = connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("integrity_check runs");
    assert_eq!(integrity, "ok");
    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("user_version");
    assert_eq!(version, SCHEMA_VERSION);
}

#[test]
fn strict_records_survive_dropping_everything_and_reopening() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.db");
    let log = strict_log(&path);
    let acknowledged: BTreeSet<String> = runtime().block_on(async {
        let tasks: Vec<_> = (0..4)
            .map(|task| {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut written = Vec::new();
                    for n in 0..50 {
                        let correlation_id = format!("drop-{task}-{n}");
                        write(&log, &correlation_id).await;
                        written.push(correlation_id);
                    }
                    written
                })
            })
            .collect();
        let mut acknowledged = BTreeSet::new();
        for task in tasks {
            acknowledged.extend(task.await.expect("a producer"));
        }
        acknowledged
    });
    // No shutdown, no flush: the log and the store are simply dropped.
    drop(log);
    ensure_all_present(&path, &acknowledged);
    // Reopening again finds the schema current and changes nothing.
    let objects = |path: &Path| -> Vec<String> {
        let connection = Connection::open(path).expect("opens");
        let mut statement = connection
            .prepare("SELECT type || ' ' || name FROM sqlite_schema ORDER BY name")
            .expect("prepares");
        statement
            .query_map([], |row| row.get(0))
            .expect("queries")
            .collect::<Result<_, _>>()
            .expect("reads")
    };
    let before = objects(&path);
    drop(SqliteAuditStore::open(&path).expect("reopens"));
    assert_eq!(objects(&path), before);
    ensure_all_present(&path, &acknowledged);
}

/// The child's side of the kill test: writes under strict durability from several tasks,
/// printing `acked <correlation id>` for each acknowledged record, until killed (or, as a
/// safety net if the parent is gone, for at most a minute).
fn write_until_killed(path: &Path) {
    let log = strict_log(path);
    let deadline = Instant::now() + Duration::from_secs(60);
    runtime().block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|task| {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut n = 0_u64;
                    while Instant::now() < deadline {
                        let correlation_id = format!("kill-{task}-{n}");
                        write(&log, &correlation_id).await;
                        let mut stdout = std::io::stdout().lock();
                        writeln!(stdout, "acked {correlation_id}")
                            .and_then(|()| stdout.flush())
                            .expect("the parent reads our output");
                        n += 1;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a producer");
        }
    });
}

#[test]
fn strict_acknowledged_records_survive_sigkill() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        write_until_killed(Path::new(&path));
        return;
    }
    const ACKNOWLEDGED_BEFORE_THE_KILL: usize = 2_000;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("audit.db");
    let child_errors = dir.path().join("child.stderr");
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "durability::strict_acknowledged_records_survive_sigkill",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&child_errors).expect("a file for the child's stderr"))
        .spawn()
        .expect("the child test process starts");
    let stdout = child.stdout.take().expect("the child's stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acknowledged = BTreeSet::new();
    while acknowledged.len() < ACKNOWLEDGED_BEFORE_THE_KILL {
        let Some(line) = lines.next() else {
            let _ = child.kill();
            panic!(
                "the child stopped after {} acknowledgements; its stderr:\n{}",
                acknowledged.len(),
                std::fs::read_to_string(&child_errors).unwrap_or_default()
            );
        };
        let line = line.expect("the child's output is text");
        if let Some(correlation_id) = line.strip_prefix("acked ") {
            acknowledged.insert(correlation_id.to_owned());
        }
    }
    // `Child::kill` is SIGKILL on Unix: no destructor, no checkpoint, no flush runs.
    child.kill().expect("the child is killed");
    let status = child.wait().expect("the child is reaped");
    assert!(!status.success(), "the child was killed, not finished");
    // Whatever the child printed before it died was acknowledged too.
    for line in lines {
        let Ok(line) = line else { break };
        if let Some(correlation_id) = line.strip_prefix("acked ") {
            acknowledged.insert(correlation_id.to_owned());
        }
    }
    ensure_all_present(&path, &acknowledged);
}

//! Crash durability of the SQLite audit store, end to end: the real binary serves MCP on stdio
//! with `--audit sqlite:PATH` (strict durability, the default for SQLite), the test pipelines
//! calls into it, kills it with SIGKILL while calls are still in flight, then starts the binary
//! again on the same file and checks that every call the client saw answered has its record,
//! and that every record reads back whole.
//!
//! Each call carries its own `_meta.traceparent`, which the server uses as the call's
//! correlation id, so an answer can be matched to its record.

use crate::common::{ACME_ADMIN, bounded, exit_of, switchboard};
use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// Calls sent in total; the kill comes after [`KILL_AFTER`] answers, well before the end.
const CALLS: u64 = 3_000;
const KILL_AFTER: usize = 400;

/// A fresh directory for this test's database.
fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "switchboard-durability-{}-{}",
        std::process::id(),
        nanos_now()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn nanos_now() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos())
}

/// A valid W3C `traceparent` per call (an all-zero trace-id would be ignored, hence `+ 1`).
fn traceparent(call: u64) -> String {
    format!("00-{:032x}-{:016x}-01", call + 1, call + 1)
}

/// Every record in the store, read by a new process (`switchboard audit export`).
async fn exported(database: &Path) -> Vec<Value> {
    let store = format!("sqlite:{}", database.display());
    let output = bounded(
        "audit export",
        switchboard(&["audit", "export", "--audit", &store]).output(),
    )
    .await
    .expect("the binary runs");
    assert!(
        output.status.success(),
        "audit export failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("the export is UTF-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("every exported line is a whole record"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_answered_before_a_sigkill_has_its_record_after_restart() {
    let dir = scratch_dir();
    let database = dir.join("audit.db");
    let store = format!("sqlite:{}", database.display());
    let mut child = switchboard(&[
        "serve", "--stdio", "--audit", &store, "--org", "acme", "--user", "alice", "--role",
        "admin",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("the binary starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();

    let initialize = json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "durability-test", "version": "0"}
        }
    });
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .expect("send initialize");
    let answer = bounded("initialize", lines.next_line())
        .await
        .expect("read")
        .expect("an answer");
    assert!(answer.contains("\"init\""), "{answer}");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .expect("send initialized");

    // Pipeline every call; the server answers them as they complete.
    let sender = tokio::spawn(async move {
        for call in 0..CALLS {
            let request = json!({
                "jsonrpc": "2.0", "id": call, "method": "tools/call",
                "params": {
                    "name": "core_get_current_user",
                    "arguments": {},
                    "_meta": {"traceparent": traceparent(call)}
                }
            });
            if stdin
                .write_all(format!("{request}\n").as_bytes())
                .await
                .is_err()
            {
                break; // The server was killed.
            }
        }
        stdin
    });

    let mut acknowledged = BTreeSet::new();
    let mut killed = false;
    let record = |line: &str, acknowledged: &mut BTreeSet<String>| {
        let answer: Value = serde_json::from_str(line).expect("answers are JSON");
        if answer["result"]["isError"] == json!(false)
            && let Some(call) = answer["id"].as_u64()
        {
            acknowledged.insert(traceparent(call));
        }
    };
    while let Some(line) = bounded("an answer", lines.next_line())
        .await
        .expect("read stdout")
    {
        record(&line, &mut acknowledged);
        if !killed && acknowledged.len() >= KILL_AFTER {
            // Catch up with the server first: the answers read last are then the newest, whose
            // records are the least likely to be on disk unless durability really is strict.
            while let Ok(Ok(Some(line))) =
                tokio::time::timeout(Duration::from_millis(2), lines.next_line()).await
            {
                record(&line, &mut acknowledged);
            }
            // SIGKILL: no destructor, no flush, no goodbye. Answers already in the pipe still
            // count as acknowledged.
            child.start_kill().expect("kill the server");
            killed = true;
        }
    }
    assert!(killed, "the server answered fewer than {KILL_AFTER} calls");
    let status = exit_of("the kill", &mut child).await;
    assert!(!status.success(), "the server was killed, not stopped");
    drop(sender);
    assert!(
        (acknowledged.len() as u64) < CALLS,
        "the kill came mid-load: {} of {CALLS} answered",
        acknowledged.len()
    );

    // Start the binary again on the same file.
    let records = exported(&database).await;
    let stored: BTreeSet<String> = records
        .iter()
        .filter_map(|record| record["correlation_id"].as_str().map(str::to_owned))
        .collect();
    let missing: Vec<&String> = acknowledged.difference(&stored).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged calls have no record after the crash, e.g. {:?}",
        missing.len(),
        missing.first()
    );
    for record in &records {
        assert_eq!(record["tool"], "core_get_current_user", "{record}");
        assert_eq!(record["org_id"], "acme", "{record}");
        assert!(record["id"].as_u64().is_some(), "{record}");
        assert_eq!(
            record["input_hash"].as_str().map(str::len),
            Some(64),
            "{record}"
        );
    }
    // No record twice.
    assert_eq!(stored.len(), records.len());

    // The restarted binary serves and audits on the same file.
    let after = bounded(
        "a call after the restart",
        switchboard(&["call", "core_get_current_user", "--audit", &store])
            .args(ACME_ADMIN)
            .args(["--correlation", "after-restart", "--json"])
            .output(),
    )
    .await
    .expect("the binary runs");
    assert!(
        after.status.success(),
        "{}",
        String::from_utf8_lossy(&after.stderr)
    );
    let listed = bounded(
        "audit --correlation",
        switchboard(&[
            "audit",
            "--audit",
            &store,
            "--correlation",
            "after-restart",
            "--json",
        ])
        .output(),
    )
    .await
    .expect("the binary runs");
    let listed: Value = serde_json::from_slice(&listed.stdout).expect("a JSON array");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_corrupt_database_is_a_clear_startup_error_not_a_fallback() {
    let dir = scratch_dir();
    let database = dir.join("corrupt.db");
    std::fs::write(
        &database,
        b"this is not a SQLite database, just bytes".repeat(200),
    )
    .expect("write garbage");
    let store = format!("sqlite:{}", database.display());
    let output = bounded(
        "a call on a corrupt store",
        switchboard(&[
            "call",
            "core_get_current_user",
            "--audit",
            &store,
            "--org",
            "acme",
            "--user",
            "alice",
        ])
        .output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2), "a usage error, not a crash");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("corrupt.db"), "names the file: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing ran: {:?}", output.stdout);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn audit_refuses_the_in_memory_store_with_a_hint() {
    let output = bounded(
        "audit on memory",
        switchboard(&["audit", "--audit", "memory"]).output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("state directory's audit.db"), "{stderr}");
    assert!(stderr.contains("--audit sqlite:PATH"), "{stderr}");
}

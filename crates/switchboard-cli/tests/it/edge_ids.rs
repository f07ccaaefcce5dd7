//! Client-chosen ids at the edges, end to end with the real binary: what a client may name a
//! call by, and what a person sees of stored values.
//!
//! - Over `serve --stdio`, a `tools/call`'s `_meta.traceparent` becomes the call's correlation
//!   id only if it is a valid W3C `traceparent`; anything else (empty, a newline, an escape
//!   sequence, a megabyte, upper case, version `ff`) is ignored and the call gets a minted id,
//!   as the audit store then shows.
//! - A flag naming an id (`--correlation`, `--session`, `--thread`, …) that is not one is a
//!   usage error (exit 2) naming the flag, before anything runs.
//! - `switchboard audit` prints one line per record whatever an SQLite audit file already holds
//!   (here: control characters and escape sequences in every string field, written through the
//!   store's public API as an older version or another program could have), with no raw
//!   control byte but the line ends, and with its own colouring intact.
//!
//! Every wait is bounded by `common::LIMIT`, and children are killed on drop.

use crate::{
    common::{ACME_ADMIN, bounded, switchboard},
    stdio_client::StdioServer,
};
use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    process::Output,
    sync::Arc,
};

use jiff::Timestamp;
use serde_json::{Value, json};
use switchboard::{
    ActionId, Category, CorrelationId, ErrorKind, Initiator, OrgId, SessionId, UserId,
    audit::{ActionEvent, AuditAction, AuditRecord, AuditStore as _, Digest, Outcome},
};
use switchboard_audit_sqlite::SqliteAuditStore;

/// The W3C Trace Context specification's example `traceparent` (section 3.2.2.5).
const GOOD_TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A fresh directory for one test's files.
fn scratch_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "switchboard-edge-ids-{name}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Every record of the SQLite store at `database`, as `audit export` prints them.
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
        .map(|line| serde_json::from_str(line).expect("every exported line is a record"))
        .collect()
}

/// Whether `id` is an id the MCP server minted: `mcp-` and a hyphenated UUID.
fn is_minted(id: &str) -> bool {
    id.strip_prefix("mcp-").is_some_and(|uuid| {
        uuid.len() == 36
            && uuid.bytes().enumerate().all(|(index, byte)| match index {
                8 | 13 | 18 | 23 => byte == b'-',
                _ => byte.is_ascii_hexdigit(),
            })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_valid_traceparent_becomes_the_correlation_id() {
    let dir = scratch_dir("traceparent");
    let database = dir.join("audit.db");
    let store = format!("sqlite:{}", database.display());
    let mut server = StdioServer::start(&["--audit", &store]);
    server.initialize().await;

    let bad_traceparents = [
        String::new(),
        "x".repeat(1 << 20),
        format!("{GOOD_TRACEPARENT}\n42  forged"),
        format!("\u{1b}[2J{GOOD_TRACEPARENT}"),
        GOOD_TRACEPARENT.to_uppercase(),
        GOOD_TRACEPARENT.replacen("00", "ff", 1),
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01".to_owned(),
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01".to_owned(),
    ];
    let traceparents: Vec<&str> = std::iter::once(GOOD_TRACEPARENT)
        .chain(bad_traceparents.iter().map(String::as_str))
        .collect();
    for (index, traceparent) in traceparents.iter().enumerate() {
        let request = json!({
            "jsonrpc": "2.0", "id": index, "method": "tools/call",
            "params": {
                "name": "core_get_current_user",
                "arguments": {},
                "_meta": {"traceparent": traceparent}
            }
        });
        server.send(&request.to_string()).await;
    }
    let mut answered = BTreeSet::new();
    while answered.len() < traceparents.len() {
        let answer = server.next_answer_or_request().await;
        assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
        answered.insert(answer["id"].as_u64().expect("a numeric id"));
    }
    // Closing stdin ends the server, after its audit records are on disk.
    server.finish().await;

    let records = exported(&database).await;
    assert_eq!(records.len(), traceparents.len(), "one record per call");
    let correlation_ids: Vec<&str> = records
        .iter()
        .map(|record| record["correlation_id"].as_str().expect("a correlation id"))
        .collect();
    let kept: Vec<&&str> = correlation_ids
        .iter()
        .filter(|id| **id == GOOD_TRACEPARENT)
        .collect();
    assert_eq!(
        kept.len(),
        1,
        "the valid traceparent is kept: {correlation_ids:?}"
    );
    let minted: BTreeSet<&&str> = correlation_ids
        .iter()
        .filter(|id| **id != GOOD_TRACEPARENT)
        .collect();
    assert_eq!(
        minted.len(),
        bad_traceparents.len(),
        "every invalid traceparent got its own id: {correlation_ids:?}"
    );
    for id in minted {
        assert!(is_minted(id), "{:?}", id.get(..80).unwrap_or(id));
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs `switchboard ARGS` to the end.
async fn run(what: &str, args: &[&str]) -> Output {
    bounded(what, switchboard(args).output())
        .await
        .expect("the binary runs")
}

/// Whether `text` holds a control character other than a line end.
fn has_raw_control(text: &str) -> bool {
    text.chars()
        .any(|character| character.is_control() && character != '\n')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flag_naming_an_id_that_is_not_one_is_a_usage_error() {
    let identity = ["--org", "acme", "--user", "alice", "--role", "admin"];
    let too_long = "x".repeat(129);
    for (flag, value) in [
        ("--correlation", "c1\n42  forged"),
        ("--session", "\u{1b}[2Jwiped"),
        ("--thread", "a thread"),
        ("--project", too_long.as_str()),
        ("--idempotency-key", "k\u{85}1"),
        ("--agent-type", "plan\rner"),
    ] {
        let mut args = vec!["call", "core_get_current_user"];
        args.extend(identity);
        args.extend([flag, value]);
        let output = run(flag, &args).await;
        let stderr = String::from_utf8(output.stderr).expect("UTF-8");
        assert_eq!(output.status.code(), Some(2), "{flag}: {stderr}");
        assert!(output.stdout.is_empty(), "{flag}: nothing ran");
        assert!(stderr.contains(flag), "{flag}: {stderr}");
        assert!(stderr.contains("is not an id"), "{flag}: {stderr}");
        assert!(!has_raw_control(&stderr), "{flag}: {stderr:?}");
    }
    // The same check guards the other commands that take identity flags, and `serve`.
    for args in [
        &["ask", "who am i", "--correlation", "a b"][..],
        &["proposals", "--thread", "t\n1"],
        &[
            "serve",
            "--stdio",
            "--org",
            "acme",
            "--user",
            "alice",
            "--agent-type",
            "a b",
        ],
    ] {
        let output = run(args[0], args).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(output.stderr).expect("UTF-8");
        assert!(stderr.contains("is not an id"), "{args:?}: {stderr}");
        assert!(!has_raw_control(&stderr), "{args:?}: {stderr:?}");
    }
    // A valid id is used as given.
    let output = run(
        "a good correlation id",
        &[
            &["call", "core_get_current_user"][..],
            &ACME_ADMIN,
            &["--correlation", "c-1:ok.2", "--json"],
        ]
        .concat(),
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["audit"][0]["correlation_id"], "c-1:ok.2", "{report}");
}

/// A record whose every string field carries `hostile`, told apart by `index`.
fn hostile_record(index: u64, hostile: &str) -> AuditRecord {
    let text = |field: &str| format!("{field}{index}{hostile}end");
    AuditRecord {
        asks: Vec::new(),
        switch: None,
        node: None,
        id: 0,
        timestamp: Timestamp::now(),
        tool: Arc::from(text("tool")),
        domain: Some(Arc::from(text("domain"))),
        category: Some(Category::Read),
        org_id: Some(OrgId::from(text("org"))),
        user_id: Some(UserId::from(text("user"))),
        session_id: Some(SessionId::from(text("session"))),
        correlation_id: Some(CorrelationId::from(text("correlation"))),
        initiator: Initiator::Agent,
        input_hash: Some(Digest([7; 32])),
        output_hash: None,
        digest_error: None,
        duration_us: 1_500,
        outcome: if index.is_multiple_of(2) {
            Outcome::Ok
        } else {
            Outcome::Error(ErrorKind::PermissionDenied)
        },
        action: Some(AuditAction::new(
            ActionId::from(text("action")),
            ActionEvent::Executed,
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_table_prints_one_line_per_record_whatever_the_store_holds() {
    let dir = scratch_dir("audit-table");
    let database = dir.join("audit.db");
    let hostile = [
        "\n42  2026-01-01T00:00:00.000Z  forged_row  ok  acme  alice  human  1 µs  c-1",
        "\r\u{1b}[2K\u{1b}[31moverwritten\u{1b}[0m",
        "\t\u{0}\u{7}\u{7f}",
        "\u{85}\u{9b}31m\u{2028}\u{202e}",
    ];
    let mut records: Vec<AuditRecord> = hostile
        .iter()
        .enumerate()
        .map(|(index, text)| hostile_record(index as u64, text))
        .collect();
    {
        let store = SqliteAuditStore::open(&database).expect("a new audit file");
        store.append_batch(&mut records).expect("records written");
    }

    let store = format!("sqlite:{}", database.display());
    let output = run("audit", &["audit", "--audit", &store]).await;
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(!has_raw_control(&table), "{table:?}");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines.len(),
        1 + hostile.len(),
        "a header and one line per record:\n{table}"
    );
    assert!(lines[0].starts_with("ID"), "{table}");
    assert!(!table.contains("\nforged_row"), "{table}");
    for index in 0..hostile.len() {
        let line = lines
            .iter()
            .find(|line| line.contains(&format!("tool{index}")))
            .unwrap_or_else(|| panic!("record {index} has a line:\n{table}"));
        for field in ["org", "user", "correlation"] {
            assert!(line.contains(&format!("{field}{index}")), "{field}: {line}");
        }
    }
    assert!(table.contains("\\n42  2026-01-01"), "{table}");
    assert!(
        table.contains("\\r\\u{1b}[2K\\u{1b}[31moverwritten"),
        "{table}"
    );
    assert!(table.contains("\\t\\0\\u{7}\\u{7f}"), "{table}");
    assert!(
        table.contains("\\u{85}\\u{9b}31m\\u{2028}\\u{202e}"),
        "{table}"
    );

    // Our own colours survive; only they reach the terminal as escape sequences.
    let mut colored = switchboard(&["audit", "--audit", &store]);
    colored.env("FORCE_COLOR", "1").env_remove("NO_COLOR");
    let output = bounded("audit, coloured", colored.output())
        .await
        .expect("the binary runs");
    let table = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(table.contains("\u{1b}["), "coloured: {table:?}");
    let uncoloured = strip_sgr(&table);
    assert!(!has_raw_control(&uncoloured), "{uncoloured:?}");
    assert_eq!(
        uncoloured.lines().count(),
        1 + hostile.len(),
        "{uncoloured}"
    );

    // `--json` stays exact: the values come back as stored.
    let output = run("audit --json", &["audit", "--audit", &store, "--json"]).await;
    let listed: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let correlations: BTreeSet<&str> = listed
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|record| record["correlation_id"].as_str())
        .collect();
    let stored: BTreeSet<String> = (0..hostile.len())
        .map(|index| format!("correlation{index}{}end", hostile[index]))
        .collect();
    assert_eq!(
        correlations,
        stored.iter().map(String::as_str).collect::<BTreeSet<_>>()
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `text` without its SGR sequences (`ESC [ digits ; … m`), the only ones the CLI writes.
fn strip_sgr(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("\u{1b}[") {
        plain.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find(|character: char| !(character.is_ascii_digit() || character == ';'))
            .unwrap_or(after.len());
        if after[end..].starts_with('m') {
            rest = &after[end + 1..];
        } else {
            // Not ours: keep it, so the caller sees it.
            plain.push_str(&rest[start..start + 2]);
            rest = after;
        }
    }
    plain.push_str(rest);
    plain
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_escape_what_the_user_typed() {
    let output = run(
        "a call of a hostile tool name",
        &[
            "call",
            "no\u{1b}[2J\nsuch_tool",
            "--org",
            "acme",
            "--user",
            "alice",
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8(output.stderr).expect("UTF-8");
    assert!(!has_raw_control(&stderr), "{stderr:?}");
    assert!(stderr.contains("no\\u{1b}[2J\\nsuch_tool"), "{stderr}");

    let output = run(
        "an unknown utterance",
        &[
            "ask",
            "wipe\u{1b}[2J\rthe screen",
            "--org",
            "acme",
            "--user",
            "alice",
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8(output.stderr).expect("UTF-8");
    assert!(!has_raw_control(&stderr), "{stderr:?}");

    let dir = scratch_dir("refusals");
    let store = format!("sqlite:{}", dir.join("audit.db").display());
    let output = run(
        "a usage error quoting its value",
        &["audit", "--audit", &store, "--outcome", "x\u{1b}[2J"],
    )
    .await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8(output.stderr).expect("UTF-8");
    assert!(!has_raw_control(&stderr), "{stderr:?}");
    assert!(stderr.contains("x\\u{1b}[2J"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

//! Workflows in `switchboard serve`: a run's event stream is mounted on `--http` (answering
//! `401` without a token and `404` for a run nobody in the organisation has), and a run left
//! unfinished in a `--workflows sqlite:PATH` store is continued when the server starts, and
//! one that makes no progress is reported by the stuck-run monitor.

use std::{path::PathBuf, process::Stdio, sync::Arc, time::Duration};

use http_body_util::Full;
use hyper::{Request, body::Bytes};
use serde_json::json;
use switchboard::{CallContext, Initiator, Switchboard, ToolRegistry};
use switchboard_domains as _;
use switchboard_workflows::{RunId, RunRecord, RunState, RunStore};
use switchboard_workflows_engine::{Engine, EngineOptions};
use switchboard_workflows_sqlite::SqliteRunStore;

use crate::{
    common::{TempFile, bounded, stderr_lines, switchboard},
    http_client::{Client, Server},
};

fn events_request(
    addr: std::net::SocketAddr,
    run: &str,
    token: Option<&str>,
) -> Request<Full<Bytes>> {
    let mut request =
        Request::get(format!("/workflows/runs/{run}/events")).header("host", addr.to_string());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    request.body(Full::new(Bytes::new())).expect("a request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_is_served_beside_mcp() {
    let tokens = TempFile::new(&format!(
        "[[token]]\nsha256 = \"{}\"\norg = \"acme\"\nuser = \"alice\"\nroles = [\"admin\"]\n",
        switchboard_mcp::token_sha256_hex("alice-token")
    ));
    let server = Server::start(&["--tokens", tokens.path()]).await;
    let mut client = Client::connect(server.addr).await;
    let unknown = RunId::new().to_string();

    let anonymous = client
        .send(events_request(server.addr, &unknown, None))
        .await;
    assert_eq!(anonymous.status, 401, "{anonymous:?}");

    let missing = client
        .send(events_request(server.addr, &unknown, Some("alice-token")))
        .await;
    assert_eq!(missing.status, 404, "{missing:?}");
    assert_eq!(missing.header("content-type"), "application/json");
    assert!(missing.body.contains("run_not_found"), "{}", missing.body);

    let bad = client
        .send(events_request(server.addr, "nope", Some("alice-token")))
        .await;
    assert_eq!(bad.status, 400, "{bad:?}");
}

/// A workflows database in the temp directory, removed (with its WAL files) on drop.
struct TempDatabase(PathBuf);

impl TempDatabase {
    fn new() -> Self {
        Self(std::env::temp_dir().join(format!("switchboard-wf-{}.db", uuid::Uuid::new_v4())))
    }

    fn flag(&self) -> String {
        format!("sqlite:{}", self.0.display())
    }
}

impl Drop for TempDatabase {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

fn alice(correlation: &str) -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .session(correlation)
        .correlation(correlation)
        .role("admin")
        .initiator(Initiator::Human)
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_continues_a_run_left_waiting_in_its_store() {
    let database = TempDatabase::new();
    let path = &database.0;
    let caller = alice("recovery-test");
    // Another process's engine starts the run and stops while it waits.
    let run = {
        let runtime = Switchboard::start(ToolRegistry::builder())
            .await
            .expect("the runtime boots");
        let document = json!({
            "workflow": "wait_then_read",
            "nodes": [
                { "id": "pause", "wait": "1s" },
                { "id": "me", "tool": "core_get_current_user", "params": {} },
            ],
        });
        let definition = switchboard_workflows::validate(&document, &runtime.registry.list())
            .expect("a valid workflow");
        let store: Arc<dyn RunStore> = Arc::new(SqliteRunStore::open(path).expect("opens"));
        let engine = Engine::new(runtime.registry.clone(), store, EngineOptions::default());
        let run = engine
            .start(Arc::new(definition), json!({}), &caller)
            .await
            .expect("starts");
        bounded("the run pauses", async {
            while !matches!(
                engine.run(run, &caller).expect("readable").state,
                RunState::Paused { .. }
            ) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        engine.shutdown();
        run
    };
    // Its timer is due by the time the server starts.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let store_flag = database.flag();
    let _server = Server::start(&["--workflows", &store_flag, "--stuck-after", "1m"]).await;
    let store = SqliteRunStore::open(path).expect("opens");
    let state = bounded("the run completes", async {
        loop {
            let record = store.run(run).expect("readable").expect("stored");
            if record.state.is_terminal() {
                return record.state;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert_eq!(state, RunState::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_makes_no_progress_is_reported_once() {
    let database = TempDatabase::new();
    let caller = alice("stuck-test");
    // A running run whose definition no longer validates: its drive stops at once, and the
    // run stays running with its last checkpoint an hour old.
    let run = RunId::new();
    let an_hour_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1);
    let record = RunRecord {
        id: run,
        org_id: caller.verify().expect("a complete context").org_id,
        workflow: "gone".to_owned(),
        definition: std::sync::Arc::new(
            json!({"workflow": "gone", "nodes": [{"id": "x", "tool": "no_such_tool"}]}),
        ),
        input: json!({}),
        caller: caller.clone(),
        parent: None,
        state: RunState::Running,
        output: None,
        wake_at: None,
        steps_taken: 0,
        created_at: an_hour_ago,
        updated_at: an_hour_ago,
    };
    SqliteRunStore::open(&database.0)
        .expect("opens")
        .create_run(&record)
        .expect("stored");

    let store_flag = database.flag();
    let mut child = switchboard(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--org",
        "acme",
        "--user",
        "alice",
        "--workflows",
        &store_flag,
        "--approvals",
        "memory",
        "--stuck-after",
        "1s",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("the binary starts");
    let mut stderr = stderr_lines(&mut child);
    let mut seen = Vec::new();
    let run_text = run.to_string();
    bounded("the stuck-run warning", async {
        while let Some(line) = stderr.next_line().await.expect("readable") {
            let found = line.contains("no progress") && line.contains(&run_text);
            seen.push(line);
            if found {
                return;
            }
        }
        panic!("the server exited before warning: {seen:#?}");
    })
    .await;
    let warning = seen.last().expect("a line");
    assert!(
        warning.contains("WARN")
            && warning.contains("workflow=gone")
            && warning.contains("org=acme"),
        "{warning}"
    );
    assert!(
        seen.iter()
            .any(|line| line.contains("--approvals sqlite:PATH")),
        "runs on disk with approvals in memory is warned about: {seen:#?}"
    );
    // The monitor looks again 10 s later: the run has not moved, so no second warning.
    let more = tokio::time::timeout(Duration::from_secs(12), async {
        while let Ok(Some(line)) = stderr.next_line().await {
            if line.contains("no progress") {
                return Some(line);
            }
        }
        None
    })
    .await;
    assert!(matches!(more, Err(_) | Ok(None)), "warned twice: {more:?}");
    let _ = child.kill().await;
}

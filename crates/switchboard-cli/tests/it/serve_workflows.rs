//! Workflows in `switchboard serve`: a run's event stream is mounted on `--http` (answering
//! `401` without a token and `404` for a run nobody in the organisation has), and a run left
//! unfinished in a `--workflows sqlite:PATH` store is continued when the server starts.

use std::{sync::Arc, time::Duration};

use http_body_util::Full;
use hyper::{Request, body::Bytes};
use serde_json::json;
use switchboard::{CallContext, Initiator, Switchboard, ToolRegistry};
use switchboard_domains as _;
use switchboard_workflows::{RunId, RunState, RunStore};
use switchboard_workflows_engine::{Engine, EngineOptions};
use switchboard_workflows_sqlite::SqliteRunStore;

use crate::{
    common::{TempFile, bounded},
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_continues_a_run_left_waiting_in_its_store() {
    let path = std::env::temp_dir().join(format!("switchboard-wf-{}.db", uuid::Uuid::new_v4()));
    let caller = CallContext::builder()
        .org("acme")
        .user("alice")
        .session("recovery-test")
        .correlation("recovery-test")
        .role("admin")
        .initiator(Initiator::Human)
        .build();
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
        let store: Arc<dyn RunStore> = Arc::new(SqliteRunStore::open(&path).expect("opens"));
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

    let store_flag = format!("sqlite:{}", path.display());
    let _server = Server::start(&["--workflows", &store_flag, "--stuck-after", "1m"]).await;
    let store = SqliteRunStore::open(&path).expect("opens");
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
    drop(store);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

//! `/readyz` of `switchboard serve --http --mounts-strict` with a real mounted MCP server (the
//! tests' own, over streamable HTTP): ready while the server is up, `503` naming it once it is
//! gone; without `--mounts-strict`, its absence does not make the node unready.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    common::{ACME_ADMIN, StateDir, bounded},
    lab_server::LabServer,
    serve_operate::{Served, connect, exchange, get},
};

/// `/readyz`'s status and body.
async fn readyz(served: &Served) -> (u16, Value) {
    let mut sender = connect(served.addr).await.expect("the server accepts");
    let reply = exchange(&mut sender, get(served.addr, "/readyz"))
        .await
        .expect("an answer");
    let body = serde_json::from_str(&reply.body).expect("a JSON body");
    (reply.status, body)
}

/// Asks `/readyz` until it answers `status` (the checks run every second), and returns the body.
async fn until_readyz(served: &Served, status: u16) -> Value {
    bounded("/readyz changing", async {
        loop {
            let (now, body) = readyz(served).await;
            if now == status {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

/// A mounts file whose server is pinged often and marked down after its first loss, so that
/// its going away is noticed within a second.
fn quick_to_notice(lab: &LabServer) -> crate::common::TempFile {
    lab.mounts_file(
        "[server.restart]\nping_every = \"200ms\"\nping_timeout = \"200ms\"\nbackoff = \"50ms\"\n\
         backoff_max = \"200ms\"\n",
    )
}

fn serving(dir: &StateDir, mounts: &str, strict: bool) -> Vec<String> {
    let mut args: Vec<String> = ACME_ADMIN
        .into_iter()
        .chain(["--state-dir", dir.path(), "--mounts", mounts])
        .map(str::to_owned)
        .collect();
    if strict {
        args.push("--mounts-strict".to_owned());
    }
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_under_mounts_strict_is_ready_while_the_mounted_server_is_up_and_names_it_when_down()
{
    let lab = LabServer::start().await;
    let mounts = quick_to_notice(&lab);
    let dir = StateDir::new();
    let args = serving(&dir, mounts.path(), true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let served = Served::start(&args, &[]).await;

    let (status, body) = readyz(&served).await;
    assert_eq!(
        (status, &body),
        (200, &json!({"status": "ready"})),
        "ready from the first probe: {}",
        served.log()
    );

    lab.stop();
    let body = until_readyz(&served, 503).await;
    assert_eq!(
        body,
        json!({"status": "not_ready", "failing": ["mounted server lab"]}),
        "{}",
        served.log()
    );
    let log = served.log();
    assert!(
        log.contains("the mounted server `lab` is not up"),
        "the log says why: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_mounts_strict_a_mounted_server_that_went_away_leaves_the_node_ready() {
    let lab = LabServer::start().await;
    let mounts = quick_to_notice(&lab);
    let dir = StateDir::new();
    let args = serving(&dir, mounts.path(), false);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let served = Served::start(&args, &[]).await;
    assert_eq!(readyz(&served).await.0, 200);
    lab.stop();
    // Long enough for the mounted server to be noticed gone, and readiness to run again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (status, body) = readyz(&served).await;
    assert_eq!((status, body), (200, json!({"status": "ready"})));
}

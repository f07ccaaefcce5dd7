//! A draining node hands its workflow runs over: two real `switchboard serve --http` nodes on
//! one PostgreSQL database, with workflow leases of a minute (`--workflow-lease 60s`) and a
//! sweep every half second (`--workflow-sweep-every 500ms`). Node A drives a run inside a slow
//! step (a mounted server's tool, `lab_server`) when it gets SIGTERM: the step finishes there,
//! node A releases the run's lease and exits 0, and node B finishes the run within seconds, not
//! a lease later, with every step run exactly once.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::{Value, json};
use switchboard_test_postgres::test_database;

use crate::{
    common::{
        TempFile, bounded, exit_of, fleet_node_flags, json_on_stores, killed, spawned_until,
        switchboard,
    },
    lab_server::LabServer,
    serve_operate::{Served, audit_records},
};

/// A notice, a wait, a slow read of the mounted server, two more notices.
const HAND_OVER: &str = r#"
workflow: hand_over
nodes:
  - id: first
    tool: roster_post_notice
    params: { text: "notice 1" }
  - id: pause
    wait: 2s
  - id: slow
    tool: lab_slow
    params: { ms: 6000 }
  - id: second
    tool: roster_post_notice
    params: { text: "notice 2" }
  - id: third
    tool: roster_post_notice
    params: { text: "notice 3" }
"#;

/// Lease flags far from their defaults: a minute's lease, a sweep every half second.
const LEASES: [&str; 4] = ["--workflow-lease", "60s", "--workflow-sweep-every", "500ms"];

/// A `serve --http` node named `name` on the database `url`, mounting `mounts`.
async fn node(name: &str, url: &str, mounts: &TempFile) -> Served {
    let mut args = vec!["--org", "acme", "--user", "alice", "--role", "admin"];
    args.extend(fleet_node_flags(name, url));
    args.extend_from_slice(&["--mounts", mounts.path()]);
    args.extend_from_slice(&LEASES);
    Served::start(
        &args,
        &[("RUST_LOG", "info,switchboard_workflows_engine=debug")],
    )
    .await
}

/// `switchboard workflow show RUN --json` on the database `url`.
async fn show(url: &str, run: &str) -> Value {
    json_on_stores(url, &["workflow", "show", run, "--json"]).await
}

fn step_state<'v>(shown: &'v Value, id: &str) -> &'v Value {
    shown["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|step| step["key"]["path"] == json!(id)))
        .map_or(&Value::Null, |step| &step["state"]["state"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr, reason = "the figure docs/deploy.md quotes")]
async fn a_node_drained_by_sigterm_hands_its_run_over_and_another_finishes_it_well_within_the_lease()
 {
    let database = test_database()
        .await
        .expect("a test database (the tests run through `cargo xtask test`)");
    let url = database.url().to_owned();
    let lab = LabServer::start().await;
    let mounts = lab.mounts_file("");
    let definition = TempFile::new(HAND_OVER);
    let mut node_a = node("node-a", &url, &mounts).await;

    // The run is started by a `workflow run` process as an admin (who may call the mounted
    // tool), with a one-second lease, killed inside the wait: node A, the only node yet, takes
    // it over once that lease expired and drives it into the slow step.
    let mut starter = spawned_until(
        switchboard(&["workflow", "run", definition.path(), "--watch"])
            .args(["--org", "acme", "--user", "alice", "--role", "admin"])
            .args(["--workflows", &url, "--approvals", &url, "--audit", &url])
            .args(["--mounts", mounts.path()])
            .args(["--workflow-lease", "1s", "--workflow-sweep-every", "300ms"]),
        "pause#0  waiting until",
    )
    .await;
    killed(&mut starter).await;
    let called = tokio::time::timeout(Duration::from_secs(30), async {
        while lab.calls() == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    if called.is_err() {
        let listed = json_on_stores(&url, &["workflow", "list", "--json"]).await;
        let run = listed["runs"][0]["id"].as_str().expect("a run").to_owned();
        panic!(
            "node A never called the slow step: {}\n{:#}",
            node_a.log(),
            show(&url, &run).await
        );
    }

    // Node B starts while node A holds the lease: it leaves the run alone.
    let node_b = node("node-b", &url, &mounts).await;
    node_a.signal(Signal::SIGTERM);
    let signalled = Instant::now();
    let status = exit_of("node A's exit", &mut node_a.child).await;
    assert_eq!(status.code(), Some(0), "{}", node_a.log());
    let exited = Instant::now();

    let listed = json_on_stores(&url, &["workflow", "list", "--json"]).await;
    let run = listed["runs"][0]["id"]
        .as_str()
        .expect("the run")
        .to_owned();
    let log = node_a.log();
    assert!(
        log.contains("the workflow runs this node drove are handed over released=1 cut_off=0"),
        "node A handed its one run over: {log}"
    );
    let handed = show(&url, &run).await;
    assert_eq!(
        step_state(&handed, "slow"),
        &json!("completed"),
        "node A finished the step in flight before it exited: {handed:#}"
    );

    let finished = bounded("node B finishing the run", async {
        loop {
            let shown = show(&url, &run).await;
            if shown["run"]["state"]["state"] == json!("completed") {
                return shown;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let took = signalled.elapsed();
    // The slow step had at most 6 s to go on node A; then one sweep of node B.
    assert!(
        took < Duration::from_secs(20),
        "the run was finished {took:?} after SIGTERM: it waited for the 60 s lease \
         (node A: {}; node B: {})",
        node_a.log(),
        node_b.log()
    );
    eprintln!(
        "node B finished the run {took:?} after node A got SIGTERM, {:?} after node A exited \
         (60 s leases, a sweep every 500 ms, the run read every 200 ms by new processes)",
        exited.elapsed()
    );
    assert_eq!(finished["run"]["steps_taken"], json!(5), "{finished:#}");
    assert_eq!(lab.calls(), 1, "the slow step ran once");
    let records = audit_records(&url).await;
    let notices: Vec<(&Value, &Value)> = records
        .iter()
        .filter(|record| {
            record["tool"] == json!("roster_post_notice") && record["outcome"] == json!("ok")
        })
        .map(|record| (&record["input_hash"], &record["node"]))
        .collect();
    assert_eq!(notices.len(), 3, "each notice posted once: {notices:#?}");
    assert_eq!(
        notices
            .iter()
            .filter(|(_, node)| **node == json!("node-b"))
            .count(),
        2,
        "node B posted the two notices after the slow step: {notices:#?}"
    );
    drop(node_b);
}

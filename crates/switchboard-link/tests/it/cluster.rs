//! The cluster link across two OS processes: a front registry in this process ("node-a")
//! holds `relay` as a remote domain reached through a [`ClusterDomainLink`], and node-b (this
//! binary run again, [`serving`]) serves it from its own registry. The tests check that a
//! read and a mutation run on node-b as they run in process, that a wrong cookie or an
//! unlisted signing key lets nothing run, that a SIGSTOPped node-b opens the breaker within a
//! health interval plus a ping deadline and that calls fail fast until it is back, and that a
//! mutation interrupted by a kill -9 of node-b does not run twice when it is retried with its
//! key after node-b restarts. A node whose listen address is taken does not start.
//!
//! Run with `cargo nextest run -p switchboard-link --features cluster`.

mod relay;
mod serving;

use std::{
    os::unix::fs::PermissionsExt as _,
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use switchboard_audit::{AuditQuery, AuditRecord, AuditStore as _};
use switchboard_audit_sqlite::SqliteAuditStore;
use switchboard_core::{CallContext, IdempotencyKey, Initiator, InvokeError};
use switchboard_link::{
    ClusterDomainLink, ClusterNode, ClusterNodeConfig, Cookie, SigningKeys, StatementSigner,
    generate_signing_key_pem,
};
use switchboard_registry::{DomainLink as _, LinkHealth, ToolRegistry};
use tempfile::TempDir;

use self::{
    relay::{Relay, RelayState},
    serving::{AUDIT, NODE_A_PUBLIC_KEY, NODE_B_COOKIE, NodeB, RUNS, free_listen_addr},
};

/// How often the link pings node-b, and how long a ping may take.
const HEALTH_INTERVAL: Duration = Duration::from_millis(500);
const PING_DEADLINE: Duration = Duration::from_millis(300);
/// The bound on any wait for something that must happen: reaching it is a failure.
const PATIENCE: Duration = Duration::from_secs(30);
const COOKIE: &str = "0123456789abcdef0123456789abcdef-the-test-cluster";

/// The front (node-a) with its link to node-b's `relay`, and node-b.
struct Cluster {
    dir: TempDir,
    node_b: NodeB,
    link: Arc<ClusterDomainLink>,
    front: ToolRegistry,
    _node_a: ClusterNode,
}

/// What node-b is given that differs from a healthy cluster.
#[derive(Default)]
struct Faults {
    /// node-b's cookie is another one.
    other_cookie: bool,
    /// node-b lists another key than the one node-a signs with.
    unlisted_key: bool,
}

fn write_secret(path: &Path, text: &str) {
    std::fs::write(path, text).expect("written");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

fn ring() -> SigningKeys {
    let pem = generate_signing_key_pem().expect("a key");
    SigningKeys::from_pems(&[pem.as_bytes()]).expect("a ring")
}

async fn cluster(faults: Faults) -> Cluster {
    let dir = tempfile::tempdir().expect("a directory");
    let front_keys = ring();
    let listed = if faults.unlisted_key {
        ring().verifying_keys()
    } else {
        front_keys.verifying_keys()
    };
    std::fs::write(
        dir.path().join(NODE_A_PUBLIC_KEY),
        listed.to_pems().concat(),
    )
    .expect("node-a's public key written");
    let b_cookie = if faults.other_cookie {
        "another-cookie-another-cookie-another-cookie"
    } else {
        COOKIE
    };
    write_secret(&dir.path().join(NODE_B_COOKIE), b_cookie);
    write_secret(&dir.path().join("node-a.cookie"), COOKIE);
    let node_b = NodeB::start(dir.path(), free_listen_addr());

    let cookie = Cookie::from_file(dir.path().join("node-a.cookie")).expect("node-a's cookie");
    let mut config =
        ClusterNodeConfig::new("node-a", free_listen_addr(), cookie).peer("node-b", node_b.listen);
    config.health_interval = HEALTH_INTERVAL;
    config.ping_deadline = PING_DEADLINE;
    let node_a = ClusterNode::start(config).await.expect("node-a starts");
    let signer = Arc::new(StatementSigner::new("node-a", front_keys));
    let link = node_a
        .link("node-b", "relay", signer)
        .expect("node-b is a peer");
    let front = ToolRegistry::builder()
        .remote_domain("relay", Arc::clone(&link) as Arc<_>)
        .start()
        .await
        .expect("the front starts");
    Cluster {
        dir,
        node_b,
        link,
        front,
        _node_a: node_a,
    }
}

/// A human admin of `acme`, calling under `correlation`.
fn admin(correlation: &str) -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .session("session-1")
        .correlation(correlation)
        .role("admin")
        .initiator(Initiator::Human)
        .build()
}

fn keyed(correlation: &str, key: &str) -> CallContext {
    let mut context = admin(correlation);
    context.idempotency_key = Some(IdempotencyKey::new(key));
    context
}

/// Waits until the link's health satisfies `done`; returns how long that took.
async fn wait_for_health(
    link: &ClusterDomainLink,
    what: &str,
    done: impl Fn(&LinkHealth) -> bool,
) -> Duration {
    let started = Instant::now();
    while !done(&link.health()) {
        assert!(
            started.elapsed() < PATIENCE,
            "the link is not {what} after {PATIENCE:?}: {:?}",
            link.health()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

async fn wait_until_up(link: &ClusterDomainLink) -> Duration {
    wait_for_health(link, "up", |health| *health == LinkHealth::Up).await
}

fn is_open(health: &LinkHealth) -> bool {
    matches!(health, LinkHealth::Open { .. })
}

/// How many times node-b ran `relay_stamp`.
fn runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join(RUNS)).map_or(0, |text| text.lines().count())
}

/// node-b's audit records of `correlation`, once there are `expected` of them.
async fn node_b_records(dir: &Path, correlation: &str, expected: usize) -> Vec<AuditRecord> {
    let store = SqliteAuditStore::open(dir.join(AUDIT)).expect("node-b's audit file");
    let started = Instant::now();
    loop {
        let records = store
            .query(&AuditQuery::correlation(correlation))
            .expect("node-b's audit answers");
        if records.len() >= expected || started.elapsed() > PATIENCE {
            return records;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn front_record(front: &ToolRegistry, correlation: &str) -> AuditRecord {
    let mut records = front
        .audit()
        .query(&AuditQuery::correlation(correlation))
        .await
        .expect("the front's audit answers");
    assert_eq!(records.len(), 1, "{records:#?}");
    records.remove(0)
}

/// What every record of one call shares, wherever it was recorded.
fn shared_part(record: &AuditRecord) -> Value {
    json!({
        "tool": &*record.tool,
        "org_id": record.org_id.as_ref().map(|id| id.to_string()),
        "user_id": record.user_id.as_ref().map(|id| id.to_string()),
        "correlation_id": record.correlation_id.as_ref().map(|id| id.to_string()),
        "input_hash": record.input_hash.as_ref().map(|digest| format!("{digest:?}")),
        "output_hash": record.output_hash.as_ref().map(|digest| format!("{digest:?}")),
        "outcome": format!("{:?}", record.outcome),
        "action_id": record.action.as_ref().map(|action| action.id.to_string()),
    })
}

fn is_unavailable(result: &Result<Value, InvokeError>) -> bool {
    matches!(result, Err(InvokeError::DomainUnavailable { .. }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr, reason = "the figure the report quotes")]
async fn a_read_and_a_mutation_run_on_node_b_with_the_results_and_digests_of_an_in_process_call() {
    let cluster = cluster(Faults::default()).await;
    let in_process = ToolRegistry::builder()
        .domain_state::<Relay>(RelayState {
            served_by: "node-b".to_owned(),
            runs: None,
        })
        .start()
        .await
        .expect("the in-process registry starts");
    wait_until_up(&cluster.link).await;

    let read = cluster
        .front
        .invoke("relay_served_by", json!({}), &admin("cluster-read"))
        .await;
    let mut round_trips = Vec::new();
    for attempt in 0..50 {
        let started = Instant::now();
        let again = cluster
            .front
            .invoke(
                "relay_served_by",
                json!({}),
                &admin(&format!("timed-{attempt}")),
            )
            .await;
        round_trips.push(started.elapsed());
        assert_eq!(again.expect("served by node-b"), json!("node-b"));
    }
    round_trips.sort();
    let local = in_process
        .invoke("relay_served_by", json!({}), &admin("cluster-read"))
        .await;
    let stamped = cluster
        .front
        .invoke(
            "relay_stamp",
            json!({"hold_ms": 0}),
            &keyed("cluster-stamp", "stamp-1"),
        )
        .await
        .expect("the mutation runs on node-b");

    eprintln!(
        "a read's round trip through the cluster link, over 50: median {:?}, slowest {:?}",
        round_trips[25], round_trips[49]
    );
    assert_eq!(read.expect("served by node-b"), json!("node-b"));
    assert_eq!(local.expect("served in process"), json!("node-b"));
    assert_eq!(stamped["served_by"], "node-b");
    assert_eq!(runs(cluster.dir.path()), 1);
    let front_read = front_record(&cluster.front, "cluster-read").await;
    let local_read = front_record(&in_process, "cluster-read").await;
    let [remote_read] = node_b_records(cluster.dir.path(), "cluster-read", 1)
        .await
        .try_into()
        .expect("one record on node-b");
    assert_eq!(shared_part(&front_read), shared_part(&remote_read));
    assert_eq!(shared_part(&front_read), shared_part(&local_read));
    let front_stamp = front_record(&cluster.front, "cluster-stamp").await;
    let [remote_stamp] = node_b_records(cluster.dir.path(), "cluster-stamp", 1)
        .await
        .try_into()
        .expect("one record on node-b");
    assert_eq!(shared_part(&front_stamp), shared_part(&remote_stamp));
    assert!(
        front_stamp.action.is_some(),
        "a mutation's record names its action"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_wrong_cookie_the_link_never_comes_up_and_calls_are_domain_unavailable() {
    let cluster = cluster(Faults {
        other_cookie: true,
        ..Faults::default()
    })
    .await;

    let watched = Instant::now();
    while watched.elapsed() < HEALTH_INTERVAL * 6 {
        assert!(
            !cluster._node_a.connected_to("node-b"),
            "a session opened with a wrong cookie"
        );
        assert_ne!(cluster.link.health(), LinkHealth::Up);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let answer = cluster
        .front
        .invoke(
            "relay_stamp",
            json!({"hold_ms": 0}),
            &keyed("cookie-stamp", "cookie-1"),
        )
        .await;

    assert!(
        is_open(&cluster.link.health()),
        "{:?}",
        cluster.link.health()
    );
    assert!(is_unavailable(&answer), "{answer:?}");
    assert_eq!(runs(cluster.dir.path()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_signed_with_a_key_node_b_does_not_list_is_refused_and_nothing_runs() {
    let cluster = cluster(Faults {
        unlisted_key: true,
        ..Faults::default()
    })
    .await;
    wait_until_up(&cluster.link).await;

    let stamp = cluster
        .front
        .invoke(
            "relay_stamp",
            json!({"hold_ms": 0}),
            &keyed("unlisted-stamp", "unlisted-1"),
        )
        .await;
    let read = cluster
        .front
        .invoke("relay_served_by", json!({}), &admin("unlisted-read"))
        .await;

    let refused_by_node_b = |answer: &Result<Value, InvokeError>| matches!(answer, Err(InvokeError::DomainUnavailable { reason, .. }) if reason.contains("statement was refused"));
    assert!(refused_by_node_b(&stamp), "{stamp:?}");
    assert!(refused_by_node_b(&read), "{read:?}");
    assert_eq!(runs(cluster.dir.path()), 0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        node_b_records(cluster.dir.path(), "unlisted-read", 0)
            .await
            .is_empty()
    );
    assert!(
        node_b_records(cluster.dir.path(), "unlisted-stamp", 0)
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr, reason = "the figures the report quotes")]
async fn a_stopped_node_b_opens_the_breaker_within_the_health_interval_and_calls_fail_fast_until_it_resumes()
 {
    let cluster = cluster(Faults::default()).await;
    wait_until_up(&cluster.link).await;

    cluster.node_b.signal("STOP");
    let front = cluster.front.clone();
    let in_flight = tokio::spawn(async move {
        let started = Instant::now();
        let answer = front
            .invoke("relay_served_by", json!({}), &admin("in-flight"))
            .await;
        (answer, started.elapsed())
    });
    let detected = wait_for_health(&cluster.link, "open", is_open).await;
    let (in_flight, in_flight_took) = in_flight.await.expect("the call in flight ends");
    let mut slowest = Duration::ZERO;
    for attempt in 0..5 {
        let started = Instant::now();
        let answer = cluster
            .front
            .invoke(
                "relay_served_by",
                json!({}),
                &admin(&format!("stopped-{attempt}")),
            )
            .await;
        slowest = slowest.max(started.elapsed());
        assert!(is_unavailable(&answer), "{answer:?}");
    }
    cluster.node_b.signal("CONT");
    let resumed = wait_until_up(&cluster.link).await;
    let answer = cluster
        .front
        .invoke("relay_served_by", json!({}), &admin("resumed"))
        .await;

    eprintln!(
        "SIGSTOP detected after {detected:?}; slowest failure while stopped {slowest:?}; up again {resumed:?} after SIGCONT"
    );
    // The bound: a health interval plus a ping deadline, with room for a loaded machine.
    assert!(
        detected <= HEALTH_INTERVAL + PING_DEADLINE + Duration::from_millis(400),
        "{detected:?}"
    );
    assert!(slowest < Duration::from_millis(100), "{slowest:?}");
    // Sent to the stopped node, it ends in doubt when the breaker opens, not at its timeout.
    assert!(
        matches!(&in_flight, Err(InvokeError::ToolFailed { error, .. }) if error.is_in_doubt()),
        "{in_flight:?}"
    );
    assert!(
        in_flight_took <= HEALTH_INTERVAL + PING_DEADLINE + Duration::from_millis(400),
        "{in_flight_took:?}"
    );
    assert_eq!(answer.expect("served again"), json!("node-b"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutation_cut_off_by_a_kill_of_node_b_does_not_run_again_when_retried_with_its_key() {
    let mut cluster = cluster(Faults::default()).await;
    wait_until_up(&cluster.link).await;
    let front = cluster.front.clone();
    let first = tokio::spawn(async move {
        front
            .invoke(
                "relay_stamp",
                json!({"hold_ms": 3000}),
                &keyed("killed-first", "killed-1"),
            )
            .await
    });
    let started = Instant::now();
    while runs(cluster.dir.path()) == 0 {
        assert!(
            started.elapsed() < PATIENCE,
            "the mutation never started on node-b"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    cluster.node_b = cluster.node_b.kill_and_restart();
    let cut_off = first.await.expect("the first call ends");
    wait_until_up(&cluster.link).await;
    let retry = cluster
        .front
        .invoke(
            "relay_stamp",
            json!({"hold_ms": 3000}),
            &keyed("killed-retry", "killed-1"),
        )
        .await;

    assert!(cut_off.is_err(), "{cut_off:?}");
    assert_eq!(
        runs(cluster.dir.path()),
        1,
        "the retry ran the mutation again: {retry:?}"
    );
    assert!(
        matches!(&retry, Err(error) if !matches!(error, InvokeError::DomainUnavailable { .. })),
        "node-b answers the retry from its claim of the key: {retry:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_address_is_taken_does_not_start() {
    let dir = tempfile::tempdir().expect("a directory");
    write_secret(&dir.path().join("cookie"), COOKIE);
    let cookie = Cookie::from_file(dir.path().join("cookie")).expect("a cookie");
    let listen = free_listen_addr();
    let _first = ClusterNode::start(ClusterNodeConfig::new("node-a", listen, cookie.clone()))
        .await
        .expect("the first node starts");

    let second = ClusterNode::start(ClusterNodeConfig::new("node-c", listen, cookie)).await;

    assert!(
        matches!(&second, Err(switchboard_link::ClusterError::Start { .. })),
        "{second:?}"
    );
}

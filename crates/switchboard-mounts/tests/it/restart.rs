//! When a mounted server dies: it is restarted with backoff, a call that was in flight is sent
//! again only when that is safe, a server lost too often is marked down, and one that stops
//! answering pings is restarted. The server is npm's server-everything, killed by its pid.

use std::{path::Path, process::Command, time::Duration};

use serde_json::json;
use switchboard_core::{CallContext, ErrorKind, Initiator, InvokeError};
use switchboard_mounts::{
    MOUNTED_OUTCOME_UNKNOWN, MOUNTED_SERVER_UNAVAILABLE, MountState, MountStatus, Mounts,
};
use switchboard_registry::ToolRegistry;

use crate::servers::{caller, mounted, npm_bin};

/// A `[server.restart]` table with quick restarts, so that a test waits tenths of a second,
/// not seconds; `max` losses within a minute are tolerated.
pub(crate) fn quick(max: usize) -> String {
    format!(
        "[server.restart]\nbackoff = \"50ms\"\nbackoff_max = \"200ms\"\nmax = {max}\nwithin = \"60s\"\ncool_down = \"600s\"\nping_every = \"600s\"\n"
    )
}

/// server-everything restarted as `restart` says; its long-running tool is `execute` (not
/// safe to send twice) unless the server's category says otherwise.
fn everything(category: &str, restart: &str) -> String {
    format!(
        "[[server]]\nid = \"everything\"\ncommand = {:?}\nstart_timeout = \"60s\"\ncategory = {category:?}\n{restart}",
        npm_bin("mcp-server-everything")
    )
}

fn person() -> CallContext {
    caller(Initiator::Human, false)
}

pub(crate) async fn status(mounts: &Mounts) -> MountStatus {
    let statuses = mounts.status().await;
    let [status] = statuses.as_slice() else {
        panic!("one server: {statuses:?}");
    };
    status.clone()
}

/// Waits (at most 30 s) until the server's status satisfies `ready`.
pub(crate) async fn until(
    mounts: &Mounts,
    what: &str,
    ready: impl Fn(&MountStatus) -> bool,
) -> MountStatus {
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let now = status(mounts).await;
            if ready(&now) {
                return now;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("{what} did not happen within 30 s"))
}

pub(crate) fn kill(pid: u32, signal: &str) {
    let killed = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "kill {signal} {pid}");
}

async fn sum(registry: &ToolRegistry) -> Result<serde_json::Value, InvokeError> {
    registry
        .invoke("everything_get-sum", json!({"a": 2, "b": 3}), &person())
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_restarted_and_serves_again() {
    let (registry, mounts) = mounted(&everything("read", &quick(5))).await;
    let first = status(&mounts).await;
    let pid = first.pid.expect("a pid");
    kill(pid, "-KILL");
    let again = until(&mounts, "the restart", |now| {
        now.restarts == 1 && now.state == MountState::Up
    })
    .await;
    assert_ne!(again.pid, Some(pid), "a new process");
    assert!(
        again
            .last_error
            .as_deref()
            .is_some_and(|error| error.contains("closed") || error.contains("exited")),
        "{again:?}"
    );
    let answer = sum(&registry).await.expect("the new process answers");
    assert!(answer.to_string().contains("5"), "{answer}");
    mounts.close().await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_call_in_flight_is_sent_again_and_an_execute_call_is_not() {
    for (category, resent) in [("read", true), ("execute", false)] {
        let (registry, mounts) = mounted(&everything(category, &quick(5))).await;
        let pid = status(&mounts).await.pid.expect("a pid");
        let mut context = person();
        context.confirmed = true;
        let call = {
            let registry = registry.clone();
            tokio::spawn(async move {
                registry
                    .invoke(
                        "everything_trigger-long-running-operation",
                        json!({"duration": 2, "steps": 2}),
                        &context,
                    )
                    .await
            })
        };
        // The call is on its way (the operation takes two seconds): kill the server under it.
        tokio::time::sleep(Duration::from_millis(700)).await;
        kill(pid, "-KILL");
        let outcome = call.await.expect("the call's task");
        if resent {
            let answer = outcome.expect("a read call is sent again and answered");
            assert!(answer.to_string().contains("completed"), "{answer}");
        } else {
            let error = outcome.expect_err("an execute call's outcome is unknown");
            match &error {
                InvokeError::ToolFailed { error, .. } => {
                    assert_eq!(error.code(), MOUNTED_OUTCOME_UNKNOWN);
                    assert!(error.is_in_doubt(), "{error:?}");
                    assert!(
                        error.message().contains("may or may not have run"),
                        "{error}"
                    );
                }
                other => panic!("expected mounted_outcome_unknown, got {other:?}"),
            }
        }
        mounts.close().await;
        registry.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_lost_too_often_is_marked_down() {
    let (registry, mounts) = mounted(&everything("read", &quick(1))).await;
    let first = status(&mounts).await.pid.expect("a pid");
    kill(first, "-KILL");
    let again = until(&mounts, "the first restart", |now| {
        now.state == MountState::Up && now.restarts == 1
    })
    .await;
    kill(again.pid.expect("a pid"), "-KILL");
    let down = until(&mounts, "the breaker", |now| {
        matches!(now.state, MountState::Down { .. })
    })
    .await;
    assert_eq!(down.pid, None);
    let refused = sum(&registry)
        .await
        .expect_err("a down server refuses at once");
    assert_eq!(refused.kind(), ErrorKind::ToolFailed, "{refused}");
    match &refused {
        InvokeError::ToolFailed { error, .. } => {
            assert_eq!(error.code(), MOUNTED_SERVER_UNAVAILABLE);
            assert!(error.message().contains("marked down until"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    mounts.close().await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wedged_server_is_restarted() {
    let restart = quick(5).replace(
        "ping_every = \"600s\"",
        "ping_every = \"200ms\"\nping_timeout = \"300ms\"",
    );
    let (registry, mounts) = mounted(&everything("read", &restart)).await;
    let pid = status(&mounts).await.pid.expect("a pid");
    // Stopped, not dead: the process exists and reads nothing.
    kill(pid, "-STOP");
    let again = until(&mounts, "the restart of the wedged server", |now| {
        now.state == MountState::Up && now.restarts >= 1
    })
    .await;
    assert!(
        again
            .last_error
            .as_deref()
            .is_some_and(|error| error.contains("ping")),
        "{again:?}"
    );
    sum(&registry).await.expect("the new process answers");
    // The stopped one was killed, not left behind.
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| stat.contains(") Z ")),
        "the wedged process {pid} is still there"
    );
    mounts.close().await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_with_other_tools_brings_the_registry_in_line() {
    // The first start runs server-everything; every later one, the filesystem server.
    let marker = std::env::temp_dir().join(format!(
        "switchboard-restart-marker-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos())
    ));
    let script = format!(
        "if [ -e {marker} ]; then exec {files} /tmp; else touch {marker}; exec {everything}; fi",
        marker = marker.display(),
        files = npm_bin("mcp-server-filesystem"),
        everything = npm_bin("mcp-server-everything"),
    );
    let text = format!(
        "[[server]]\nid = \"shifting\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nstart_timeout = \"60s\"\ncategory = \"read\"\n{}",
        quick(5)
    );
    let (registry, mounts) = mounted(&text).await;
    assert!(registry.find("shifting_echo").is_some());
    assert!(registry.find("shifting_read_text_file").is_none());

    kill(status(&mounts).await.pid.expect("a pid"), "-KILL");
    until(&mounts, "the restart with other tools", |now| {
        now.state == MountState::Up && now.tools.contains(&"shifting_read_text_file".to_owned())
    })
    .await;
    assert!(
        registry.find("shifting_echo").is_none(),
        "a gone tool is unregistered"
    );
    let gone = registry
        .invoke("shifting_echo", json!({"message": "x"}), &person())
        .await
        .expect_err("a gone tool");
    assert_eq!(gone.kind(), ErrorKind::ToolNotFound, "{gone}");

    mounts.close().await;
    assert!(
        registry.find("shifting_read_text_file").is_none(),
        "close unregisters the tools the server has now"
    );
    registry.shutdown().await;
    let _ = std::fs::remove_file(&marker);
}

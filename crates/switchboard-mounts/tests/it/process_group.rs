//! A mounted stdio server's processes when its instance ends: a restart and `close` end the
//! instance's whole process group, not only the process Switchboard started. The server is
//! npm's server-everything started through `sh -c`, so that the shell is the direct child and
//! the server a grandchild in the shell's process group, as with `npx` or a wrapper script.

use std::time::Duration;

use serde_json::json;
use switchboard_core::Initiator;
use switchboard_mounts::MountState;

use crate::{
    restart::{kill, quick, status, until},
    servers::{caller, mounted, npm_bin},
};

/// The server started by a shell that stays its parent: `&` and `wait`, with the server's
/// stdin passed on through fd 3 (a background command's stdin is otherwise `/dev/null`).
/// `before` runs first, in the same shell.
fn through_a_shell(before: &str) -> String {
    let script = format!(
        "{before}exec 3<&0; '{}' <&3 3<&- & wait",
        npm_bin("mcp-server-everything")
    );
    format!(
        "[[server]]\nid = \"wrapped\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\nstart_timeout = \"60s\"\ncategory = \"read\"\n{}",
        quick(5)
    )
}

/// One process of a process group, as `/proc` shows it.
#[derive(Debug)]
struct Member {
    pid: u32,
    name: String,
}

/// The processes of process group `pgid` that have not exited. A zombie has exited: reaping it
/// is its parent's job (for an orphan, the init process's), and it holds no pipe.
fn live_members(pgid: u32) -> Vec<Member> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        panic!("/proc is readable");
    };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        // `pid (name) state ppid pgrp ...`; the name may hold spaces and parentheses.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let (Some(state), Some(group)) = (fields.first(), fields.get(2)) else {
            continue;
        };
        let state = state.chars().next().unwrap_or('?');
        if group.parse() == Ok(pgid) && !matches!(state, 'Z' | 'X') {
            members.push(Member {
                pid,
                name: stat[open + 1..close].to_owned(),
            });
        }
    }
    members
}

/// Waits (at most 30 s) until group `pgid` has at least `count` live processes: the shell and
/// what it started.
async fn until_members(pgid: u32, count: usize) -> Vec<Member> {
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let members = live_members(pgid);
            if members.len() >= count {
                return members;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| {
        panic!(
            "group {pgid} never had {count} processes: {:?}",
            live_members(pgid)
        )
    })
}

/// Fails the test if a process of group `pgid` is alive a second from now (a process sent
/// SIGKILL a moment ago may still be on its way out), after killing what is left so that a
/// failure leaks nothing.
async fn assert_group_gone(pgid: u32, after: &str) {
    let waited = tokio::time::timeout(Duration::from_secs(1), async {
        while !live_members(pgid).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    if waited.is_err() {
        let left = live_members(pgid);
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .status();
        panic!("{after}, process group {pgid} still has live processes: {left:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_ends_the_old_instance_s_whole_process_group() {
    // Besides the server, the shell starts a process that holds the pipes and does not read
    // stdin, so that closing the pipes alone does not end it.
    let (registry, mounts) = mounted(&through_a_shell("sleep 600 & ")).await;
    // The shell is the group's leader: its pid is the group's id.
    let old = status(&mounts).await.pid.expect("a pid");
    let members = until_members(old, 3).await;
    assert!(
        members
            .iter()
            .any(|member| member.name == "sleep" && member.pid != old),
        "the shell's children are in its group: {members:?}"
    );

    // Only the shell is killed; what it started lives on, pipes open.
    kill(old, "-KILL");
    let again = until(&mounts, "the restart after the shell was killed", |now| {
        now.state == MountState::Up && now.restarts == 1
    })
    .await;
    assert_ne!(again.pid, Some(old), "a new instance");
    assert!(
        again
            .last_error
            .as_deref()
            .is_some_and(|error| error.contains(&format!("process {old} exited"))),
        "the loss names the process that exited: {again:?}"
    );
    let answer = registry
        .invoke(
            "wrapped_get-sum",
            json!({"a": 2, "b": 3}),
            &caller(Initiator::Human, false),
        )
        .await
        .expect("the new instance answers");
    assert!(answer.to_string().contains('5'), "{answer}");
    assert_group_gone(old, "once the new instance serves").await;

    let new = again.pid.expect("a pid");
    mounts.close().await;
    assert_group_gone(new, "after close").await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_ends_the_whole_process_group_even_a_process_that_ignores_sigterm() {
    // Besides the server, the shell starts a process that ignores SIGTERM and stdin's end.
    let stubborn = "(trap '' TERM; exec sleep 600) </dev/null >/dev/null 2>&1 & ";
    let (registry, mounts) = mounted(&through_a_shell(stubborn)).await;
    let pgid = status(&mounts).await.pid.expect("a pid");
    let members = until_members(pgid, 3).await;
    assert!(
        members.iter().any(|member| member.name == "sleep"),
        "{members:?}"
    );

    let closing = std::time::Instant::now();
    mounts.close().await;
    assert!(
        closing.elapsed() < Duration::from_secs(10),
        "close took {:?}",
        closing.elapsed()
    );
    assert_group_gone(pgid, "after close").await;
    registry.shutdown().await;
}

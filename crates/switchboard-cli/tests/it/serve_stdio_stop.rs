//! `switchboard serve --stdio` stopped by SIGTERM, as a platform or a supervisor stops it: it
//! reads no further message, answers the call in flight, flushes the audit log and exits 0; a
//! call that outlasts `--drain-timeout` is cut off, said so, and the exit code is 1. The call
//! in flight is a mounted server's slow tool (`lab_server`), so the test knows when it started.

use std::{process::Stdio, time::Duration};

use nix::sys::signal::Signal;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader},
    process::{Child, ChildStdin},
};

use crate::{
    common::{ACME_ADMIN, StateDir, TempFile, bounded, exit_of, switchboard},
    lab_server::LabServer,
    serve_operate::audit_records,
    stdio_client::{INITIALIZE, INITIALIZED},
};

/// `serve --stdio` as alice, mounting the lab server, keeping its stores in `dir`, with `extra`
/// flags; its stdin piped, its stdout read line by line into a channel, its stderr kept.
struct StdioChild {
    child: Child,
    stdin: ChildStdin,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl StdioChild {
    fn start(mounts: &TempFile, dir: &StateDir, extra: &[&str]) -> Self {
        let mut args = vec!["serve", "--stdio"];
        args.extend_from_slice(&ACME_ADMIN);
        args.extend_from_slice(&["--mounts", mounts.path(), "--state-dir", dir.path()]);
        args.extend_from_slice(extra);
        let mut child = switchboard(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let (sender, lines) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = stdout.next_line().await {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    async fn send(&mut self, message: &str) {
        bounded(
            "writing a line",
            self.stdin.write_all(format!("{message}\n").as_bytes()),
        )
        .await
        .expect("the server reads its stdin");
    }

    /// The next message with an `id` (an answer), or `None` once stdout ended.
    async fn next_answer(&mut self) -> Option<Value> {
        loop {
            let line = bounded("a line on stdout", self.lines.recv()).await?;
            let message: Value = serde_json::from_str(&line).expect("JSON on stdout");
            if message.get("id").is_some() {
                return Some(message);
            }
        }
    }

    fn signal(&self, signal: Signal) {
        let pid = self.child.id().expect("the server runs");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("a pid"));
        nix::sys::signal::kill(pid, signal).expect("the signal is sent");
    }

    /// Waits for the exit: its code, and what it wrote on standard error.
    async fn exit(mut self) -> (Option<i32>, String) {
        let status = exit_of("the server's exit", &mut self.child).await;
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = bounded("its stderr", pipe.read_to_string(&mut stderr)).await;
        }
        (status.code(), stderr)
    }
}

fn slow_call(id: &str, ms: u64) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "lab_slow", "arguments": {"ms": ms}},
    })
    .to_string()
}

async fn started(lab: &LabServer, calls: usize) {
    bounded("the slow call reaching the mounted server", async {
        while lab.calls() < calls {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_answers_the_call_in_flight_reads_nothing_more_and_exits_0() {
    let lab = LabServer::start().await;
    let mounts = lab.mounts_file("");
    let dir = StateDir::new();
    let mut server = StdioChild::start(&mounts, &dir, &["--drain-timeout", "20s"]);
    server.send(INITIALIZE).await;
    let answer = server.next_answer().await.expect("the initialize answer");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    server.send(INITIALIZED).await;
    server.send(&slow_call("slow", 1_500)).await;
    started(&lab, 1).await;

    server.signal(Signal::SIGTERM);
    // Sent after the signal: never read, so never called nor answered.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.send(&slow_call("late", 0)).await;
    let answer = server.next_answer().await.expect("the slow call's answer");
    assert_eq!(answer["id"], json!("slow"), "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        json!("slept 1500 ms"),
        "the call in flight was answered whole: {answer}"
    );
    assert_eq!(
        server.next_answer().await,
        None,
        "nothing more was answered"
    );
    let (code, stderr) = server.exit().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("SIGTERM: draining"), "{stderr}");
    assert_eq!(
        lab.calls(),
        1,
        "the message sent after SIGTERM was not read"
    );

    let records = audit_records(&format!("sqlite:{}/audit.db", dir.path())).await;
    let slow: Vec<&Value> = records
        .iter()
        .filter(|record| record["tool"] == json!("lab_slow"))
        .collect();
    assert_eq!(
        slow.len(),
        1,
        "the answered call's record was flushed: {records:#?}"
    );
    assert_eq!(slow[0]["outcome"], json!("ok"), "{records:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_outlasts_the_drain_timeout_is_cut_off_and_the_exit_code_is_1() {
    let lab = LabServer::start().await;
    let mounts = lab.mounts_file("");
    let dir = StateDir::new();
    let mut server = StdioChild::start(&mounts, &dir, &["--drain-timeout", "200ms"]);
    server.send(INITIALIZE).await;
    server.next_answer().await.expect("the initialize answer");
    server.send(INITIALIZED).await;
    server.send(&slow_call("slow", 30_000)).await;
    started(&lab, 1).await;
    server.signal(Signal::SIGTERM);
    assert_eq!(
        server.next_answer().await,
        None,
        "the cut-off call got no answer"
    );
    let (code, stderr) = server.exit().await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("1 requests were still in flight when the drain ended (--drain-timeout)"),
        "{stderr}"
    );
    let records = audit_records(&format!("sqlite:{}/audit.db", dir.path())).await;
    let outcomes: Vec<&Value> = records
        .iter()
        .filter(|record| record["tool"] == json!("lab_slow"))
        .map(|record| &record["outcome"])
        .collect();
    assert_eq!(
        outcomes,
        [&json!("cancelled")],
        "the cut-off call is audited as cancelled: {records:#?}"
    );
}

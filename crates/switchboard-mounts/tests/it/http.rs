//! A server reached over streamable HTTP: server-everything started in its `streamableHttp`
//! mode on a free loopback port. Its tools are mounted and called like a stdio server's, its
//! credential comes from the variable the file names, and closing the mounts ends the HTTP
//! session (the server logs the `DELETE`).

use std::{process::Stdio, time::Duration};

use serde_json::json;
use switchboard_core::Initiator;
use switchboard_mounts::{Mounts, StartError, Strictness};
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    process::{Child, Command},
    sync::mpsc,
};

use crate::servers::{caller, config, npm_bin, registry};

/// server-everything over HTTP on a free port, and the lines it prints on stdout.
async fn http_server() -> (Child, u16, mpsc::UnboundedReceiver<String>) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port");
    let mut child = Command::new(npm_bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("server-everything starts");
    let (lines, received) = mpsc::unbounded_channel();
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    for stream in [
        Box::new(stdout) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
        Box::new(stderr),
    ] {
        let lines = lines.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                let _ = lines.send(line);
            }
        });
    }
    let mut received = received;
    let listening = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = received.recv().await {
            if line.contains("listening on port") {
                return;
            }
        }
    })
    .await;
    assert!(
        listening.is_ok(),
        "server-everything did not listen on {port}"
    );
    (child, port, received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_is_mounted_called_and_its_session_ended_on_close() {
    let (_server, port, mut logged) = http_server().await;
    // The token's variable must be set: PATH is, everywhere (the server takes any token).
    let text = format!(
        "[[server]]\nid = \"remote\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env = \"PATH\"\ncategory = \"read\"\n"
    );
    let missing = {
        let registry = registry().await;
        let unset = text.replace("\"PATH\"", "\"SWITCHBOARD_TEST_UNSET_VARIABLE\"");
        let mounts = Mounts::new(config(&unset));
        let failed = mounts
            .start(&registry, Strictness::Lenient)
            .await
            .expect("lenient");
        registry.shutdown().await;
        failed
    };
    assert!(
        matches!(missing.as_slice(), [StartError::Credential { variable, .. }] if variable == "SWITCHBOARD_TEST_UNSET_VARIABLE"),
        "{missing:?}"
    );

    let registry = registry().await;
    let mounts = Mounts::new(config(&text));
    mounts
        .start(&registry, Strictness::Strict)
        .await
        .expect("the HTTP server is mounted");
    let status = mounts.status().await;
    assert_eq!(status[0].pid, None, "nothing was spawned");
    let answer = registry
        .invoke(
            "remote_get-sum",
            json!({"a": 20, "b": 22}),
            &caller(Initiator::Agent, false),
        )
        .await
        .expect("the mounted HTTP tool answers");
    assert!(answer.to_string().contains("42"), "{answer}");

    mounts.close().await;
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(line) = logged.recv().await {
            if line.contains("session termination request") {
                return;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "closing the mounts sent no session DELETE");
    registry.shutdown().await;
}

//! A raw line client of `switchboard serve --stdio`, for tests that send what a well-behaved
//! client never would: the child and its standard streams, each wait bounded by `common::LIMIT`,
//! the child killed on drop.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines},
    process::{Child, ChildStdin, ChildStdout},
};

use crate::common::{bounded, exit_of, switchboard};

pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"stdio-test","version":"1"}}}"#;
pub(crate) const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
pub(crate) const WHOAMI: &str = r#"{"jsonrpc":"2.0","id":"whoami","method":"tools/call","params":{"name":"core_get_current_user","arguments":{}}}"#;

/// A `switchboard serve --stdio` child and a raw line client on its standard streams.
pub(crate) struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl StdioServer {
    /// Starts `switchboard serve --stdio` as alice, an acme admin, with `extra` flags.
    pub(crate) fn start(extra: &[&str]) -> Self {
        let mut args = vec![
            "serve", "--stdio", "--org", "acme", "--user", "alice", "--role", "admin",
        ];
        args.extend_from_slice(extra);
        let mut child = switchboard(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        Self {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        }
    }

    pub(crate) async fn send(&mut self, line: &str) {
        bounded(
            "writing a line",
            self.stdin.write_all(format!("{line}\n").as_bytes()),
        )
        .await
        .expect("the server reads its stdin");
    }

    /// The next message the server wrote: a JSON-RPC 2.0 object, or the test fails (also when
    /// the server ended).
    pub(crate) async fn next(&mut self) -> Value {
        let line = self.next_line().await;
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {line:?}"));
        assert_eq!(message["jsonrpc"], json!("2.0"), "{line}");
        message
    }

    /// The next line the server wrote, as written (the test fails if the server ended).
    pub(crate) async fn next_line(&mut self) -> String {
        bounded("reading a line", self.lines.next_line())
            .await
            .expect("stdout is readable")
            .expect("the server is still running and writing")
    }

    /// The next message that is not a notification.
    pub(crate) async fn next_answer_or_request(&mut self) -> Value {
        loop {
            let message = self.next().await;
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// The answer with `id`, failing on any other answer or request that comes first.
    pub(crate) async fn answer(&mut self, id: &Value) -> Value {
        let message = self.next_answer_or_request().await;
        assert_eq!(&message["id"], id, "expected the answer to {id}: {message}");
        assert!(message.get("method").is_none(), "{message}");
        message
    }

    pub(crate) async fn ping(&mut self, id: &str) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string())
            .await;
        let answer = self.answer(&json!(id)).await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }

    pub(crate) async fn initialize(&mut self) {
        self.send(INITIALIZE).await;
        let answer = self.answer(&json!("init")).await;
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        self.send(INITIALIZED).await;
    }

    pub(crate) async fn whoami(&mut self) {
        self.send(WHOAMI).await;
        let answer = self.answer(&json!("whoami")).await;
        assert_eq!(
            answer["result"]["structuredContent"]["user_id"],
            json!("alice"),
            "{answer}"
        );
    }

    /// Calls a mutating tool, which the server turns into an `elicitation/create` request to
    /// the client while the call waits; returns that request.
    pub(crate) async fn call_needing_approval(&mut self, id: &Value) -> Value {
        let call = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {
                "name": "roster_assign_shift",
                "arguments": {"shift_id": "acme-2026-11-24-pm", "user_id": "sam"},
            },
        });
        self.send(&call.to_string()).await;
        let request = self.next_answer_or_request().await;
        assert_eq!(request["method"], json!("elicitation/create"), "{request}");
        request
    }

    /// Closes stdin and checks that the server ends on its own, successfully.
    pub(crate) async fn finish(self) {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = exit_of("the server exiting", &mut child).await;
        assert!(status.success(), "{status:?}");
    }
}

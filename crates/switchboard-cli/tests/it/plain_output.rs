//! Output a person can trust when it is not a terminal: log lines written to a pipe carry no
//! ANSI colour codes, `serve --stdio` started by a client (stdin piped) prints nothing but its
//! logs (by default, where it keeps each store), and a client's mistake (an unknown tool) is an
//! info line in our words, not a warning
//! with a Rust debug dump. Colour and the "waiting for an MCP client" line are for terminals only; their
//! decision is unit-tested in the binary (`logging.rs`), and `docs/cli.md` shows the terminal
//! case.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use crate::{
    common::{bounded, switchboard},
    stdio_client::{INITIALIZE, INITIALIZED},
};

/// A `requestState` key, so that `serve` has nothing to warn about.
const STATE_KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// Runs `serve --stdio` with a piped stdin that gets `lines` and is closed once every request
/// among them is answered, and returns its standard error.
async fn serve_stdio_stderr(extra_env: &[(&str, &str)], lines: &[&str]) -> String {
    let mut command = switchboard(&[
        "serve", "--stdio", "--org", "acme", "--user", "alice", "--role", "admin",
    ]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in extra_env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("the binary starts");
    let mut stdin = child.stdin.take().expect("piped stdin");
    for line in lines {
        let line = format!("{line}\n");
        bounded("writing to the server", stdin.write_all(line.as_bytes()))
            .await
            .expect("the server reads its stdin");
    }
    let requests = lines
        .iter()
        .filter(|line| line.contains(r#""id":"#))
        .count();
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    for _ in 0..requests {
        bounded("an answer", stdout.next_line())
            .await
            .expect("the server writes its answers")
            .expect("an answer to every request");
    }
    drop(stdin);
    let output = bounded("serve --stdio on a closed stdin", child.wait_with_output())
        .await
        .expect("the binary runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stderr).expect("standard error is UTF-8")
}

#[tokio::test]
async fn logs_written_to_a_pipe_carry_no_colour_codes() {
    // Without a configured key, `serve` warns that it generated one: a log line to look at.
    let stderr = serve_stdio_stderr(&[], &[]).await;
    assert!(stderr.contains("WARN"), "{stderr}");
    assert!(stderr.contains("requestState key"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "no escape codes in a pipe: {stderr:?}"
    );
}

#[tokio::test]
async fn a_client_that_pipes_stdin_is_not_told_to_wait() {
    let stderr = serve_stdio_stderr(&[("NO_COLOR", "1")], &[]).await;
    assert!(!stderr.contains("waiting for an MCP client"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

#[tokio::test]
async fn an_unknown_tool_is_the_clients_mistake_not_our_warning() {
    const UNKNOWN: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#;
    let calls = [INITIALIZE, INITIALIZED, UNKNOWN];
    let quiet = serve_stdio_stderr(&[("SWITCHBOARD_STATE_KEY", STATE_KEY)], &calls).await;
    // At the default level: the start-up lines saying where each store is kept (audit,
    // proposals, runs, the roster), and nothing about the client's mistake.
    let lines: Vec<&str> = quiet.lines().collect();
    assert_eq!(lines.len(), 4, "{quiet}");
    assert!(
        lines
            .iter()
            .all(|line| line.contains(" INFO switchboard::stores: ")),
        "nothing else at the default level: {quiet}"
    );

    let told = serve_stdio_stderr(
        &[
            ("SWITCHBOARD_STATE_KEY", STATE_KEY),
            ("RUST_LOG", "switchboard_mcp=info"),
        ],
        &calls,
    )
    .await;
    let line = told
        .lines()
        .find(|line| line.contains("refused an MCP tools/call"))
        .unwrap_or_else(|| panic!("an info line says what was refused: {told}"));
    assert!(line.contains("INFO"), "{line}");
    assert!(line.contains("no tool is named `no_such_tool`"), "{line}");
    assert!(!told.contains("ErrorData {"), "no debug dump: {told}");
}

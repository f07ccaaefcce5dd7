//! Output a person can trust when it is not a terminal: log lines written to a pipe carry no
//! ANSI colour codes, and `serve --stdio` started by a client (stdin piped) prints nothing but
//! its logs. Colour and the "waiting for an MCP client" line are for terminals only; their
//! decision is unit-tested in the binary (`logging.rs`), and `docs/cli.md` shows the terminal
//! case.

use std::process::Stdio;

use crate::common::{bounded, switchboard};

/// Runs `serve --stdio` with an empty, piped stdin (a client that closes at once) and returns
/// its standard error.
async fn serve_stdio_stderr(extra_env: &[(&str, &str)]) -> String {
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
    let child = command.spawn().expect("the binary starts");
    let output = bounded("serve --stdio on a closed stdin", child.wait_with_output())
        .await
        .expect("the binary runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stderr).expect("standard error is UTF-8")
}

#[tokio::test]
async fn logs_written_to_a_pipe_carry_no_colour_codes() {
    // Without a configured key, `serve` warns that it generated one: a log line to look at.
    let stderr = serve_stdio_stderr(&[]).await;
    assert!(stderr.contains("WARN"), "{stderr}");
    assert!(stderr.contains("requestState key"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "no escape codes in a pipe: {stderr:?}"
    );
}

#[tokio::test]
async fn a_client_that_pipes_stdin_is_not_told_to_wait() {
    let stderr = serve_stdio_stderr(&[("NO_COLOR", "1")]).await;
    assert!(!stderr.contains("waiting for an MCP client"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

//! `switchboard serve --http` flags, end to end: the built binary refuses what it must before
//! it starts (a non-loopback address without tokens, a bad token file, a bad OAuth file: exit
//! 2, nothing on stdout), with `--tokens` it needs no identity flags and answers 401, 403 and
//! 200 as `docs/mcp.md` says, and with `--oauth` it answers 401 with a challenge naming the
//! metadata document it serves. HTTP is spoken by hand over TCP (the CLI has no HTTP client).
//! Every wait is bounded; the server child is killed on drop.

use crate::common::{
    TempFile, bounded, killed, line_containing, mcp_address, stderr_lines, switchboard,
};
use std::process::{Output, Stdio};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The token the test file maps to acme/alice, and its SHA-256 (`printf %s ... | sha256sum`).
const TOKEN: &str = "test";
const TOKEN_SHA256: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

async fn refused(args: &[&str]) -> String {
    let output: Output = bounded("the refusal", switchboard(args).output())
        .await
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_address_without_tokens_is_refused_before_starting() {
    let stderr = refused(&[
        "serve",
        "--http",
        "0.0.0.0:0",
        "--org",
        "acme",
        "--user",
        "alice",
    ])
    .await;
    assert!(
        stderr.contains("--tokens")
            && stderr.contains("127.0.0.1")
            && stderr.contains("acme/alice"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_file_is_a_usage_error_naming_it_without_echoing_secrets() {
    let stderr = refused(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--tokens",
        "/no/such/tokens.toml",
    ])
    .await;
    assert!(
        stderr.contains("/no/such/tokens.toml") && stderr.contains("--tokens"),
        "{stderr}"
    );

    let pasted = TempFile::new(
        "[[token]]\nsha256 = \"my-actual-secret\"\norg = \"acme\"\nuser = \"alice\"\n",
    );
    let stderr = refused(&["serve", "--http", "127.0.0.1:0", "--tokens", pasted.path()]).await;
    assert!(
        stderr.contains("sha256sum") && stderr.contains("token #1"),
        "{stderr}"
    );
    assert!(!stderr.contains("my-actual-secret"), "{stderr}");
}

/// Sends one HTTP/1.1 request and returns the whole answer (the server closes after it).
async fn exchange(addr: &str, headers: &[&str], body: &str) -> String {
    let mut stream = bounded("connecting", tokio::net::TcpStream::connect(addr))
        .await
        .expect("connects");
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    request.push_str(body);
    bounded("sending", stream.write_all(request.as_bytes()))
        .await
        .expect("sent");
    let mut answer = Vec::new();
    bounded("reading", stream.read_to_end(&mut answer))
        .await
        .expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_tokens_no_identity_flags_are_needed_and_requests_are_checked() {
    let file = TempFile::new(&format!(
        "[[token]]\nsha256 = \"{TOKEN_SHA256}\"\norg = \"acme\"\nuser = \"alice\"\nroles = [\"admin\"]\n"
    ));
    let mut child = switchboard(&["serve", "--http", "127.0.0.1:0", "--tokens", file.path()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stderr = stderr_lines(&mut child);
    let started = bounded("the start-up line", stderr.next_line())
        .await
        .expect("stderr is readable")
        .expect("a start-up line");
    assert!(
        started.contains("bearer tokens") && started.contains("(1 token)"),
        "{started}"
    );
    let addr = mcp_address(&started)
        .expect("the URL on the start-up line")
        .to_owned();

    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let answer = exchange(&addr, &[], initialize).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer realm=\"switchboard\""),
        "{answer}"
    );

    let bearer = format!("Authorization: Bearer {TOKEN}");
    let answer = exchange(
        &addr,
        &[&bearer, "Origin: http://evil.example.com"],
        initialize,
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");

    let answer = exchange(&addr, &[&bearer], initialize).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"serverInfo\""), "{answer}");

    killed(&mut child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_oauth_a_request_without_a_token_is_told_where_the_metadata_is() {
    // The issuer need not answer for this: the challenge and the metadata are the server's.
    let file = TempFile::new(
        "issuer = \"https://auth.example.com\"\n\
         resource = \"https://mcp.example.com/mcp\"\n\
         scopes_supported = [\"mcp\"]\n",
    );
    let mut child = switchboard(&["serve", "--http", "127.0.0.1:0", "--oauth", file.path()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stderr = stderr_lines(&mut child);
    let started = line_containing("the start-up line", &mut stderr, "serving MCP at").await;
    assert!(
        started.contains("OAuth access tokens of https://auth.example.com"),
        "{started}"
    );
    let addr = mcp_address(&started)
        .expect("the URL on the start-up line")
        .to_owned();

    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let answer = exchange(&addr, &[], initialize).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains(
            "www-authenticate: bearer resource_metadata=\"https://mcp.example.com/.well-known/\
             oauth-protected-resource/mcp\""
        ),
        "{answer}"
    );
    let answer = exchange(&addr, &["Authorization: Bearer not.a.jwt"], initialize).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(answer.contains("error=\"invalid_token\""), "{answer}");

    // The metadata document is served without a token.
    let mut stream = bounded("connecting", tokio::net::TcpStream::connect(&addr))
        .await
        .expect("connects");
    let request = format!(
        "GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {addr}\r\n\
         Connection: close\r\n\r\n"
    );
    bounded("sending", stream.write_all(request.as_bytes()))
        .await
        .expect("sent");
    let mut answer = Vec::new();
    bounded("reading", stream.read_to_end(&mut answer))
        .await
        .expect("read");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains("\"authorization_servers\":[\"https://auth.example.com\"]")
            && answer.contains("\"resource\":\"https://mcp.example.com/mcp\""),
        "{answer}"
    );

    killed(&mut child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_oauth_file_or_oauth_with_tokens_is_refused_before_starting() {
    let file =
        TempFile::new("issuer = \"http://auth.example.com\"\nresource = \"https://a/mcp\"\n");
    let stderr = refused(&["serve", "--http", "127.0.0.1:0", "--oauth", file.path()]).await;
    assert!(
        stderr.contains("`issuer`") && stderr.contains("https://") && stderr.contains("--oauth"),
        "{stderr}"
    );
    let stderr = refused(&[
        "serve",
        "--http",
        "--oauth",
        file.path(),
        "--tokens",
        file.path(),
    ])
    .await;
    assert!(stderr.contains("--tokens"), "{stderr}");

    // The config file's `[serve] oauth` is read the same way, and named in the message.
    let config = TempFile::new(&format!("[serve]\noauth = \"{}\"\n", file.path()));
    let stderr = refused(&["serve", "--http", "127.0.0.1:0", "--config", config.path()]).await;
    assert!(
        stderr.contains("`issuer`") && stderr.contains("[serve] table"),
        "{stderr}"
    );
}

//! Keeps `docs/embed.md` true: its `Cargo.toml`, `src/desk.rs` and `src/main.rs` blocks are
//! written into a directory outside this workspace, as a crate of someone else's would be, with
//! the `switchboard` dependency pointed at this repository; the crate is built and run, and its
//! output must be the output the guide shows. Then the same binary serves MCP over stdio, and
//! must answer with the guide's `ServerInfo` and tools. Last, the crate's own test runs the
//! conformance kit on its tools (`cargo test`), as the guide's step 5 shows.
//!
//! The crate has no `serde`, `schemars` or `validator` dependency of its own, so this is also
//! the proof that `#[switchboard::derives(...)]` works from outside the workspace. It builds in
//! `target/embed-guide` (a cold build of the embedder's dependencies the first time, then
//! incremental), offline, from a copy of this workspace's `Cargo.lock`.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use serde_json::{Value, json};

/// The info strings that mark the guide's files, and where each goes.
const FILES: [(&str, &str); 4] = [
    ("toml file=Cargo.toml", "Cargo.toml"),
    ("rust file=src/desk.rs", "src/desk.rs"),
    ("rust file=src/main.rs", "src/main.rs"),
    ("rust file=src/checks.rs", "src/checks.rs"),
];

/// The dependency line as the guide writes it; the test points it at this repository.
const GUIDE_SOURCE: &str = r#"git = "https://example.invalid/switchboard""#;

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace root")
        .to_path_buf()
}

/// The body of the one fenced block whose info string is `info`.
fn block<'a>(guide: &'a str, info: &str) -> &'a str {
    let fence = format!("```{info}\n");
    let mut found = guide.match_indices(&fence);
    let (start, _) = found
        .next()
        .unwrap_or_else(|| panic!("docs/embed.md has no block marked ```{info}"));
    assert!(
        found.next().is_none(),
        "docs/embed.md has two blocks marked ```{info}"
    );
    let body = &guide[start + fence.len()..];
    let end = body
        .find("\n```\n")
        .unwrap_or_else(|| panic!("the ```{info} block of docs/embed.md is not closed"));
    &body[..=end]
}

/// Writes the guide's crate into `dir`, depending on this repository's facade.
fn write_crate(guide: &str, root: &Path, dir: &Path) {
    for (info, file) in FILES {
        let mut text = block(guide, info).to_owned();
        if file == "Cargo.toml" {
            assert!(
                text.contains(GUIDE_SOURCE),
                "the guide's Cargo.toml should name `{GUIDE_SOURCE}`: this test replaces it"
            );
            let facade = root.join("crates/switchboard");
            text = text.replace(
                GUIDE_SOURCE,
                &format!("path = {:?}", facade.display().to_string()),
            );
        }
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().expect("a file inside the crate"))
            .expect("create the crate's directories");
        std::fs::write(&path, text).expect("write the crate's file");
    }
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
}

/// Runs `cargo COMMAND --offline --quiet` in the crate in `dir`, and fails with its output
/// unless it succeeds.
fn cargo(root: &Path, dir: &Path, command: &str) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(dir)
        .args([command, "--offline", "--quiet"])
        .env("CARGO_TARGET_DIR", root.join("target/embed-guide"))
        .output()
        .unwrap_or_else(|error| panic!("cargo {command} did not start: {error}"));
    assert!(
        output.status.success(),
        "`cargo {command}` fails in the crate of docs/embed.md:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Builds the crate in `dir` and returns its binary.
fn build(root: &Path, dir: &Path) -> PathBuf {
    cargo(root, dir, "build");
    root.join("target/embed-guide/debug/helpdesk")
}

#[test]
fn the_guide_builds_outside_the_workspace_runs_and_serves_mcp() {
    let root = project_root();
    let guide = std::fs::read_to_string(root.join("docs/embed.md")).expect("read docs/embed.md");
    let dir = tempfile::tempdir().expect("a directory outside the workspace");
    write_crate(&guide, &root, dir.path());
    let binary = build(&root, dir.path());

    let run = Command::new(&binary)
        .output()
        .expect("run the guide's binary");
    assert!(
        run.status.success(),
        "the guide's binary failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        block(&guide, "text output"),
        "the guide's binary printed something else than docs/embed.md shows"
    );

    let answers = serve_stdio(
        &binary,
        &[
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "embed-guide-test", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "desk_list_tickets", "arguments": {"open_only": true}}}),
        ],
    );
    let initialize = &answers[0]["result"];
    assert_eq!(initialize["serverInfo"]["name"], "helpdesk");
    assert_eq!(initialize["serverInfo"]["version"], "0.1.0");
    let instructions = initialize["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.starts_with("Acme's help desk tickets."),
        "{instructions}"
    );
    // The identity is staff: it is permitted to list tickets, not to close them.
    let tools: Vec<&str> = answers[1]["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(tools, ["desk_list_tickets"]);
    let listed = &answers[2]["result"]["structuredContent"]["tickets"];
    assert_eq!(listed.as_array().map(Vec::len), Some(2), "{}", answers[2]);

    cargo(&root, dir.path(), "test");
}

/// Sends `messages` to `binary serve`, one per line, closes its stdin and returns the answers
/// (the lines with an `id`), in the order of their ids (requests are answered concurrently).
fn serve_stdio(binary: &Path, messages: &[Value]) -> Vec<Value> {
    let mut child = Command::new(binary)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the guide's binary with `serve`");
    {
        let mut stdin = child.stdin.take().expect("a piped stdin");
        for message in messages {
            writeln!(stdin, "{message}").expect("write a message");
        }
    }
    let output = child
        .wait_with_output()
        .expect("the server ends with its stdin");
    assert!(
        output.status.success(),
        "`helpdesk serve` failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut answers: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each stdout line is JSON"))
        .filter(|message: &Value| message.get("id").is_some())
        .collect();
    answers.sort_by_key(|answer| answer["id"].as_u64());
    assert_eq!(answers.len(), 3, "{answers:?}");
    answers
}

//! The peer SDKs' servers, each in a child process as its users run it: the official TypeScript
//! SDK (npm `@modelcontextprotocol/sdk`) on Node, and FastMCP (PyPI `fastmcp`) on Python, each
//! in its default and its fastest documented mode. The server scripts are in `http/peers/`
//! (each says which documentation its modes follow); the packages are the versions pinned in
//! `xtask/mcp-servers`, installed under `target/mcp-servers` by `cargo xtask mcp-servers`,
//! which this module runs when they are missing or stale.
//!
//! Every peer serves the one tool plain rmcp serves (`servers.rs`): the captured structured
//! result, as JSON text and as `structuredContent`.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    process::{Child, Command},
};

use crate::TOOL;

/// How long a peer may take to announce its address (Python imports take seconds on a busy
/// machine).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The files in `xtask/mcp-servers` that pin the packages; the install copies them beside
/// what it installed, so that a pin changed since is noticed.
const PINS: [&str; 3] = ["package.json", "package-lock.json", "requirements.txt"];

/// What the peers need under `target/mcp-servers`.
const NEEDED: [&str; 2] = [
    "node_modules/@modelcontextprotocol/sdk/package.json",
    "venv/bin/fastmcp",
];

/// The command that installs the pinned packages.
const INSTALL: &str = "cargo xtask mcp-servers";

/// A peer SDK.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Sdk {
    TypeScript,
    FastMcp,
}

/// Which of its documented setups a peer runs in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// What its guide starts with: sessions, answers as SSE streams.
    Default,
    /// No sessions, plain JSON answers.
    Fastest,
}

impl Mode {
    fn argument(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Fastest => "fastest",
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn installed_dir() -> PathBuf {
    workspace_root().join("target/mcp-servers")
}

/// Whether `target/mcp-servers` holds what the peers need, at the pinned versions.
fn up_to_date() -> bool {
    let root = workspace_root();
    let installed = installed_dir();
    PINS.iter().all(|file| {
        let pinned = std::fs::read(root.join("xtask/mcp-servers").join(file));
        let copied = std::fs::read(installed.join(file));
        matches!((pinned, copied), (Ok(pinned), Ok(copied)) if pinned == copied)
    }) && NEEDED.iter().all(|path| installed.join(path).exists())
}

/// Installs the pinned packages with `cargo xtask mcp-servers` unless they already are.
pub(crate) async fn ensure_installed() -> anyhow::Result<()> {
    if up_to_date() {
        return Ok(());
    }
    println!("The peer SDKs are not installed at their pinned versions: running `{INSTALL}`");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args(["xtask", "mcp-servers"])
        .stdin(Stdio::null())
        .status()
        .await
        .with_context(|| format!("starting `{INSTALL}`"))?;
    if !status.success() || !up_to_date() {
        bail!(
            "`{INSTALL}` did not install the peer SDKs ({status}); run it by hand and read its \
             errors, or leave the peers out: `cargo bench -p switchboard-cli --bench http -- \
             switchboard rmcp`"
        );
    }
    Ok(())
}

/// A peer's server in a child process, killed on drop.
#[derive(Debug)]
pub(crate) struct Peer {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl Peer {
    /// Starts `sdk`'s server in `mode`, serving `result` as the answer of every call.
    pub(crate) async fn start(sdk: Sdk, mode: Mode, result: &Value) -> anyhow::Result<Self> {
        let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/http/peers");
        let installed = installed_dir();
        let mut command = match sdk {
            Sdk::TypeScript => {
                let mut command = Command::new("node");
                command
                    .arg(scripts.join("typescript_sdk.cjs"))
                    .env("NODE_PATH", installed.join("node_modules"))
                    .env("NODE_ENV", "production");
                command
            }
            Sdk::FastMcp => {
                let mut command = Command::new(installed.join("venv/bin/python"));
                command
                    .arg(scripts.join("fastmcp_server.py"))
                    .env("PYTHONUNBUFFERED", "1");
                command
            }
        };
        command
            .arg(mode.argument())
            .env("BENCH_TOOL_NAME", TOOL)
            .env("BENCH_TOOL_RESULT", result.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let what = format!("the {sdk:?} server ({})", mode.argument());
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {what}"))?;
        let stdout = child.stdout.take().context("the peer's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let started = Instant::now();
        let addr = loop {
            let remaining = START_TIMEOUT.saturating_sub(started.elapsed());
            let line = tokio::time::timeout(remaining, lines.next_line())
                .await
                .with_context(|| format!("{what} did not announce its address in time"))?
                .with_context(|| format!("reading the output of {what}"))?
                .with_context(|| format!("{what} exited before announcing its address"))?;
            if let Some(addr) = announced_address(&line) {
                break addr;
            }
        };
        // Keep reading, so that a chatty server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Peer { child, addr })
    }

    /// Stops the server.
    pub(crate) async fn stop(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(START_TIMEOUT, self.child.wait()).await;
    }
}

/// The address in `listening on http://ADDR/mcp`.
fn announced_address(line: &str) -> Option<SocketAddr> {
    line.strip_prefix("listening on http://")?
        .strip_suffix("/mcp")?
        .parse()
        .ok()
}

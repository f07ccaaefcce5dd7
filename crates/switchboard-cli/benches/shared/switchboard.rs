//! `switchboard serve --http` in a child process, started as a user starts it: the release
//! binary cargo built for the benchmarks, on a free loopback port, signed in as one identity
//! (`--org`, `--user`, `--role`), every check on, with its audit records, proposals and keys in
//! memory (`--audit memory --approvals memory`: the bench measures the transport and the call
//! path, and `audit_stores` measures the SQLite store) and a temporary state directory, never
//! the user's.

use std::{
    net::SocketAddr,
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    process::{Child, Command},
};

/// How long the binary may take to announce its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Who every request to the binary acts as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Identity {
    pub(crate) org: &'static str,
    pub(crate) user: &'static str,
    pub(crate) role: &'static str,
}

/// `switchboard serve --http` in a child process, killed on drop.
#[derive(Debug)]
pub(crate) struct Switchboard {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl Switchboard {
    /// Starts the binary as `identity` on loopback, and reads the address it announces.
    pub(crate) async fn start(identity: Identity) -> anyhow::Result<Self> {
        let state_dir =
            std::env::temp_dir().join(format!("switchboard-bench-state-{}", std::process::id()));
        let state_dir = state_dir.to_str().context("a UTF-8 temp path")?;
        Self::start_with(&[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--org",
            identity.org,
            "--user",
            identity.user,
            "--role",
            identity.role,
            "--audit",
            "memory",
            "--approvals",
            "memory",
            "--state-dir",
            state_dir,
        ])
        .await
    }

    /// Starts the binary with `args` (a `serve --http` on loopback), and reads the address it
    /// announces.
    pub(crate) async fn start_with(args: &[&str]) -> anyhow::Result<Self> {
        let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // No config file, store or log filter from the environment this bench happens to
        // run in.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("SWITCHBOARD_") {
                command.env_remove(&name);
            }
        }
        command.env_remove("RUST_LOG");
        let mut child = command
            .spawn()
            .context("starting `switchboard serve --http`")?;
        let stderr = child.stderr.take().context("the binary's stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        let started = Instant::now();
        let addr = loop {
            let remaining = START_TIMEOUT.saturating_sub(started.elapsed());
            let line = tokio::time::timeout(remaining, lines.next_line())
                .await
                .context("the binary did not announce its address in time")?
                .context("reading the binary's stderr")?
                .context("the binary exited before announcing its address")?;
            if let Some(addr) = announced_address(&line) {
                break addr;
            }
        };
        // Keep reading, so that a chatty server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Switchboard { child, addr })
    }

    /// Stops the binary.
    pub(crate) async fn stop(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(START_TIMEOUT, self.child.wait()).await;
    }
}

/// The address in `switchboard: serving MCP at http://ADDR/mcp (...)`.
fn announced_address(line: &str) -> Option<SocketAddr> {
    line.split("http://")
        .nth(1)?
        .split("/mcp")
        .next()?
        .parse()
        .ok()
}

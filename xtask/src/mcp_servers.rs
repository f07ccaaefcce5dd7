//! The MCP servers from npm and PyPI that nobody here wrote, installed where the tests and the
//! benchmarks find them: `target/mcp-servers` under the workspace root.
//!
//! The mounting tests mount npm's `@modelcontextprotocol/server-everything` and
//! `server-filesystem` and PyPI's `mcp-server-time`; the HTTP benchmark
//! (`crates/switchboard-cli/benches/http.rs`) serves its peer rows with npm's
//! `@modelcontextprotocol/sdk` and PyPI's `fastmcp`. Their versions are pinned in
//! `xtask/mcp-servers/` (`package.json` with its lock file, `requirements.txt`). [`ensure`]
//! installs them (`npm ci`, and `pip` in a Python venv) whenever what is installed is not what is
//! pinned; `cargo xtask test` and `cargo xtask bench` call it, and `cargo xtask mcp-servers`
//! runs it alone.

use std::{path::Path, process::Command};

use anyhow::{Context as _, bail};

use crate::system_packages::{run_step, runs};

/// The files in `xtask/mcp-servers` that pin the servers, copied beside what they installed.
const PINS: [&str; 3] = ["package.json", "package-lock.json", "requirements.txt"];

/// What must exist under `target/mcp-servers` once the install is done: the npm servers the
/// tests start, the SDK the benchmark's server script loads, and the PyPI programs.
const INSTALLED: [&str; 5] = [
    "node_modules/.bin/mcp-server-everything",
    "node_modules/.bin/mcp-server-filesystem",
    "node_modules/@modelcontextprotocol/sdk/package.json",
    "venv/bin/mcp-server-time",
    "venv/bin/fastmcp",
];

/// Installs the pinned MCP servers under `target/mcp-servers` unless they already are.
pub fn ensure(root: &Path) -> anyhow::Result<()> {
    let pinned = root.join("xtask/mcp-servers");
    let installed = root.join("target/mcp-servers");
    std::fs::create_dir_all(&installed)
        .with_context(|| format!("cannot create {}", installed.display()))?;
    let mut stale = false;
    for file in PINS {
        let wanted = std::fs::read(pinned.join(file))
            .with_context(|| format!("cannot read {}", pinned.join(file).display()))?;
        if std::fs::read(installed.join(file)).ok().as_deref() != Some(&wanted[..]) {
            stale = true;
        }
    }
    if !stale && INSTALLED.iter().all(|path| installed.join(path).exists()) {
        return Ok(());
    }
    for program in ["npm", "python3"] {
        if !runs(program) {
            bail!(
                "the MCP servers of the tests and the HTTP benchmark need `{program}` (Node.js 20 \
                 and Python 3.11 or newer) to install; install it and run again"
            );
        }
    }
    note("installing the pinned MCP servers (npm and PyPI, under target/mcp-servers: a minute)");
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(pinned.join(file), installed.join(file))
            .with_context(|| format!("cannot copy {file} into {}", installed.display()))?;
    }
    run_step(
        "npm ci (in target/mcp-servers)",
        Command::new("npm").current_dir(&installed).args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ]),
    )?;
    let venv = installed.join("venv");
    if !venv.join("bin/pip").exists() {
        run_step(
            "python3 -m venv target/mcp-servers/venv",
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
        )?;
    }
    run_step(
        "pip install -r xtask/mcp-servers/requirements.txt",
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(pinned.join("requirements.txt")),
    )?;
    // Written last: a failed install above is tried again next time.
    std::fs::copy(
        pinned.join("requirements.txt"),
        installed.join("requirements.txt"),
    )
    .context("cannot record the installed requirements")?;
    if let Some(missing) = INSTALLED.iter().find(|path| !installed.join(path).exists()) {
        bail!(
            "the install finished, but target/mcp-servers/{missing} is missing: does \
             xtask/mcp-servers still pin the package that provides it?"
        );
    }
    Ok(())
}

#[allow(
    clippy::print_stderr,
    reason = "a command-line step reports its progress to the terminal"
)]
fn note(text: &str) {
    eprintln!("xtask: {text}");
}

//! Programs from the distribution that a test or a benchmark runs: Chromium and chromedriver
//! for the browser walk, `wrk` for the HTML page benchmark.
//!
//! A fresh machine lacks them, and a test or benchmark that silently skips is worse than one
//! that installs what it needs. So xtask installs the missing Debian packages with `apt-get`
//! when it runs as root, and otherwise fails with the command to run.

use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

/// Debian packages that something needs, and how to tell they are installed.
#[derive(Debug, Clone, Copy)]
pub struct Needed<'a> {
    /// What needs them, for messages: "the browser test".
    pub by: &'a str,
    /// The Debian packages to install.
    pub packages: &'a [&'a str],
}

impl Needed<'_> {
    /// Installs the packages with `apt-get` unless `installed()` already holds, and checks
    /// `installed()` afterwards.
    pub fn ensure(&self, installed: impl Fn() -> bool) -> anyhow::Result<()> {
        if installed() {
            return Ok(());
        }
        let packages = self.packages.join(" ");
        let install = format!("apt-get install -y {packages}");
        if !can_start("apt-get") {
            bail!(
                "{} needs {packages}, and this machine has no apt-get: install them (Debian: \
                 `{install}`) and run again",
                self.by
            );
        }
        if !is_root() {
            bail!(
                "{} needs {packages}: run `sudo apt-get update && sudo {install}` once, then \
                 run again",
                self.by
            );
        }
        note(&format!("installing {packages} for {}", self.by));
        run_step(
            "apt-get update",
            Command::new("apt-get").args(["update", "-q"]),
        )?;
        run_step(
            &install,
            Command::new("apt-get")
                .args(["install", "-y", "-q"])
                .args(self.packages)
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
        if !installed() {
            bail!("`{install}` ran, but {} still cannot find them", self.by);
        }
        Ok(())
    }
}

/// Whether `program --version` runs and succeeds.
pub fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Whether `program` can be started at all, whatever its exit status (`wrk --version` exits
/// with 1).
pub fn can_start(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

#[allow(
    clippy::print_stderr,
    reason = "a command-line step reports its progress to the terminal"
)]
fn note(text: &str) {
    eprintln!("xtask: {text}");
}

/// Runs `command`, announced as `what`, and fails unless it succeeds.
pub(crate) fn run_step(what: &str, command: &mut Command) -> anyhow::Result<()> {
    note(&format!("running {what}"));
    let status = command
        .status()
        .with_context(|| format!("cannot start `{what}`: is it on PATH?"))?;
    if !status.success() {
        bail!("`{what}` failed ({status})");
    }
    Ok(())
}

//! `cargo xtask test`: every test, with what the tests need installed first.
//!
//! The browser walk (`switchboard-cli`'s `browser_walk.rs`) drives Chromium through
//! `chromedriver`, which a fresh machine does not have. Rather than let that test skip, this
//! command installs Debian's `chromium` and `chromium-driver` when `chromedriver` is missing
//! (with `apt-get`, as root, or saying what to run otherwise), then runs the workspace's tests
//! with cargo-nextest and the doctests with `cargo test --doc`, exactly as `.ci/run` does.

use std::process::Command;

use anyhow::{Context as _, bail};

use crate::project_root;

/// How to run the tests.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Pass `--locked` to cargo and `--no-fail-fast` to nextest (what CI wants).
    pub ci: bool,
}

/// Installs what the tests need, then runs them; fails on the first failing step.
pub fn run(options: &Options) -> anyhow::Result<()> {
    ensure_chromium()?;
    let root = project_root();
    let mut nextest = Command::new("cargo");
    nextest
        .current_dir(&root)
        .args(["nextest", "run", "--workspace"]);
    let mut doctests = Command::new("cargo");
    doctests
        .current_dir(&root)
        .args(["test", "--workspace", "--doc"]);
    if options.ci {
        nextest.args(["--locked", "--no-fail-fast"]);
        doctests.arg("--locked");
    }
    note(
        "the compile-fail test (switchboard-core::it ui::ui) builds its own copy of the dependencies: about two minutes on a fresh clone",
    );
    run_step("cargo nextest run --workspace", &mut nextest)?;
    run_step("cargo test --workspace --doc", &mut doctests)
}

#[allow(
    clippy::print_stderr,
    reason = "a command-line step reports its progress to the terminal"
)]
fn note(text: &str) {
    eprintln!("xtask test: {text}");
}

fn run_step(what: &str, command: &mut Command) -> anyhow::Result<()> {
    note(&format!("running {what}"));
    let status = command
        .status()
        .with_context(|| format!("cannot start `{what}`: is cargo on PATH?"))?;
    if !status.success() {
        bail!("`{what}` failed ({status})");
    }
    Ok(())
}

/// Whether `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Installs Chromium and chromedriver from the distribution when `chromedriver` is missing.
fn ensure_chromium() -> anyhow::Result<()> {
    if runs("chromedriver") && (runs("chromium") || runs("chromium-browser")) {
        return Ok(());
    }
    const INSTALL: &str = "apt-get install -y chromium chromium-driver";
    if !runs("apt-get") {
        bail!(
            "the browser test needs Chromium and chromedriver, and this machine has no apt-get: \
             install them (Debian: `{INSTALL}`) and run again"
        );
    }
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0");
    if !is_root {
        bail!(
            "the browser test needs Chromium and chromedriver: run `sudo apt-get update && \
             sudo {INSTALL}` once, then run again"
        );
    }
    note("installing Chromium and chromedriver for the browser test (about a minute)");
    run_step(
        "apt-get update",
        Command::new("apt-get").args(["update", "-q"]),
    )?;
    run_step(
        INSTALL,
        Command::new("apt-get")
            .args(["install", "-y", "-q", "chromium", "chromium-driver"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    if !runs("chromedriver") {
        bail!("`{INSTALL}` ran, but `chromedriver --version` still fails");
    }
    Ok(())
}

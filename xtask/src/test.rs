//! `cargo xtask test`: every test, with what the tests need installed first.
//!
//! The browser walk (`switchboard-cli`'s `browser_walk.rs`) drives Chromium through
//! `chromedriver`, which a fresh machine does not have. Rather than let that test skip, this
//! command installs Debian's `chromium` and `chromium-driver` when `chromedriver` is missing
//! (with `apt-get`, as root, or saying what to run otherwise), then runs the workspace's tests
//! with cargo-nextest and the doctests with `cargo test --doc`, exactly as `.ci/run` does.

use std::process::Command;

use crate::{
    project_root,
    system_packages::{Needed, run_step, runs},
};

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

/// Installs Chromium and chromedriver from the distribution when `chromedriver` is missing.
fn ensure_chromium() -> anyhow::Result<()> {
    let chromium = Needed {
        by: "the browser test",
        packages: &["chromium", "chromium-driver"],
    };
    chromium.ensure(|| runs("chromedriver") && (runs("chromium") || runs("chromium-browser")))
}

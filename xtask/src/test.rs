//! `cargo xtask test`: every test, with what the tests need installed first.
//!
//! The browser walk (`switchboard-cli`'s `browser_walk.rs`) drives Chromium through
//! `chromedriver`, which a fresh machine does not have. Rather than let that test skip, this
//! command installs Debian's `chromium` and `chromium-driver` when `chromedriver` is missing
//! (with `apt-get`, as root, or saying what to run otherwise), then runs the workspace's tests
//! with cargo-nextest and the doctests with `cargo test --doc`, exactly as `.ci/run` does.
//!
//! The mounting tests (`switchboard-mounts`, and `--mounts` in `switchboard-cli`) mount real MCP
//! servers that nobody here wrote: npm's `@modelcontextprotocol/server-everything` and
//! `server-filesystem`, and PyPI's `mcp-server-time`. This command installs the versions pinned
//! in `xtask/mcp-servers/` under `target/mcp-servers` whenever what is installed is not what is
//! pinned (see [`crate::mcp_servers`]).
//!
//! The PostgreSQL tests need a real server. This command installs Debian's `postgresql` when
//! its server programs are missing, starts one throw-away cluster for the run (see
//! [`crate::postgres`]), passes its URL to nextest and the doctests in
//! `SWITCHBOARD_TEST_POSTGRES_URL`, and stops and deletes it afterwards, whether the tests
//! passed or not. `--postgres` runs the PostgreSQL tests alone ([`POSTGRES_TESTS`]).
//!
//! The cluster link's code is built only with the crates' `cluster` features (ractor's own
//! `cluster` feature changes what every actor message must implement), which no default build
//! turns on; a second nextest run builds and tests the crates that hold it with
//! [`CLUSTER_FEATURES`], and a third the command line's two-process test of it
//! ([`CLUSTER_CLI_TESTS`]).

use std::process::Command;

use switchboard_test_postgres::URL_VARIABLE;

use crate::{
    postgres::{self, OutliveCtrlC, POSTGRES_TESTS},
    project_root,
    system_packages::{Needed, run_step, runs},
};

/// The crates whose code differs with ractor's `cluster` feature, tested a second time with it.
pub const CLUSTER_CRATES: &[&str] = &["switchboard-registry", "switchboard-link"];

/// The features that turn the cluster link on in [`CLUSTER_CRATES`].
pub const CLUSTER_FEATURES: &str = "switchboard-registry/cluster,switchboard-link/cluster";

/// The command line's tests of the cluster link, run with its `cluster` feature (a nextest
/// filter).
pub const CLUSTER_CLI_TESTS: &str = "test(cluster)";

/// How to run the tests.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Pass `--locked` to cargo and `--no-fail-fast` to nextest (what CI wants).
    pub ci: bool,
    /// Install what the tests need, and stop there.
    pub prepare: bool,
    /// Only the PostgreSQL tests ([`POSTGRES_TESTS`]), and no doctests.
    pub postgres: bool,
}

/// Installs what the tests need, then runs them; fails on the first failing step.
pub fn run(options: &Options) -> anyhow::Result<()> {
    let root = project_root();
    if !options.postgres {
        ensure_chromium()?;
    }
    postgres::ensure_installed()?;
    if !options.postgres {
        crate::mcp_servers::ensure(&root)?;
    }
    if options.prepare {
        return Ok(());
    }
    // Held until the tests are over: dropping it stops the server and deletes its directory.
    let cluster = postgres::start_cluster()?;
    let _ctrl_c = OutliveCtrlC::new()?;
    let mut nextest = Command::new("cargo");
    nextest
        .current_dir(&root)
        .env(URL_VARIABLE, cluster.url())
        .args(["nextest", "run", "--workspace"]);
    let mut doctests = Command::new("cargo");
    doctests
        .current_dir(&root)
        .env(URL_VARIABLE, cluster.url())
        .args(["test", "--workspace", "--doc"]);
    if options.ci {
        nextest.args(["--locked", "--no-fail-fast"]);
        doctests.arg("--locked");
    }
    if options.postgres {
        nextest.args(["-E", POSTGRES_TESTS]);
        return run_step(
            &format!("cargo nextest run --workspace -E '{POSTGRES_TESTS}'"),
            &mut nextest,
        );
    }
    note(
        "the compile-fail test (switchboard-core::it ui::ui) builds its own copy of the dependencies: about two minutes on a fresh clone",
    );
    run_step("cargo nextest run --workspace", &mut nextest)?;
    let mut cluster_tests = Command::new("cargo");
    cluster_tests.current_dir(&root).args(["nextest", "run"]);
    for package in CLUSTER_CRATES {
        cluster_tests.args(["-p", package]);
    }
    cluster_tests.args(["--features", CLUSTER_FEATURES]);
    if options.ci {
        cluster_tests.args(["--locked", "--no-fail-fast"]);
    }
    run_step(
        &format!("cargo nextest run (the cluster link: --features {CLUSTER_FEATURES})"),
        &mut cluster_tests,
    )?;
    let mut cluster_cli_tests = Command::new("cargo");
    cluster_cli_tests.current_dir(&root).args([
        "nextest",
        "run",
        "-p",
        "switchboard-cli",
        "--features",
        "cluster",
        "-E",
        CLUSTER_CLI_TESTS,
    ]);
    if options.ci {
        cluster_cli_tests.args(["--locked", "--no-fail-fast"]);
    }
    run_step(
        &format!(
            "cargo nextest run -p switchboard-cli --features cluster -E '{CLUSTER_CLI_TESTS}'"
        ),
        &mut cluster_cli_tests,
    )?;
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

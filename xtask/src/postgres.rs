//! The PostgreSQL the tests use: installed from Debian's packages when missing, and one
//! throw-away cluster for a whole test run (`switchboard-test-postgres`).
//!
//! Every test process gets the cluster's URL in `SWITCHBOARD_TEST_POSTGRES_URL` and creates a
//! database of its own there; the cluster lives as long as this process holds it, and is
//! stopped and deleted when it drops, whether the tests passed or not.

use std::time::Instant;

use anyhow::Context as _;
use switchboard_test_postgres::{TestCluster, server_bindir};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::system_packages::Needed;

/// The nextest filter that selects the PostgreSQL tests (`cargo xtask test --postgres`): every
/// test of a crate whose name ends in `-postgres`, and every test whose name contains
/// `postgres`, so a new PostgreSQL crate or test is selected without editing this.
pub const POSTGRES_TESTS: &str = "package(*-postgres) | test(postgres)";

/// Installs Debian's `postgresql` when PostgreSQL's server programs are missing.
pub fn ensure_installed() -> anyhow::Result<()> {
    Needed {
        by: "the PostgreSQL tests",
        packages: &["postgresql"],
    }
    .ensure(|| server_bindir().is_ok())
}

/// Starts a throw-away cluster, saying where and how long it took.
pub fn start_cluster() -> anyhow::Result<TestCluster> {
    let started = Instant::now();
    let cluster = TestCluster::start().context("cannot start the tests' PostgreSQL")?;
    note(&format!(
        "PostgreSQL ({}) started on 127.0.0.1:{} in {} ms, in {}",
        cluster.bindir().display(),
        cluster.port(),
        started.elapsed().as_millis(),
        cluster.data_dir().display()
    ));
    Ok(cluster)
}

/// While held, Ctrl-C does not end this process: the children it reaches (nextest, the
/// server) end, and this process stops the cluster and deletes its directory on the way out.
#[derive(Debug)]
pub struct OutliveCtrlC {
    _signal: Signal,
    _runtime: tokio::runtime::Runtime,
}

impl OutliveCtrlC {
    /// Catches SIGINT from now on.
    pub fn new() -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start a runtime to catch Ctrl-C")?;
        let signal = {
            let _entered = runtime.enter();
            signal(SignalKind::interrupt()).context("cannot catch Ctrl-C")?
        };
        Ok(Self {
            _signal: signal,
            _runtime: runtime,
        })
    }
}

/// `cargo xtask postgres`: a cluster for a developer's shell, until Ctrl-C.
#[allow(
    clippy::print_stdout,
    reason = "the command's output is the line to paste into a shell"
)]
pub fn serve() -> anyhow::Result<()> {
    ensure_installed()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime to wait for Ctrl-C")?;
    let mut interrupt = {
        let _entered = runtime.enter();
        signal(SignalKind::interrupt()).context("cannot catch Ctrl-C")?
    };
    let cluster = start_cluster()?;
    println!(
        "export {}={}",
        switchboard_test_postgres::URL_VARIABLE,
        cluster.url()
    );
    note("running until Ctrl-C; then it is stopped and its directory deleted");
    runtime.block_on(interrupt.recv());
    drop(cluster);
    note("stopped");
    Ok(())
}

#[allow(
    clippy::print_stderr,
    reason = "a command-line step reports its progress to the terminal"
)]
fn note(text: &str) {
    eprintln!("xtask: {text}");
}

//! Why a test could not have its PostgreSQL server or database, in words that say what to run.
//!
//! A test that needs PostgreSQL never skips: without a server it fails, and the message names
//! the command that provides one (`cargo xtask test` installs PostgreSQL and starts a cluster).
//! No message carries a password: URLs in them are redacted.

use std::{fmt, io, process::ExitStatus};

/// Why [`TestCluster`](crate::TestCluster) could not start or stop a cluster.
///
/// `Debug` prints the message, so a test's `.expect(…)` shows what to run.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// `initdb`, `postgres` and `pg_ctl` are not installed.
    #[error(
        "PostgreSQL's server programs (initdb, postgres, pg_ctl) are not installed: none in \
         /usr/lib/postgresql/*/bin, nor in `pg_config --bindir`. Run the tests through \
         `cargo xtask test` (or `cargo xtask test --postgres`), which installs them, or install \
         them yourself (Debian: `apt-get install postgresql`)"
    )]
    BinariesMissing,
    /// The process is root and there is no `postgres` system user to run the server as.
    #[error(
        "PostgreSQL does not run as root, and this machine has no `postgres` system user to run \
         it as: install Debian's `postgresql` package (`apt-get install postgresql`), which \
         creates it, or run the tests as an ordinary user"
    )]
    NoPostgresUser,
    /// A file-system or process operation failed.
    #[error("cannot {action}: {source}")]
    Io {
        /// What was being done: "create a temporary directory".
        action: String,
        /// Why it failed.
        source: io::Error,
    },
    /// One of PostgreSQL's programs exited with a failure.
    #[error("`{command}` failed ({status}):\n{output}")]
    CommandFailed {
        /// The program and its arguments.
        command: String,
        /// How it exited.
        status: ExitStatus,
        /// What it printed.
        output: String,
    },
    /// The server exited before it was ready.
    #[error("the PostgreSQL server exited while starting ({status}); its log:\n{log}")]
    Exited {
        /// How it exited.
        status: ExitStatus,
        /// What it logged while starting.
        log: String,
    },
    /// The server did not report itself ready in time.
    #[error("the PostgreSQL server was not ready after {seconds} s; its log:\n{log}")]
    NotReady {
        /// How long it was given.
        seconds: u64,
        /// What it logged while starting.
        log: String,
    },
    /// Every free port tried was taken by another process before the server could bind it.
    #[error(
        "the PostgreSQL server found each of {attempts} free loopback ports taken by the time \
         it bound it; its last log:\n{log}"
    )]
    NoFreePort {
        /// How many ports were tried.
        attempts: u32,
        /// What the server logged on the last attempt.
        log: String,
    },
}

impl ClusterError {
    /// An [`ClusterError::Io`] for `action`, for `map_err`.
    pub(crate) fn io(action: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let action = action.into();
        move |source| Self::Io { action, source }
    }
}

/// Why [`test_database`](crate::test_database) could not give a test its database.
///
/// `Debug` prints the message, so a test's `.expect(…)` shows what to run.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum DatabaseError {
    /// `SWITCHBOARD_TEST_POSTGRES_URL` is not set.
    #[error(
        "this test needs PostgreSQL, and SWITCHBOARD_TEST_POSTGRES_URL is not set: run the tests \
         through `cargo xtask test` (every test) or `cargo xtask test --postgres` (the PostgreSQL \
         tests alone), which install PostgreSQL and start a throw-away server, or set \
         SWITCHBOARD_TEST_POSTGRES_URL to a server whose user may create databases (`cargo xtask \
         postgres` starts one and prints the line to paste)"
    )]
    NotConfigured,
    /// The server URL is not a `postgres://` URL.
    #[error(
        "the test server URL {url} is not a postgres://USER:PASSWORD@HOST:PORT/DATABASE URL \
         ({reason})"
    )]
    BadUrl {
        /// The URL, its password redacted.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server could not be reached or refused the login.
    #[error("cannot connect to the test server {url}: {source}")]
    Connect {
        /// The URL, its password redacted.
        url: String,
        /// What the client or the server said.
        source: tokio_postgres::Error,
    },
    /// A statement on the server failed.
    #[error("`{statement}` failed on the test server {url}: {source}")]
    Statement {
        /// The statement.
        statement: String,
        /// The server URL, its password redacted.
        url: String,
        /// What the server said.
        source: tokio_postgres::Error,
    },
}

impl fmt::Debug for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Debug for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

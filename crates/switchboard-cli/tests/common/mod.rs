//! What the tests that run the built `switchboard` binary share: a bound on every wait, and the
//! command with nothing inherited from the environment that could change what it does.

#![allow(dead_code, reason = "each test binary uses what it needs")]

use std::{future::Future, process::Stdio, time::Duration};

/// The longest any single step may take; a hang fails the test instead of stalling CI.
pub(crate) const LIMIT: Duration = Duration::from_secs(60);

/// Waits for `future`, failing the test with `what` if it takes longer than [`LIMIT`].
pub(crate) async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {LIMIT:?}"))
}

/// `switchboard ARGS`: no identity, audit or approvals store, config or log filter inherited from the
/// environment, no standard input unless the test pipes one, killed if the test drops it.
pub(crate) fn switchboard(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"));
    command.args(args).kill_on_drop(true).stdin(Stdio::null());
    for variable in [
        "SWITCHBOARD_ORG",
        "SWITCHBOARD_USER",
        "SWITCHBOARD_ROLE",
        "SWITCHBOARD_INITIATOR",
        "SWITCHBOARD_AUDIT",
        "SWITCHBOARD_APPROVALS",
        "SWITCHBOARD_AGENT_MUTATIONS",
        "SWITCHBOARD_CONFIG",
        "RUST_LOG",
    ] {
        command.env_remove(variable);
    }
    command
}

//! What the tests share: where the servers they mount are installed, a registry to mount them
//! in, a caller, and mounting a file's text strictly.

use std::path::PathBuf;

use switchboard_core::{CallContext, Initiator};
use switchboard_mounts::{Mounts, MountsConfig, Strictness};
use switchboard_registry::ToolRegistry;

/// The folder `cargo xtask test` installs the npm servers into.
pub(crate) fn install_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-servers")
}

/// The executable of the npm package that provides `bin`, failing the test with what to run
/// when it is not installed.
pub(crate) fn npm_bin(bin: &str) -> String {
    let path = install_dir().join("node_modules/.bin").join(bin);
    assert!(
        path.exists(),
        "{} is missing: `cargo xtask test` installs the MCP servers the tests mount (`cargo \
         xtask test --prepare` installs them and runs nothing)",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// A registry with an in-memory audit log and no linked domains of interest.
pub(crate) async fn registry() -> ToolRegistry {
    ToolRegistry::builder()
        .start()
        .await
        .expect("the registry starts")
}

/// alice, an acme admin, as `initiator`, having confirmed the call or not.
pub(crate) fn caller(initiator: Initiator, confirmed: bool) -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .roles(["admin"])
        .initiator(initiator)
        .confirmed(confirmed)
        .session("mounts-test")
        .correlation(switchboard_core::mint_id("test"))
        .build()
}

/// The mounts file `text`, parsed, as if it were a file of its own in the temp folder (so
/// that each test's lock file, beside it, is its own).
pub(crate) fn config(text: &str) -> MountsConfig {
    let path = std::env::temp_dir().join(format!(
        "switchboard-mounts-test-{}-{}.toml",
        std::process::id(),
        fastrand::u64(..)
    ));
    MountsConfig::parse(&path, text).expect("a valid mounts file")
}

/// A registry with the servers of mounts file `text` started, every one of them.
pub(crate) async fn mounted(text: &str) -> (ToolRegistry, Mounts) {
    let registry = registry().await;
    let mounts = Mounts::new(config(text));
    mounts
        .start(&registry, Strictness::Strict)
        .await
        .expect("every server starts");
    (registry, mounts)
}

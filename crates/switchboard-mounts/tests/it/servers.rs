//! Where the npm servers the tests mount are installed, and a registry to mount them in.

use std::path::PathBuf;

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

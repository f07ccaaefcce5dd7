//! Project automation for Switchboard, run as `cargo xtask <command>` (matklad's xtask pattern).
//!
//! `catalog` writes the tool reference (`docs/reference/tools.md` and
//! `docs/reference/tools.json`) from the registry this crate boots; `bench` runs the headline
//! benchmarks and prints today's figures against today's targets; `test` installs what the
//! tests need (Chromium, PostgreSQL, the MCP servers they mount), starts a throw-away PostgreSQL
//! and runs every test; `mcp-servers` installs the pinned MCP servers of the tests and the HTTP
//! benchmark alone; `postgres` starts such a PostgreSQL for a developer's shell; `weight` builds
//! the crate of `docs/embed.md` and a one-tool rmcp server cold and prints what each costs to
//! build. The logic lives in this library, not in `main.rs`, so that a plain `#[test]` can run
//! the same check as `cargo xtask catalog --check` and `cargo test --workspace` fails while the
//! committed catalog is stale (rust-analyzer: "all code invariants are tested by `#[test]`
//! tests").
//!
//! This crate is never published and is the one place (with tests and `main` functions) where
//! `anyhow` is the error type.

// Cargo only makes a dependency a candidate for linking; a crate whose items are never
// referenced is dropped, and with it every `#[tool]` it submits to `inventory`
// (rust-lang/rust#64731, dtolnay/inventory#7). This line keeps the sample domains linked.
use switchboard_domains as _;

pub mod bench;
pub mod catalog;
pub mod ensure_file;
pub mod mcp_servers;
pub mod postgres;
pub mod system_packages;
pub mod test;
pub mod weight;

use std::path::{Path, PathBuf};

/// The workspace root: the parent of this crate's directory.
pub fn project_root() -> PathBuf {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask_dir
        .parent()
        .map_or_else(|| xtask_dir.to_path_buf(), Path::to_path_buf)
}

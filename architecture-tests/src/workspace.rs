//! The workspace as data: its root, its `cargo metadata`, its crates and its Rust sources.
//!
//! Tests read the real workspace on disk rather than a copy, so they see new crates and new
//! files as soon as they exist, without anyone registering them here.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    sync::OnceLock,
};

use anyhow::Context as _;
use cargo_metadata::{DependencyKind, Metadata, MetadataCommand, Package, PackageId};

/// Every domain crate's package name starts with this; tests discover domains by it.
pub const DOMAIN_CRATE_PREFIX: &str = "switchboard-domain-";

/// The crate that links every sample domain: binaries and test suites depend on it instead of
/// naming each domain crate.
pub const DOMAINS_CRATE: &str = "switchboard-domains";

/// Domains linked into the `switchboard` binary but left out of its registry by default: only
/// `switchboard serve --conformance` serves the MCP conformance suite's tools. The tool catalog
/// (`docs/reference/tools.json`) does not list them; every other invariant covers them.
pub const OPT_IN_DOMAINS: [&str; 1] = ["conformance"];

/// The crates of [`OPT_IN_DOMAINS`]: not linked by [`DOMAINS_CRATE`], but by the CLI itself.
pub const OPT_IN_DOMAIN_CRATES: [&str; 1] = ["switchboard-domain-conformance"];

/// The workspace-hack: a crate with no code that asks for every feature the test build turns on,
/// so that every documented cargo command builds each crate once (its `src/lib.rs` says how).
pub const WORKSPACE_HACK: &str = "switchboard-workspace-hack";

/// The crates that do not take [`WORKSPACE_HACK`]: `switchboard-core`'s compile-fail test
/// (trybuild) builds the crate's dev-dependencies in a project of its own, where the hack would
/// compile every dependency of the workspace a second time.
pub const WITHOUT_WORKSPACE_HACK: [&str; 1] = ["switchboard-core"];

/// The folders that hold the workspace's own code: the top-level ones, and the runnable
/// examples kept with the docs.
pub const SOURCE_ROOTS: [&str; 5] = [
    "crates",
    "xtask",
    "tests",
    "architecture-tests",
    "docs/examples",
];

/// The folders of the crates that only build, check and test the others (`xtask`, the
/// end-to-end `tests`, this crate, and the PostgreSQL servers tests run on): they may depend on
/// anything, and nothing ships with them.
pub const DEV_ONLY_DIRS: [&str; 4] = [
    "xtask",
    "tests",
    "architecture-tests",
    "crates/switchboard-test-postgres",
];

/// The directory of the root `Cargo.toml`.
pub fn workspace_root() -> PathBuf {
    // This crate sits one level below the root (`<root>/architecture-tests`).
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map_or_else(|| manifest_dir.to_path_buf(), Path::to_path_buf)
}

/// `cargo metadata --format-version 1` of the whole workspace, read once per test binary.
pub fn workspace_metadata() -> anyhow::Result<&'static Metadata> {
    static METADATA: OnceLock<Result<Metadata, String>> = OnceLock::new();
    METADATA
        .get_or_init(|| {
            let manifest_path = workspace_root().join("Cargo.toml");
            MetadataCommand::new()
                .manifest_path(&manifest_path)
                .exec()
                .map_err(|error| {
                    format!(
                        "`cargo metadata` failed for {}: {error}",
                        manifest_path.display()
                    )
                })
        })
        .as_ref()
        .map_err(|message| anyhow::anyhow!("{message}"))
}

/// Whether a package name is a domain crate's (`switchboard-domain-<name>`).
pub fn is_domain_crate(package_name: &str) -> bool {
    package_name.starts_with(DOMAIN_CRATE_PREFIX)
}

/// The Rust path a crate is `use`d by: `switchboard-domain-roster` → `switchboard_domain_roster`.
pub fn crate_ident(package_name: &str) -> String {
    package_name.replace('-', "_")
}

/// The workspace members, sorted by name.
pub fn workspace_members(metadata: &Metadata) -> Vec<&Package> {
    let mut members = metadata.workspace_packages();
    members.sort_by(|left, right| left.name.cmp(&right.name));
    members
}

/// The names of the domain crates in the workspace, sorted.
pub fn domain_crates(metadata: &Metadata) -> BTreeSet<String> {
    workspace_members(metadata)
        .into_iter()
        .map(|package| package.name.to_string())
        .filter(|name| is_domain_crate(name))
        .collect()
}

/// The folder of a package, relative to the workspace root (`crates/switchboard-core`).
pub fn package_dir(package: &Package) -> PathBuf {
    let manifest_dir = package.manifest_path.parent().map_or_else(
        || package.manifest_path.as_std_path(),
        |dir| dir.as_std_path(),
    );
    manifest_dir
        .strip_prefix(workspace_root())
        .map_or_else(|_| manifest_dir.to_path_buf(), Path::to_path_buf)
}

/// Whether a package is one of the [`DEV_ONLY_DIRS`] crates (found by folder: their package
/// names are their own business).
pub fn is_dev_only(package: &Package) -> bool {
    let dir = package_dir(package);
    DEV_ONLY_DIRS
        .iter()
        .any(|dev_only| dir == Path::new(dev_only))
}

/// A path relative to the workspace root, with `/` separators, for messages.
pub fn display_path(path: &Path) -> String {
    let relative = path.strip_prefix(workspace_root()).unwrap_or(path);
    relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every `.rs` file under [`SOURCE_ROOTS`], sorted, skipping `target` directories, hidden
/// directories and the trybuild fixtures under `crates/*/tests/ui/` (they are deliberately
/// broken code, checked against their `.stderr`).
pub fn workspace_rust_files() -> anyhow::Result<Vec<PathBuf>> {
    let root = workspace_root();
    let mut files = Vec::new();
    for source_root in SOURCE_ROOTS {
        let dir = root.join(source_root);
        if dir.is_dir() {
            collect_rust_files(&dir, &mut files)?;
        }
    }
    files.retain(|file| !is_trybuild_fixture(&display_path(file)));
    files.sort();
    Ok(files)
}

fn collect_rust_files(dir: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let file_type = entry
            .file_type()
            .with_context(|| format!("cannot stat {}", path.display()))?;
        if file_type.is_dir() {
            if name == "target" || name.starts_with('.') {
                continue;
            }
            collect_rust_files(&path, files)?;
        } else if file_type.is_file() && name.ends_with(".rs") {
            files.push(path);
        }
    }
    Ok(())
}

/// Whether a workspace-relative path is a trybuild fixture: `crates/<crate>/tests/ui/…`.
pub fn is_trybuild_fixture(relative_path: &str) -> bool {
    let parts: Vec<&str> = relative_path.split('/').collect();
    parts.len() > 4 && parts[0] == "crates" && parts[2] == "tests" && parts[3] == "ui"
}

/// The resolved graph of normal dependencies: package id → the ids it depends on.
///
/// # Panics
/// When `metadata` was read without dependency resolution (`workspace_metadata` resolves).
pub fn resolved_normal_graph(metadata: &Metadata) -> BTreeMap<&PackageId, Vec<&PackageId>> {
    let resolve = metadata
        .resolve
        .as_ref()
        .expect("`cargo metadata` was run with dependency resolution");
    resolve
        .nodes
        .iter()
        .map(|node| {
            let normal = node
                .deps
                .iter()
                .filter(|dep| {
                    dep.dep_kinds
                        .iter()
                        .any(|info| info.kind == DependencyKind::Normal)
                })
                .map(|dep| &dep.pkg)
                .collect();
            (&node.id, normal)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_trybuild_fixtures_only_under_crates() {
        assert!(is_trybuild_fixture(
            "crates/switchboard-core/tests/ui/fail/not_async.rs"
        ));
        assert!(!is_trybuild_fixture("crates/switchboard-core/tests/ui.rs"));
        assert!(!is_trybuild_fixture("tests/ui/fail/x.rs"));
    }

    #[test]
    fn recognises_domain_crates_by_name() {
        assert!(is_domain_crate("switchboard-domain-roster"));
        assert!(!is_domain_crate("switchboard-domains"));
        assert!(!is_domain_crate("switchboard-core"));
        assert_eq!(
            crate_ident("switchboard-domain-directory"),
            "switchboard_domain_directory"
        );
    }
}

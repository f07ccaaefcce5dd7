//! Guards which database clients the workspace links, from `cargo metadata` (every resolved
//! package, dev and build dependencies included).
//!
//! Architecture Invariant: `rusqlite` is the only crate that links SQLite: it is the only
//! dependent of `libsqlite3-sys`, and no other SQLite binding (`sqlx-sqlite`, `sqlite`,
//! `diesel`) is in the graph. Two bindings would link two copies of the C library, each with
//! its own locks on the same files.
//!
//! Architecture Invariant: exactly one PostgreSQL client is linked: `tokio-postgres` (pooled by
//! `deadpool-postgres`), and no other (`postgres`, `sqlx-postgres`, `diesel`, `pq-sys`). Only
//! the PostgreSQL crates use it: `switchboard-postgres`, the stores named `*-postgres`, and the
//! test server of `switchboard-test-postgres`.

use std::collections::BTreeSet;

use architecture_tests::workspace::{WORKSPACE_HACK, workspace_metadata};
use cargo_metadata::Metadata;

fn metadata() -> &'static Metadata {
    workspace_metadata().expect("cargo metadata runs")
}

/// The names of the packages that depend on `name` (any kind of dependency).
fn dependents_of(metadata: &Metadata, name: &str) -> BTreeSet<String> {
    metadata
        .packages
        .iter()
        .filter(|package| {
            package
                .dependencies
                .iter()
                .any(|dependency| dependency.name == name)
        })
        .filter(|package| {
            // A dependency the resolver left out (an optional one not enabled) is not linked.
            metadata
                .resolve
                .as_ref()
                .and_then(|resolve| resolve.nodes.iter().find(|node| node.id == package.id))
                .is_some_and(|node| {
                    node.deps
                        .iter()
                        .any(|dep| metadata[&dep.pkg].name.as_str() == name)
                })
        })
        .map(|package| package.name.to_string())
        .collect()
}

fn resolved(metadata: &Metadata) -> BTreeSet<String> {
    metadata
        .packages
        .iter()
        .filter(|package| {
            metadata
                .resolve
                .as_ref()
                .is_some_and(|resolve| resolve.nodes.iter().any(|node| node.id == package.id))
        })
        .map(|package| package.name.to_string())
        .collect()
}

#[test]
fn rusqlite_is_the_only_crate_linking_sqlite() {
    let metadata = metadata();
    let dependents = dependents_of(metadata, "libsqlite3-sys");
    assert_eq!(
        dependents,
        BTreeSet::from(["rusqlite".to_owned()]),
        "only rusqlite may link SQLite (libsqlite3-sys); use `switchboard-sqlite`"
    );
    let packages = resolved(metadata);
    for other in ["sqlx-sqlite", "sqlite", "sqlite3-sys", "diesel", "sqlx"] {
        assert!(
            !packages.contains(other),
            "`{other}` is in the graph: SQLite goes through rusqlite only"
        );
    }
}

#[test]
fn exactly_one_postgresql_client_is_linked() {
    let metadata = metadata();
    let packages = resolved(metadata);
    assert!(
        packages.contains("tokio-postgres"),
        "tokio-postgres is the workspace's PostgreSQL client"
    );
    for other in [
        "postgres",
        "sqlx-postgres",
        "sqlx",
        "diesel",
        "pq-sys",
        "r2d2_postgres",
    ] {
        assert!(
            !packages.contains(other),
            "`{other}` is in the graph: the one PostgreSQL client is tokio-postgres (with \
             deadpool-postgres); see ARCHITECTURE.md"
        );
    }
    let allowed = |name: &str| {
        name == "deadpool-postgres"
            || name == WORKSPACE_HACK
            || name == "switchboard-test-postgres"
            || (name.starts_with("switchboard-") && name.ends_with("-postgres"))
    };
    for client in ["tokio-postgres", "deadpool-postgres"] {
        let offenders: Vec<String> = dependents_of(metadata, client)
            .into_iter()
            .filter(|name| !allowed(name))
            .collect();
        assert!(
            offenders.is_empty(),
            "{offenders:?} depend on {client}: only `switchboard-postgres` and the `*-postgres` \
             store crates talk to PostgreSQL"
        );
    }
}

//! Guards the dependency graph of the workspace, from `cargo metadata`.
//!
//! Architecture Invariant: workspace crates depend on each other only along the edges listed in
//! `ARCHITECTURE.md`, mirrored by [`allowed_internal_dependencies`] below; a new edge or a new
//! crate is a design decision, made in both places at once.
//!
//! Architecture Invariant: every domain crate (`switchboard-domain-*`) depends on
//! `switchboard-core` only: never on the registry, the orchestrator, the audit crate, the
//! facade, or another domain.
//!
//! Architecture Invariant: `switchboard-core` has no actors and no async runtime: neither
//! `ractor` nor `tokio` is among its transitive (normal) dependencies.
//!
//! Architecture Invariant: only the two MCP crates know MCP: `switchboard-mcp` (the server) and
//! `switchboard-mounts` (the client of mounted servers); no other crate depends on `rmcp` (but
//! the workspace-hack, which has no code and only asks for rmcp's features).
//!
//! Only normal dependencies count: dev-dependencies never reach a user's binary, and build
//! dependencies never reach its code.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use architecture_tests::workspace::{
    WORKSPACE_HACK, is_dev_only, is_domain_crate, resolved_normal_graph, workspace_metadata,
};
use cargo_metadata::{DependencyKind, Metadata, Package, PackageId};

/// Which workspace crates a crate may depend on (normal dependencies).
#[derive(Debug)]
enum Allowed {
    /// Exactly these, or a subset.
    Only(&'static [&'static str]),
    /// Domain crates (`switchboard-domain-*`) and nothing else.
    DomainCrates,
    /// Any workspace crate: binaries and dev-only tooling.
    Anything,
}

impl Allowed {
    /// Whether a crate with this entry may depend on the workspace crate `dependency`.
    fn allows(&self, dependency: &str) -> bool {
        match self {
            Allowed::Only(names) => names.contains(&dependency),
            Allowed::DomainCrates => is_domain_crate(dependency),
            Allowed::Anything => true,
        }
    }
}

/// The allow-table. Keep it in step with the Code Map of `ARCHITECTURE.md`.
fn allowed_internal_dependencies(package: &Package) -> Option<Allowed> {
    let allowed = match package.name.as_str() {
        "switchboard-macros" => Allowed::Only(&[]),
        "switchboard-core" => Allowed::Only(&["switchboard-macros"]),
        "switchboard-audit" => Allowed::Only(&["switchboard-core"]),
        // Opening and migrating SQLite files for the persistent stores: knows no Switchboard type.
        "switchboard-sqlite" => Allowed::Only(&[]),
        // Connecting to PostgreSQL, migrating and LISTEN/NOTIFY for the PostgreSQL stores: knows
        // no Switchboard type either.
        "switchboard-postgres" => Allowed::Only(&[]),
        // A persistent store: it implements the audit crate's trait and nothing more (never the
        // registry, the orchestrator or MCP); the binary picks it at startup.
        "switchboard-audit-sqlite" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-audit",
            "switchboard-sqlite",
        ]),
        // The same trait on PostgreSQL, one table for every node: nothing more either.
        "switchboard-audit-postgres" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-audit",
            "switchboard-postgres",
        ]),
        "switchboard-approvals" => Allowed::Only(&["switchboard-core"]),
        // The persistent proposal and idempotency stores: the approvals crate's traits, nothing
        // more (never the registry); the binary picks them at startup.
        "switchboard-approvals-sqlite" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-approvals",
            "switchboard-sqlite",
        ]),
        // The same traits on PostgreSQL, shared by every node: the approvals crate's traits, nothing
        // more (never the registry); the binary picks it at startup.
        "switchboard-approvals-postgres" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-approvals",
            "switchboard-postgres",
        ]),
        "switchboard-registry" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-audit",
            "switchboard-approvals",
        ]),
        "switchboard-orchestrator" => Allowed::Only(&["switchboard-core", "switchboard-registry"]),
        // Rate limits: a `CallLayer` of the registry, nothing more.
        "switchboard-limits" => Allowed::Only(&["switchboard-core", "switchboard-registry"]),
        // Pages over the registry: it matches URLs and runs actions through the registry only.
        "switchboard-navigation" => Allowed::Only(&["switchboard-core", "switchboard-registry"]),
        // Pages in a browser: navigation over HTTP, never MCP (no `rmcp`); and a workflow
        // run's events, read through the engine.
        "switchboard-web" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-registry",
            "switchboard-navigation",
            "switchboard-workflows",
            "switchboard-workflows-engine",
        ]),
        // The crate users depend on: it re-exports the runtime's parts, so that an embedder
        // needs this one dependency; the orchestrator, navigation, MCP, remote domains and the
        // SQLite stores behind cargo features.
        "switchboard" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-audit",
            "switchboard-approvals",
            "switchboard-registry",
            "switchboard-orchestrator",
            "switchboard-navigation",
            "switchboard-mcp",
            "switchboard-link",
            "switchboard-mounts",
            "switchboard-testing",
            "switchboard-audit-sqlite",
            "switchboard-approvals-sqlite",
        ]),
        // Planned in STYLE.md: the MCP adapter sits on the registry and the orchestrator; it
        // verifies the identity statements of peer sessions with the link crate.
        "switchboard-mcp" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-registry",
            "switchboard-orchestrator",
            "switchboard-navigation",
            "switchboard-link",
        ]),
        // Signed identity statements for calls to a domain on another node: the registry's
        // `LinkedCall`, nothing more.
        "switchboard-link" => Allowed::Only(&["switchboard-core", "switchboard-registry"]),
        // The client of mounted MCP servers: their tools become run-time tools of the registry.
        // The mounts client puts the current span's `traceparent` into its requests. A remote
        // domain is a trusted mounted server: its link signs each call's identity statement
        // with the link crate.
        "switchboard-mounts" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-registry",
            "switchboard-telemetry",
            "switchboard-link",
        ]),
        // The conformance kit calls tools through the registry and reads their audit records:
        // the registry and its audit log, nothing else.
        "switchboard-testing" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-registry",
            "switchboard-audit",
        ]),
        // The tracing layer: a `CallLayer` of the registry, and the OTLP export.
        "switchboard-telemetry" => Allowed::Only(&["switchboard-core", "switchboard-registry"]),
        // Workflow definitions, expressions, state machines and the run store's trait: what a
        // store or a validator needs, without the registry (the engine is a crate of its own).
        "switchboard-workflows" => Allowed::Only(&["switchboard-core"]),
        // The persistent run store: the workflows crate's trait, nothing more (never the
        // registry or the engine); the binary picks it at startup.
        "switchboard-workflows-sqlite" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-workflows",
            "switchboard-sqlite",
        ]),
        // The same trait on PostgreSQL, the runs every node shares: nothing more either.
        "switchboard-workflows-postgres" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-workflows",
            "switchboard-postgres",
        ]),
        // The engine runs every step through the registry, so it sits on it.
        "switchboard-workflows-engine" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-registry",
            "switchboard-workflows",
        ]),
        name if is_domain_crate(name) => Allowed::Only(&["switchboard-core"]),
        // The roster domain's store on PostgreSQL: the domain's store trait, and the
        // idempotency store it completes keys through in the same transaction.
        "switchboard-roster-postgres" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-domain-roster",
            "switchboard-approvals",
            "switchboard-approvals-postgres",
            "switchboard-postgres",
        ]),
        // The roster domain's store in a SQLite file: the domain's store trait and the shared
        // opening of SQLite files; the idempotency keys are in another file, so no approvals.
        "switchboard-roster-sqlite" => Allowed::Only(&[
            "switchboard-core",
            "switchboard-domain-roster",
            "switchboard-sqlite",
        ]),
        // Links the sample domains into binaries; it holds no code of its own.
        "switchboard-domains" => Allowed::DomainCrates,
        "switchboard-cli" => Allowed::Anything,
        // No code: it asks for every crate the test build builds, with the test build's features
        // (`workspace_hack.rs` checks that no library reaches it).
        WORKSPACE_HACK => Allowed::Anything,
        _ if is_dev_only(package) => Allowed::Anything,
        _ => return None,
    };
    Some(allowed)
}

/// The workspace crates `package` depends on through normal dependencies, sorted.
fn internal_normal_dependencies<'m>(
    metadata: &'m Metadata,
    package: &'m Package,
) -> BTreeSet<&'m str> {
    let members: BTreeSet<&str> = metadata
        .workspace_packages()
        .into_iter()
        .map(|member| member.name.as_str())
        .collect();
    package
        .dependencies
        .iter()
        .filter(|dependency| dependency.kind == DependencyKind::Normal)
        .map(|dependency| dependency.name.as_str())
        .filter(|name| members.contains(name))
        .collect()
}

fn metadata() -> &'static Metadata {
    workspace_metadata().expect("`cargo metadata` runs on the workspace")
}

fn fail_with(offenders: &[String], header: &str) {
    assert!(
        offenders.is_empty(),
        "{header}:\n  - {}",
        offenders.join("\n  - ")
    );
}

#[test]
fn internal_dependencies_follow_the_table() {
    let metadata = metadata();
    let mut offenders = Vec::new();
    for package in metadata.workspace_packages() {
        let Some(allowed) = allowed_internal_dependencies(package) else {
            continue;
        };
        for dependency in internal_normal_dependencies(metadata, package) {
            if !allowed.allows(dependency) {
                offenders.push(format!(
                    "`{}` must not depend on `{dependency}`: add an edge to ARCHITECTURE.md and \
                     to the table in architecture-tests/tests/it/deps.rs first",
                    package.name
                ));
            }
        }
    }
    fail_with(&offenders, "dependency edges outside the allow-table");
}

#[test]
fn every_workspace_crate_is_in_the_table() {
    let mut offenders = Vec::new();
    for package in metadata().workspace_packages() {
        if allowed_internal_dependencies(package).is_none() {
            offenders.push(format!(
                "`{}` ({}) is not in the dependency table: add it to the table in \
                 architecture-tests/tests/it/deps.rs and to ARCHITECTURE.md",
                package.name, package.manifest_path
            ));
        }
    }
    fail_with(
        &offenders,
        "workspace crates missing from the dependency table",
    );
}

#[test]
fn nothing_ships_with_a_dev_only_crate() {
    let metadata = metadata();
    let dev_only: BTreeSet<&str> = metadata
        .workspace_packages()
        .into_iter()
        .filter(|package| is_dev_only(package))
        .map(|package| package.name.as_str())
        .collect();
    let mut offenders = Vec::new();
    for package in metadata.workspace_packages() {
        // Tooling may use tooling: `xtask` starts the tests' PostgreSQL with
        // `switchboard-test-postgres`, and neither ships.
        if is_dev_only(package) {
            continue;
        }
        for dependency in internal_normal_dependencies(metadata, package) {
            if dev_only.contains(dependency) {
                offenders.push(format!(
                    "`{}` must not depend on `{dependency}`, which is dev-only tooling: \
                     make it a dev-dependency, or move what it needs into a library crate",
                    package.name
                ));
            }
        }
    }
    fail_with(&offenders, "normal dependencies on dev-only crates");
}

#[test]
fn every_domain_crate_depends_on_core_only() {
    // Covered by the table too; this test names the rule, so that a failure reads as what it is.
    let metadata = metadata();
    let mut offenders = Vec::new();
    for package in metadata.workspace_packages() {
        if !is_domain_crate(&package.name) {
            continue;
        }
        for dependency in internal_normal_dependencies(metadata, package) {
            if dependency != "switchboard-core" {
                offenders.push(format!(
                    "domain crate `{}` must not depend on `{dependency}`: a domain sees only \
                     `switchboard-core`; the registry finds its tools at link time",
                    package.name
                ));
            }
        }
    }
    fail_with(&offenders, "domain crates with forbidden dependencies");
}

fn package_named<'m>(metadata: &'m Metadata, name: &str) -> &'m Package {
    metadata
        .workspace_packages()
        .into_iter()
        .find(|package| package.name.as_str() == name)
        .unwrap_or_else(|| panic!("`{name}` is a workspace member"))
}

/// Every package reachable from `root` through normal dependencies, each with the chain that
/// reaches it (`a → b → c`).
fn transitive_normal_dependencies(
    metadata: &Metadata,
    root: &PackageId,
) -> BTreeMap<String, String> {
    let graph = resolved_normal_graph(metadata);
    let mut chains: BTreeMap<&PackageId, String> = BTreeMap::new();
    chains.insert(root, metadata[root].name.to_string());
    let mut queue = VecDeque::from([root]);
    while let Some(current) = queue.pop_front() {
        let chain = chains[current].clone();
        for &next in graph.get(current).into_iter().flatten() {
            if !chains.contains_key(next) {
                chains.insert(next, format!("{chain} → {}", metadata[next].name));
                queue.push_back(next);
            }
        }
    }
    chains.remove(root);
    chains
        .into_iter()
        .map(|(id, chain)| (metadata[id].name.to_string(), chain))
        .collect()
}

#[test]
fn core_has_no_actors_and_no_runtime() {
    let metadata = metadata();
    let core = package_named(metadata, "switchboard-core");
    let reachable = transitive_normal_dependencies(metadata, &core.id);
    let offenders: Vec<String> = ["ractor", "tokio"]
        .into_iter()
        .filter_map(|forbidden| reachable.get(forbidden))
        .map(|chain| {
            format!(
                "{chain}: `switchboard-core` has no actors and no runtime; keep actor and \
                 runtime code in the registry"
            )
        })
        .collect();
    fail_with(
        &offenders,
        "switchboard-core reaches an actor framework or a runtime",
    );
}

#[test]
fn only_the_mcp_crates_depend_on_rmcp() {
    let metadata = metadata();
    let graph = resolved_normal_graph(metadata);
    let mut offenders = Vec::new();
    for (&dependent, dependencies) in &graph {
        let dependent_name = metadata[dependent].name.as_str();
        // The workspace-hack names rmcp only to ask for the features the tests turn on.
        if matches!(
            dependent_name,
            "switchboard-mcp" | "switchboard-mounts" | WORKSPACE_HACK
        ) {
            continue;
        }
        for &dependency in dependencies {
            if metadata[dependency].name.as_str() == "rmcp" {
                offenders.push(format!(
                    "`{dependent_name}` must not depend on `rmcp`: only `switchboard-mcp` (the \
                     server) and `switchboard-mounts` (the client) speak MCP; go through them"
                ));
            }
        }
    }
    fail_with(
        &offenders,
        "crates other than switchboard-mcp and switchboard-mounts depend on rmcp",
    );
}

#[test]
fn the_table_knows_the_crates_it_names() {
    // A typo in the table would silently allow nothing; check every name in it resolves.
    let metadata = metadata();
    let members: BTreeSet<&str> = metadata
        .workspace_packages()
        .into_iter()
        .map(|package| package.name.as_str())
        .collect();
    let mut offenders = Vec::new();
    for package in metadata.workspace_packages() {
        if let Some(Allowed::Only(allowed)) = allowed_internal_dependencies(package) {
            for name in allowed {
                if !members.contains(name) {
                    offenders.push(format!(
                        "the table allows `{}` → `{name}`, but `{name}` is not a workspace crate",
                        package.name
                    ));
                }
            }
        }
    }
    fail_with(&offenders, "unknown crates in the dependency table");
}

#[test]
fn the_graph_is_read_correctly() {
    // The checks above pass vacuously on an empty graph; pin a few edges that must be seen.
    let metadata = metadata();
    let registry = package_named(metadata, "switchboard-registry");
    assert_eq!(
        internal_normal_dependencies(metadata, registry),
        BTreeSet::from([
            "switchboard-approvals",
            "switchboard-audit",
            "switchboard-core",
        ]),
        "the registry's internal dependencies as read from `cargo metadata`"
    );
    let reachable = transitive_normal_dependencies(metadata, &registry.id);
    for expected in ["ractor", "tokio", "switchboard-core", "switchboard-macros"] {
        assert!(
            reachable.contains_key(expected),
            "`switchboard-registry` should reach `{expected}` through normal dependencies; \
             reached: {:?}",
            reachable.keys().collect::<Vec<_>>()
        );
    }
    assert!(
        !transitive_normal_dependencies(metadata, &package_named(metadata, "switchboard-core").id)
            .contains_key("proptest"),
        "dev-dependencies must not count as normal dependencies"
    );
}

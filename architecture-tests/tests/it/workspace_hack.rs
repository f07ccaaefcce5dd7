//! Guards the workspace-hack (`crates/switchboard-workspace-hack`), the crate that makes every
//! documented cargo command build each crate with the same features as the test build.
//!
//! Architecture Invariant: every workspace crate takes the workspace-hack, as a dev-dependency
//! if it is a library (so a crate that depends on Switchboard never builds it) and as a normal
//! dependency if it is the binary or a dev-only crate; the one exception is `switchboard-core`,
//! whose compile-fail test would build every dev-dependency again in a project of its own.
//!
//! Architecture Invariant: the workspace-hack asks for every workspace crate that some crate asks
//! for with fewer features than the test build turns on (`cargo metadata`'s resolved features),
//! with exactly those features, so no command builds a workspace crate, and everything above it,
//! with fewer.
//!
//! Its third-party lines are `cargo hakari generate`'s; `.ci/run` checks them by running the
//! documented commands after the tests and failing if one compiles anything.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use architecture_tests::workspace::{
    WITHOUT_WORKSPACE_HACK, WORKSPACE_HACK, is_dev_only, resolved_normal_graph, workspace_members,
    workspace_metadata,
};
use cargo_metadata::{Dependency, DependencyKind, Metadata, Package, PackageId, TargetKind};

/// What regenerates the hack, for failure messages.
const REGENERATE: &str = "`cargo hakari generate` (cargo install cargo-hakari --locked) for the \
                          third-party lines; the workspace lines are written by hand";

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

fn has_lib(package: &Package) -> bool {
    package.targets.iter().any(|target| {
        target.kind.iter().any(|kind| {
            matches!(
                kind,
                TargetKind::Lib | TargetKind::RLib | TargetKind::ProcMacro
            )
        })
    })
}

/// How a crate must depend on the workspace-hack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    /// Libraries: only their own tests and benches build it.
    DevDependency,
    /// The binary and the dev-only crates: every build of them includes it.
    Normal,
    /// No dependency at all.
    None,
}

fn wanted(package: &Package) -> Wanted {
    if package.name.as_str() == WORKSPACE_HACK
        || WITHOUT_WORKSPACE_HACK.contains(&package.name.as_str())
    {
        Wanted::None
    } else if is_dev_only(package) || !has_lib(package) {
        Wanted::Normal
    } else {
        Wanted::DevDependency
    }
}

fn hack_kinds(package: &Package) -> BTreeSet<String> {
    package
        .dependencies
        .iter()
        .filter(|dependency| dependency.name.as_str() == WORKSPACE_HACK)
        .map(|dependency| match dependency.kind {
            DependencyKind::Normal => "[dependencies]".to_owned(),
            DependencyKind::Development => "[dev-dependencies]".to_owned(),
            _ => "[build-dependencies]".to_owned(),
        })
        .collect()
}

#[test]
fn every_crate_takes_the_workspace_hack_where_it_should() {
    let mut offenders = Vec::new();
    for package in workspace_members(metadata()) {
        let found = hack_kinds(package);
        let (expected, advice) = match wanted(package) {
            Wanted::DevDependency => (
                "[dev-dependencies]",
                "a library takes it as a dev-dependency only, so that a crate depending on \
                 Switchboard never builds it",
            ),
            Wanted::Normal => (
                "[dependencies]",
                "the binary and the dev-only crates take it as a normal dependency, so that \
                 `cargo build`/`cargo run` of them shares the test build",
            ),
            Wanted::None => (
                "",
                "see WITHOUT_WORKSPACE_HACK in architecture-tests/src/workspace.rs",
            ),
        };
        let expected: BTreeSet<String> = if expected.is_empty() {
            BTreeSet::new()
        } else {
            BTreeSet::from([expected.to_owned()])
        };
        if found != expected {
            offenders.push(format!(
                "`{}` ({}) declares `{WORKSPACE_HACK}` in {found:?}, expected {expected:?}: \
                 add `{WORKSPACE_HACK}.workspace = true` where expected ({advice}); do not run \
                 `cargo hakari manage-deps`, which makes every line a normal dependency",
                package.name, package.manifest_path
            ));
        }
    }
    fail_with(
        &offenders,
        "crates that take the workspace-hack the wrong way",
    );
}

#[test]
fn no_library_builds_the_workspace_hack_for_its_users() {
    let metadata = metadata();
    let graph = resolved_normal_graph(metadata);
    let mut offenders = Vec::new();
    for package in workspace_members(metadata) {
        if wanted(package) == Wanted::Normal || package.name.as_str() == WORKSPACE_HACK {
            continue;
        }
        let mut chains: BTreeMap<&PackageId, String> =
            BTreeMap::from([(&package.id, package.name.to_string())]);
        let mut queue = VecDeque::from([&package.id]);
        while let Some(current) = queue.pop_front() {
            let chain = chains[current].clone();
            for &next in graph.get(current).into_iter().flatten() {
                if chains.contains_key(next) {
                    continue;
                }
                let next_chain = format!("{chain} → {}", metadata[next].name);
                if metadata[next].name.as_str() == WORKSPACE_HACK {
                    offenders.push(format!(
                        "{next_chain}: a user of `{}` would build every feature of the \
                         workspace; make the edge to `{WORKSPACE_HACK}` a dev-dependency",
                        package.name
                    ));
                }
                chains.insert(next, next_chain);
                queue.push_back(next);
            }
        }
    }
    fail_with(
        &offenders,
        "library crates that reach the workspace-hack through normal dependencies",
    );
}

/// `requested` and every feature it turns on in `package`, by `package`'s `[features]` table.
fn feature_closure(package: &Package, requested: &[String], defaults: bool) -> BTreeSet<String> {
    let mut closure = BTreeSet::new();
    let mut queue: VecDeque<String> = requested.iter().cloned().collect();
    if defaults && package.features.contains_key("default") {
        queue.push_back("default".to_owned());
    }
    while let Some(feature) = queue.pop_front() {
        if !closure.insert(feature.clone()) {
            continue;
        }
        for item in package.features.get(&feature).into_iter().flatten() {
            // `dep:x` turns on a dependency, not a feature; `x?/y` does not turn on `x`.
            let local = match item.split_once('/') {
                Some((name, _)) if !name.ends_with('?') => name,
                Some(_) => continue,
                None if item.starts_with("dep:") => continue,
                None => item.as_str(),
            };
            if package.features.contains_key(local) {
                queue.push_back(local.to_owned());
            }
        }
    }
    closure
}

/// The features each request of `package` by a workspace crate turns on, with who asks: every
/// dependency edge to it, and `package` itself built alone with its defaults.
fn requests_of(members: &[&Package], package: &Package) -> Vec<(String, BTreeSet<String>)> {
    let mut requests = vec![(
        format!("`{}` built alone", package.name),
        feature_closure(package, &[], true),
    )];
    for member in members {
        if member.name.as_str() == WORKSPACE_HACK {
            continue;
        }
        for dependency in &member.dependencies {
            if dependency.name == package.name.as_str() && dependency.path.is_some() {
                requests.push((
                    format!("`{}`", member.name),
                    feature_closure(
                        package,
                        &dependency.features,
                        dependency.uses_default_features,
                    ),
                ));
            }
        }
    }
    requests
}

#[test]
fn the_workspace_hack_asks_for_every_feature_the_tests_turn_on() {
    let metadata = metadata();
    let resolve = metadata
        .resolve
        .as_ref()
        .expect("`cargo metadata` was run with dependency resolution");
    let members = workspace_members(metadata);
    let hack = members
        .iter()
        .find(|package| package.name.as_str() == WORKSPACE_HACK)
        .unwrap_or_else(|| panic!("`{WORKSPACE_HACK}` is a workspace member"));
    let hack_requests: BTreeMap<&str, &Dependency> = hack
        .dependencies
        .iter()
        .filter(|dependency| dependency.kind == DependencyKind::Normal)
        .map(|dependency| (dependency.name.as_str(), dependency))
        .collect();
    let mut offenders = Vec::new();
    for package in &members {
        if package.name.as_str() == WORKSPACE_HACK || !has_lib(package) {
            continue;
        }
        let resolved: BTreeSet<String> = resolve
            .nodes
            .iter()
            .find(|node| node.id == package.id)
            .map(|node| node.features.iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        let fewer: Vec<String> = requests_of(&members, package)
            .into_iter()
            .filter(|(_, features)| *features != resolved)
            .map(|(who, features)| format!("{who} with {features:?}"))
            .collect();
        match hack_requests.get(package.name.as_str()) {
            None if fewer.is_empty() => {}
            None => offenders.push(format!(
                "`{}` is asked for with fewer features than the test build turns on \
                 ({resolved:?}): {}; add `[dependencies.{}]` with `workspace = true` and those \
                 features (but `default`) to crates/{WORKSPACE_HACK}/Cargo.toml, above the \
                 HAKARI section",
                package.name,
                fewer.join(", "),
                package.name
            )),
            Some(request) => {
                let asked =
                    feature_closure(package, &request.features, request.uses_default_features);
                if asked != resolved {
                    offenders.push(format!(
                        "`{WORKSPACE_HACK}` asks for `{}` with {asked:?}, the test build turns \
                         on {resolved:?}: make the features of `[dependencies.{}]` in \
                         crates/{WORKSPACE_HACK}/Cargo.toml those (but `default`)",
                        package.name, package.name
                    ));
                }
            }
        }
    }
    fail_with(
        &offenders,
        &format!("the workspace-hack's workspace lines are stale ({REGENERATE})"),
    );
}

#[test]
fn the_checks_see_the_workspace_hack_and_the_features() {
    // The checks above pass vacuously if the hack or the features are not read; pin both.
    let metadata = metadata();
    let members = workspace_members(metadata);
    let named = |name: &str| {
        members
            .iter()
            .find(|package| package.name.as_str() == name)
            .copied()
            .unwrap_or_else(|| panic!("`{name}` is a workspace member"))
    };
    assert_eq!(wanted(named("switchboard-registry")), Wanted::DevDependency);
    assert_eq!(wanted(named("switchboard-cli")), Wanted::Normal);
    assert_eq!(wanted(named("xtask")), Wanted::Normal);
    assert_eq!(wanted(named("switchboard-test-postgres")), Wanted::Normal);
    assert_eq!(wanted(named("switchboard-core")), Wanted::None);
    let audit = named("switchboard-audit");
    assert_eq!(
        feature_closure(audit, &["conformance".to_owned()], true),
        BTreeSet::from(["conformance".to_owned()]),
    );
    assert!(
        feature_closure(audit, &[], true).is_empty(),
        "`switchboard-audit` has no default features"
    );
}

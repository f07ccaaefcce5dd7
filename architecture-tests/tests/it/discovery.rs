//! Guards tool discovery: every domain in the workspace reaches the `switchboard` binary.
//!
//! Architecture Invariant: every domain crate (`switchboard-domain-*`) is linked into
//! `switchboard-cli` through one crate, `switchboard-domains`: each sample domain is a normal
//! dependency of `switchboard-domains` (whose `build.rs` turns every such dependency into a
//! `use <crate> as _;`), and the CLI depends on `switchboard-domains` and references it in its
//! `main.rs`, because a dependency alone does not link a crate and its `#[tool]`s would
//! silently disappear (rust-lang/rust#64731). The opt-in domains are linked by the CLI itself.
//!
//! Architecture Invariant: a domain's default role grants come from the domain itself
//! (`switchboard_core::default_grants!`), and grant only the domain's own permissions.
//!
//! Architecture Invariant: `docs/reference/tools.json` lists exactly the tools the linked
//! registry has (minus the opt-in domains, `OPT_IN_DOMAINS`, which the binary leaves out by
//! default), so the committed reference never drifts from the binary.

use std::collections::BTreeSet;

use architecture_tests::{
    calls::start_registry,
    workspace::{
        DOMAINS_CRATE, OPT_IN_DOMAIN_CRATES, OPT_IN_DOMAINS, crate_ident, domain_crates,
        workspace_metadata, workspace_root,
    },
};
use cargo_metadata::{DependencyKind, Package};
use serde_json::Value;

const CLI_PACKAGE: &str = "switchboard-cli";
const CLI_MAIN: &str = "crates/switchboard-cli/src/main.rs";
const DOMAINS_MANIFEST: &str = "crates/switchboard-domains/Cargo.toml";
const TOOLS_REFERENCE: &str = "docs/reference/tools.json";

fn fail_with(offenders: &[String], header: &str) {
    assert!(
        offenders.is_empty(),
        "{header}:\n  - {}",
        offenders.join("\n  - ")
    );
}

/// The workspace member named `name`.
fn workspace_package(name: &str) -> &'static Package {
    workspace_metadata()
        .expect("`cargo metadata` runs")
        .workspace_packages()
        .into_iter()
        .find(|package| package.name.as_str() == name)
        .unwrap_or_else(|| panic!("`{name}` is not a workspace member"))
}

/// The names of `package`'s normal dependencies.
fn normal_dependencies(package: &Package) -> BTreeSet<&str> {
    package
        .dependencies
        .iter()
        .filter(|dependency| dependency.kind == DependencyKind::Normal)
        .map(|dependency| dependency.name.as_str())
        .collect()
}

#[test]
fn the_workspace_has_domain_crates() {
    let domains = domain_crates(workspace_metadata().expect("`cargo metadata` runs"));
    assert!(
        domains.len() >= 2,
        "expected the sample domain crates `switchboard-domain-*`, found {domains:?}"
    );
}

#[test]
fn every_sample_domain_crate_is_a_dependency_of_switchboard_domains() {
    let linked = normal_dependencies(workspace_package(DOMAINS_CRATE));
    let offenders: Vec<String> =
        domain_crates(workspace_metadata().expect("`cargo metadata` runs"))
            .into_iter()
            .filter(|domain| !OPT_IN_DOMAIN_CRATES.contains(&domain.as_str()))
            .filter(|domain| !linked.contains(domain.as_str()))
            .map(|domain| {
                format!(
                    "`{domain}` is not a [dependencies] entry of `{DOMAINS_CRATE}`: add \
                 `{domain} = {{ path = \"../{domain}\", version = \"0.0.0\" }}` to \
                 {DOMAINS_MANIFEST}"
                )
            })
            .collect();
    fail_with(&offenders, "domain crates that no binary links");
}

/// Whether `source` has a line `use <ident> as _;` (spacing aside).
fn references_crate(source: &str, ident: &str) -> bool {
    let wanted = format!("use {ident} as _;");
    source.lines().any(|line| {
        let normalised = line.split_whitespace().collect::<Vec<_>>().join(" ");
        normalised == wanted || normalised == format!("use ::{ident} as _;")
    })
}

#[test]
fn the_cli_links_switchboard_domains_and_the_opt_in_domains() {
    let path = workspace_root().join(CLI_MAIN);
    let source = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!("cannot read {CLI_MAIN} ({error}): the CLI's main must exist and link the domains")
    });
    let dependencies = normal_dependencies(workspace_package(CLI_PACKAGE));
    let mut offenders = Vec::new();
    for linked_crate in std::iter::once(DOMAINS_CRATE).chain(OPT_IN_DOMAIN_CRATES) {
        if !dependencies.contains(linked_crate) {
            offenders.push(format!(
                "`{linked_crate}` is not a [dependencies] entry of `{CLI_PACKAGE}`: add \
                 `{linked_crate}.workspace = true` to crates/switchboard-cli/Cargo.toml"
            ));
        }
        let ident = crate_ident(linked_crate);
        if !references_crate(&source, &ident) {
            offenders.push(format!(
                "{CLI_MAIN} has no `use {ident} as _;`: without it the domains' tools are not \
                 linked into the binary (rust-lang/rust#64731); add it next to the others"
            ));
        }
    }
    fail_with(&offenders, "domains the CLI does not link");
}

/// The tool names in the committed reference, in file order.
fn reference_tool_names(reference: &Value) -> Result<Vec<String>, String> {
    let tools = match reference {
        Value::Object(map) => map.get("tools").and_then(Value::as_array),
        Value::Array(items) => Some(items),
        _ => None,
    }
    .ok_or_else(|| "expected `{\"tools\": [...]}` or a top-level array of tools".to_owned())?;
    tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            tool.get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("tool #{index} has no string `name`"))
        })
        .collect()
}

#[tokio::test]
async fn the_tools_reference_lists_exactly_the_linked_tools() {
    let path = workspace_root().join(TOOLS_REFERENCE);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "cannot read {TOOLS_REFERENCE} ({error}): generate it with `cargo xtask catalog` \
             and commit it"
        )
    });
    let reference: Value = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{TOOLS_REFERENCE} is not JSON: {error}"));
    let listed = reference_tool_names(&reference)
        .unwrap_or_else(|problem| panic!("{TOOLS_REFERENCE} has an unexpected shape: {problem}"));

    let registry = start_registry().await.expect("the registry boots");
    let mut linked: BTreeSet<String> = registry
        .list()
        .iter()
        .filter(|tool| !OPT_IN_DOMAINS.contains(&tool.domain.as_ref()))
        .map(|tool| tool.name.to_string())
        .collect();
    registry.shutdown().await;
    // The workflows domains export are tools of the binary too (registered at boot), and so is
    // the tool that answers their runs' questions.
    linked.extend(
        switchboard_core::linked_workflows()
            .filter(|workflow| !OPT_IN_DOMAINS.contains(&workflow.domain))
            .map(|workflow| workflow.name.to_owned()),
    );
    linked.insert(switchboard_workflows_engine::ANSWER_TOOL.to_owned());

    let listed_set: BTreeSet<String> = listed.iter().cloned().collect();
    let mut offenders = Vec::new();
    if listed_set.len() != listed.len() {
        offenders.push(format!("{TOOLS_REFERENCE} lists a tool twice: {listed:?}"));
    }
    for missing in linked.difference(&listed_set) {
        offenders.push(format!(
            "`{missing}` is linked but not in {TOOLS_REFERENCE}"
        ));
    }
    for stale in listed_set.difference(&linked) {
        offenders.push(format!(
            "`{stale}` is in {TOOLS_REFERENCE} but no linked crate defines it"
        ));
    }
    fail_with(
        &offenders,
        &format!(
            "{TOOLS_REFERENCE} is out of date; run `cargo xtask catalog` and commit the result"
        ),
    );
}

#[test]
fn every_linked_domains_default_grants_join_the_built_in_matrix() {
    if let Err(error) = switchboard::PermissionMatrix::built_in() {
        panic!(
            "{error}: fix the domain's `default-permissions.toml` (the fragment its \
             `switchboard_core::default_grants!` declares)"
        );
    }
}

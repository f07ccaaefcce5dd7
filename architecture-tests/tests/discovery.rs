//! Guards tool discovery: every domain in the workspace reaches the `switchboard` binary.
//!
//! Architecture Invariant: every domain crate (`switchboard-domain-*`) is linked into
//! `switchboard-cli`: it is a normal dependency of the CLI, and the CLI's `main.rs` references it
//! with `use switchboard_domain_<name> as _;`, because a dependency alone does not link a crate
//! and its `#[tool]`s would silently disappear (rust-lang/rust#64731).
//!
//! Architecture Invariant: `docs/reference/tools.json` lists exactly the tools the linked
//! registry has (minus the opt-in domains, `OPT_IN_DOMAINS`, which the binary leaves out by
//! default), so the committed reference never drifts from the binary.

// Cargo dependencies only make crates candidates for linking; a crate whose `#[tool]`s must be
// registered has to be referenced (rust-lang/rust#64731).
use switchboard_domain_conformance as _;
use switchboard_domain_core as _;
use switchboard_domain_roster as _;

use std::collections::BTreeSet;

use architecture_tests::{
    calls::start_registry,
    workspace::{OPT_IN_DOMAINS, crate_ident, domain_crates, workspace_metadata, workspace_root},
};
use cargo_metadata::DependencyKind;
use serde_json::Value;

const CLI_PACKAGE: &str = "switchboard-cli";
const CLI_MAIN: &str = "crates/switchboard-cli/src/main.rs";
const TOOLS_REFERENCE: &str = "docs/reference/tools.json";

fn fail_with(offenders: &[String], header: &str) {
    assert!(
        offenders.is_empty(),
        "{header}:\n  - {}",
        offenders.join("\n  - ")
    );
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
fn every_domain_crate_is_a_dependency_of_the_cli() {
    let metadata = workspace_metadata().expect("`cargo metadata` runs");
    let cli = metadata
        .workspace_packages()
        .into_iter()
        .find(|package| package.name.as_str() == CLI_PACKAGE)
        .unwrap_or_else(|| {
            panic!("`{CLI_PACKAGE}` is not a workspace member: the binary that links the domains")
        });
    let normal_dependencies: BTreeSet<&str> = cli
        .dependencies
        .iter()
        .filter(|dependency| dependency.kind == DependencyKind::Normal)
        .map(|dependency| dependency.name.as_str())
        .collect();
    let offenders: Vec<String> = domain_crates(metadata)
        .into_iter()
        .filter(|domain| !normal_dependencies.contains(domain.as_str()))
        .map(|domain| {
            format!(
                "`{domain}` is not a [dependencies] entry of `{CLI_PACKAGE}`: add \
                 `{domain}.workspace = true` to crates/switchboard-cli/Cargo.toml"
            )
        })
        .collect();
    fail_with(&offenders, "domain crates the CLI does not depend on");
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
fn the_cli_references_every_domain_crate() {
    let path = workspace_root().join(CLI_MAIN);
    let source = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "cannot read {CLI_MAIN} ({error}): the CLI's main must exist and reference every \
             domain crate"
        )
    });
    let metadata = workspace_metadata().expect("`cargo metadata` runs");
    let offenders: Vec<String> = domain_crates(metadata)
        .into_iter()
        .map(|domain| crate_ident(&domain))
        .filter(|ident| !references_crate(&source, ident))
        .map(|ident| {
            format!(
                "{CLI_MAIN} has no `use {ident} as _;`: without it the domain's tools are not \
                 linked into the binary (rust-lang/rust#64731); add it next to the others"
            )
        })
        .collect();
    fail_with(&offenders, "domain crates the CLI does not reference");
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
    let linked: BTreeSet<String> = registry
        .list()
        .iter()
        .filter(|tool| !OPT_IN_DOMAINS.contains(&tool.domain.as_ref()))
        .map(|tool| tool.name.to_string())
        .collect();
    registry.shutdown().await;

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

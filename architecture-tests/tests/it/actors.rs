//! Architecture Invariant: the runtime has five kinds of actor and no others: the
//! `RegistryActor` (supervisor of the domains, sole writer of the tool table), one
//! `DomainActor` per domain (sole writer of its state), the `OrchestratorActor` (owner of the
//! route table), and for mounted MCP servers one `ServerActor` per server (owner of its
//! connection and its restarts) under the mounts' `Supervisor`. `ARCHITECTURE.md`'s actor table says why each exists; a new actor needs a
//! row there and a place in this list.

use architecture_tests::workspace::{display_path, workspace_root, workspace_rust_files};

/// The actors the design names, and where each is defined.
const ACTORS: [(&str, &str); 5] = [
    ("RegistryActor", "crates/switchboard-registry/src/actor.rs"),
    ("DomainActor", "crates/switchboard-registry/src/domain.rs"),
    (
        "OrchestratorActor",
        "crates/switchboard-orchestrator/src/orchestrator.rs",
    ),
    ("ServerActor", "crates/switchboard-mounts/src/actor.rs"),
    ("Supervisor", "crates/switchboard-mounts/src/supervisor.rs"),
];

/// Every `impl Actor for X` (or `impl ractor::Actor for X`) in the crates' library sources,
/// as `(X, file)`.
fn actor_impls() -> Vec<(String, String)> {
    let root = workspace_root();
    let mut found = Vec::new();
    for path in workspace_rust_files().expect("the workspace sources can be listed") {
        let relative = display_path(path.strip_prefix(&root).unwrap_or(&path));
        if !(relative.starts_with("crates/") && relative.contains("/src/")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file is readable");
        for line in text.lines() {
            let line = line.trim_start();
            let rest = line
                .strip_prefix("impl Actor for ")
                .or_else(|| line.strip_prefix("impl ractor::Actor for "));
            if let Some(rest) = rest {
                let name: String = rest
                    .chars()
                    .take_while(|ch| ch.is_alphanumeric() || *ch == '_')
                    .collect();
                found.push((name, relative.clone()));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn the_runtime_has_exactly_the_actors_the_design_names() {
    let mut expected: Vec<(String, String)> = ACTORS
        .iter()
        .map(|(name, file)| ((*name).to_owned(), (*file).to_owned()))
        .collect();
    expected.sort();
    assert_eq!(
        actor_impls(),
        expected,
        "an actor was added or removed: give it a row in ARCHITECTURE.md's actor table saying \
         why it exists, then list it here"
    );
}

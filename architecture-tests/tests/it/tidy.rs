//! Tidy checks over the workspace's own sources and manifests, after rust-analyzer's
//! `xtask/src/tidy.rs`: run by plain `cargo test`, so no separate CI step can drift from them.
//!
//! Architecture Invariant: every `.rs` file opens with a `//!` module doc saying what it is for
//! (a `lib.rs` may instead open with `#![doc = include_str!(..)]`).
//!
//! Architecture Invariant: no leftover debugging or placeholder macros, no printing from
//! library crates (only `switchboard-cli` and the dev-only crates talk to a terminal), no
//! `should_panic` tests, and no source file over the line budget.
//!
//! Architecture Invariant: every internal dependency edge declared with a `path` carries
//! `version = "0.0.0"`.
//!
//! Each check collects every offender and reports them all at once. The sources walked are the
//! `.rs` files under `crates/`, `xtask/`, `tests/` and `architecture-tests/`, minus `target`
//! directories and the trybuild fixtures under `crates/*/tests/ui/`.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use architecture_tests::workspace::{
    DEV_ONLY_DIRS, SOURCE_ROOTS, display_path, workspace_root, workspace_rust_files,
};

/// The most lines a source file may have. axum's median file is about 220 lines; past this
/// budget, split the module (see STYLE.md).
const MAX_LINES: usize = 800;

// The needles are assembled with `concat!` so that this file does not trip its own checks.
const DEBUGGING_MACROS: [&str; 3] = [
    concat!("dbg", "!("),
    concat!("todo", "!("),
    concat!("unimplemented", "!("),
];
const PRINTING_MACROS: [&str; 4] = [
    concat!("println", "!"),
    concat!("eprintln", "!"),
    concat!("print", "!("),
    concat!("eprint", "!("),
];
const SHOULD_PANIC: &str = concat!("#[should", "_panic");
const CFG_TEST: &str = concat!("#[cfg", "(test)]");

/// A source file, read once.
struct SourceFile {
    path: PathBuf,
    relative: String,
    text: String,
}

fn sources() -> Vec<SourceFile> {
    let files = workspace_rust_files().expect("the workspace sources can be listed");
    assert!(
        files.len() > 20,
        "found only {} .rs files under {SOURCE_ROOTS:?}: is the walk broken?",
        files.len()
    );
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
            SourceFile {
                relative: display_path(&path),
                path,
                text,
            }
        })
        .collect()
}

fn fail_with(offenders: &[String], header: &str) {
    assert!(
        offenders.is_empty(),
        "{header} ({} found):\n  - {}",
        offenders.len(),
        offenders.join("\n  - ")
    );
}

#[test]
fn every_file_starts_with_a_module_doc() {
    let offenders: Vec<String> = sources()
        .iter()
        .filter(|file| {
            let first_line = file.text.lines().next().unwrap_or_default();
            !(first_line.starts_with("//!") || first_line.starts_with("#![doc = include_str!("))
        })
        .map(|file| file.relative.clone())
        .collect();
    fail_with(
        &offenders,
        "files that do not open with a `//!` doc saying what the module is for and why",
    );
}

#[test]
fn no_leftover_debugging_macros() {
    let mut offenders = Vec::new();
    for file in sources() {
        for (index, line) in file.text.lines().enumerate() {
            if let Some(found) = DEBUGGING_MACROS
                .iter()
                .find(|needle| line.contains(**needle))
            {
                offenders.push(format!(
                    "{}:{}: `{found}` — finish or remove it: `{}`",
                    file.relative,
                    index + 1,
                    line.trim()
                ));
            }
        }
    }
    fail_with(&offenders, "leftover debugging or placeholder macros");
}

#[test]
fn no_should_panic_tests() {
    let mut offenders = Vec::new();
    for file in sources() {
        for (index, line) in file.text.lines().enumerate() {
            if line.contains(SHOULD_PANIC) {
                offenders.push(format!(
                    "{}:{}: assert on the returned error (or catch the panic) instead",
                    file.relative,
                    index + 1
                ));
            }
        }
    }
    fail_with(&offenders, &format!("`{SHOULD_PANIC}]` tests"));
}

#[test]
fn no_file_is_over_the_line_budget() {
    let mut oversized: Vec<(usize, String)> = sources()
        .into_iter()
        .map(|file| (file.text.lines().count(), file.relative))
        .filter(|(lines, _)| *lines > MAX_LINES)
        .collect();
    oversized.sort_by(|left, right| right.cmp(left));
    let offenders: Vec<String> = oversized
        .into_iter()
        .map(|(lines, relative)| format!("{relative}: {lines} lines"))
        .collect();
    fail_with(
        &offenders,
        &format!("files over {MAX_LINES} lines; split them into smaller modules"),
    );
}

/// Whether a file belongs to a crate that may print: the CLI and the dev-only crates, plus
/// any crate's integration tests, benches, examples and build script.
fn may_print(relative: &str) -> bool {
    let parts: Vec<&str> = relative.split('/').collect();
    let top_level = parts.first().copied().unwrap_or_default();
    DEV_ONLY_DIRS.contains(&top_level)
        || relative.starts_with("crates/switchboard-cli/")
        || parts
            .iter()
            .any(|part| matches!(*part, "tests" | "benches" | "examples"))
        || parts.last() == Some(&"build.rs")
}

/// The `.rs` files (and module directories) declared as `#[cfg(test)] mod name;` by `file`.
fn test_only_modules(file: &SourceFile) -> Vec<PathBuf> {
    let Some(dir) = file.path.parent() else {
        return Vec::new();
    };
    let stem = file.path.file_stem().and_then(|stem| stem.to_str());
    // `lib.rs`, `main.rs` and `mod.rs` own the modules beside them; `foo.rs` owns `foo/`.
    let base: PathBuf = match stem {
        Some("lib" | "main" | "mod") | None => dir.to_path_buf(),
        Some(stem) => dir.join(stem),
    };
    let lines: Vec<&str> = file.text.lines().map(str::trim).collect();
    let mut modules = Vec::new();
    for pair in lines.windows(2) {
        if pair[0] != CFG_TEST {
            continue;
        }
        let declaration = pair[1].strip_prefix("pub(crate) ").unwrap_or(pair[1]);
        if let Some(name) = declaration
            .strip_prefix("mod ")
            .and_then(|rest| rest.strip_suffix(';'))
        {
            modules.push(base.join(format!("{name}.rs")));
            modules.push(base.join(name));
        }
    }
    modules
}

/// The lines of `file` that compile outside tests, numbered from 1: everything before the first
/// `#[cfg(test)]` item that is not a `mod name;` declaration.
fn non_test_lines(file: &SourceFile) -> Vec<(usize, &str)> {
    let mut kept = Vec::new();
    let mut lines = file.text.lines().enumerate().peekable();
    while let Some((index, line)) = lines.next() {
        if line.trim() == CFG_TEST {
            let declares_module = lines.peek().is_some_and(|(_, next)| {
                let next = next.trim();
                next.starts_with("mod ") && next.ends_with(';')
            });
            if declares_module {
                lines.next();
                continue;
            }
            break;
        }
        kept.push((index + 1, line));
    }
    kept
}

#[test]
fn library_crates_do_not_print() {
    let sources = sources();
    let test_only: Vec<PathBuf> = sources.iter().flat_map(test_only_modules).collect();
    let is_test_only = |path: &Path| {
        test_only
            .iter()
            .any(|module| path == module || (module.is_dir() && path.starts_with(module)))
    };
    let mut offenders = Vec::new();
    for file in &sources {
        if may_print(&file.relative) || is_test_only(&file.path) {
            continue;
        }
        for (number, line) in non_test_lines(file) {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(found) = PRINTING_MACROS
                .iter()
                .find(|needle| line.contains(**needle))
            {
                offenders.push(format!(
                    "{}:{number}: `{found}` in a library: use `tracing`, or return the text to \
                     the caller: `{}`",
                    file.relative,
                    line.trim()
                ));
            }
        }
    }
    fail_with(&offenders, "printing from library crates");
}

/// Every `Cargo.toml` of the workspace: the root and one per crate under the source roots.
fn manifests() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, found);
                }
            } else if name == "Cargo.toml" {
                found.push(path);
            }
        }
    }
    let root = workspace_root();
    let mut found = vec![root.join("Cargo.toml")];
    for source_root in SOURCE_ROOTS {
        walk(&root.join(source_root), &mut found);
    }
    found.retain(|path| !architecture_tests::workspace::is_trybuild_fixture(&display_path(path)));
    found.sort();
    found
}

/// The dependency tables of a manifest, with their location for messages.
fn dependency_tables(manifest: &toml::Table) -> Vec<(String, &toml::Table)> {
    const KINDS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut tables = Vec::new();
    if let Some(table) = manifest
        .get("workspace")
        .and_then(|workspace| workspace.get("dependencies"))
        .and_then(toml::Value::as_table)
    {
        tables.push(("[workspace.dependencies]".to_owned(), table));
    }
    for kind in KINDS {
        if let Some(table) = manifest.get(kind).and_then(toml::Value::as_table) {
            tables.push((format!("[{kind}]"), table));
        }
    }
    if let Some(targets) = manifest.get("target").and_then(toml::Value::as_table) {
        for (cfg, target) in targets {
            for kind in KINDS {
                if let Some(table) = target.get(kind).and_then(toml::Value::as_table) {
                    tables.push((format!("[target.{cfg:?}.{kind}]"), table));
                }
            }
        }
    }
    tables
}

#[test]
fn internal_dependencies_carry_version_0_0_0() {
    let mut offenders = Vec::new();
    let mut internal_edges_seen = BTreeSet::new();
    for path in manifests() {
        let relative = display_path(&path);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("cannot read {relative}: {error}"));
        let manifest: toml::Table = text
            .parse()
            .unwrap_or_else(|error| panic!("{relative} is not valid TOML: {error}"));
        for (table_name, table) in dependency_tables(&manifest) {
            for (name, spec) in table {
                // Internal means declared by path; `workspace = true` entries inherit the
                // `[workspace.dependencies]` entry, which is checked on its own.
                let Some(spec) = spec.as_table() else {
                    continue;
                };
                if !spec.contains_key("path") {
                    continue;
                }
                internal_edges_seen.insert(name.clone());
                let version = spec.get("version").and_then(toml::Value::as_str);
                if version != Some("0.0.0") {
                    offenders.push(format!(
                        "{relative} {table_name} `{name}`: has {}; internal crates are versioned \
                         `version = \"0.0.0\"`",
                        version.map_or_else(|| "no version".to_owned(), |v| format!("`{v}`"))
                    ));
                }
            }
        }
    }
    assert!(
        internal_edges_seen.contains("switchboard-core"),
        "no path dependency found in any manifest: is the manifest walk broken? ({:?})",
        manifests()
    );
    fail_with(
        &offenders,
        "internal dependencies without `version = \"0.0.0\"`",
    );
}

// The helpers above decide what is skipped; pin that they skip only what they should.

fn synthetic(relative: &str, text: &str) -> SourceFile {
    SourceFile {
        path: workspace_root().join(relative),
        relative: relative.to_owned(),
        text: text.to_owned(),
    }
}

#[test]
fn only_the_cli_and_dev_only_crates_may_print() {
    assert!(may_print("crates/switchboard-cli/src/main.rs"));
    assert!(may_print("crates/switchboard-registry/tests/invoke.rs"));
    assert!(may_print("xtask/src/main.rs"));
    assert!(may_print("tests/tests/ask.rs"));
    assert!(!may_print("crates/switchboard-registry/src/invoke.rs"));
    assert!(!may_print("crates/switchboard-domain-roster/src/tools.rs"));
}

#[test]
fn test_code_is_found_inline_and_in_declared_modules() {
    let file = synthetic(
        "crates/switchboard-audit/src/memory.rs",
        &format!(
            "//! Doc.\n{CFG_TEST}\nmod tests;\nfn kept() {{}}\n{CFG_TEST}\nmod inline {{\n}}\n"
        ),
    );
    let kept: Vec<usize> = non_test_lines(&file)
        .into_iter()
        .map(|(number, _)| number)
        .collect();
    assert_eq!(kept, [1, 4]);
    let modules = test_only_modules(&file);
    let dir = workspace_root().join("crates/switchboard-audit/src/memory");
    assert_eq!(modules, [dir.join("tests.rs"), dir.join("tests")]);

    let lib = synthetic(
        "crates/switchboard-domain-directory/src/lib.rs",
        &format!("#![doc = include_str!(\"../README.md\")]\n{CFG_TEST}\nmod testing;\n"),
    );
    let dir = workspace_root().join("crates/switchboard-domain-directory/src");
    assert_eq!(
        test_only_modules(&lib),
        [dir.join("testing.rs"), dir.join("testing")]
    );
}

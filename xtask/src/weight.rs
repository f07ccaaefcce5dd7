//! `cargo xtask weight`: what embedding Switchboard costs to build, beside the peer an embedder
//! would pick instead.
//!
//! It builds, each cold (a fresh target directory) in a directory of its own outside the
//! workspace, with a copy of the workspace's `Cargo.lock`, in the dev profile:
//!
//! - the crate of `docs/embed.md` as the guide writes it (default features and `mcp`);
//! - the guide's domain (`src/desk.rs`) with an in-process `main` (`xtask/weight/in_process.rs`),
//!   on the facade's default features, and then without default features;
//! - a one-tool MCP server with plain rmcp (`xtask/weight/rmcp-one-tool`).
//!
//! and prints, for each, the crates compiled (cargo's `Compiling` lines), the cold build's wall
//! time and the binary's size, whole and stripped (`strip`), with ratios against rmcp, and
//! removes each target directory once measured. It is a report, not a test: its figures depend
//! on the machine and its load (`docs/benchmarks.md`, "Build weight").

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail, ensure};

use crate::project_root;

/// The dependency line as the guide writes it; the report points it at this repository.
const GUIDE_SOURCE: &str = r#"git = "https://example.invalid/switchboard""#;
const GUIDE_FEATURES: &str = r#", features = ["mcp"]"#;

/// One crate to build.
#[derive(Debug, Clone)]
struct Subject {
    label: &'static str,
    /// Its package name, which is its binary's name.
    binary: &'static str,
    /// Its files: (path inside the crate, contents).
    files: Vec<(&'static str, String)>,
}

/// One crate's figures.
#[derive(Debug, Clone)]
pub struct Weight {
    /// What was built.
    pub label: &'static str,
    /// Crates compiled by the cold build (its own included).
    pub crates: usize,
    /// Wall time of the cold build.
    pub build: Duration,
    /// The debug binary's size, in bytes.
    pub binary_bytes: u64,
    /// The same binary stripped of symbols and debug info, in bytes.
    pub stripped_bytes: u64,
}

/// Builds every subject cold and returns its figures, rmcp's last. `checkout` is the
/// Switchboard checkout to measure (its guide, facade and `xtask/weight`); by default this one.
pub fn run(checkout: Option<&Path>) -> anyhow::Result<Vec<Weight>> {
    ensure!(
        crate::system_packages::runs("strip"),
        "`cargo xtask weight` measures stripped binaries with `strip` (binutils): install it"
    );
    let root = match checkout {
        Some(dir) => std::fs::canonicalize(dir)
            .with_context(|| format!("cannot find the checkout {}", dir.display()))?,
        None => project_root(),
    };
    let scratch = std::env::temp_dir().join("switchboard-weight");
    let mut weights = Vec::new();
    for subject in subjects(&root)? {
        note(&format!("building {} cold", subject.label));
        weights.push(measure(&root, &scratch, &subject)?);
    }
    Ok(weights)
}

fn subjects(root: &Path) -> anyhow::Result<Vec<Subject>> {
    let guide = read(&root.join("docs/embed.md"))?;
    let manifest = guide_block(&guide, "toml file=Cargo.toml")?;
    ensure!(
        manifest.contains(GUIDE_SOURCE) && manifest.contains(GUIDE_FEATURES),
        "the Cargo.toml of docs/embed.md should name `{GUIDE_SOURCE}` with `{GUIDE_FEATURES}`: \
         this report rewrites that line"
    );
    let facade = format!(
        "path = {:?}",
        root.join("crates/switchboard").display().to_string()
    );
    let as_written = manifest.replace(GUIDE_SOURCE, &facade);
    let defaults = as_written.replace(GUIDE_FEATURES, "");
    let fewest = as_written.replace(GUIDE_FEATURES, ", default-features = false");
    let desk = guide_block(&guide, "rust file=src/desk.rs")?.to_owned();
    let main = guide_block(&guide, "rust file=src/main.rs")?.to_owned();
    let in_process = read(&root.join("xtask/weight/in_process.rs"))?;
    let rmcp = root.join("xtask/weight/rmcp-one-tool");
    let guide_crate = |label, manifest: String, main: String| Subject {
        label,
        binary: "helpdesk",
        files: vec![
            ("Cargo.toml", manifest),
            ("src/desk.rs", desk.clone()),
            ("src/main.rs", main),
        ],
    };
    Ok(vec![
        guide_crate("docs/embed.md (defaults + mcp)", as_written, main),
        guide_crate("in-process (defaults)", defaults, in_process.clone()),
        guide_crate("in-process (no default features)", fewest, in_process),
        Subject {
            label: "rmcp, one tool (stdio)",
            binary: "rmcp-one-tool",
            files: vec![
                ("Cargo.toml", read(&rmcp.join("Cargo.toml"))?),
                ("src/main.rs", read(&rmcp.join("src/main.rs"))?),
            ],
        },
    ])
}

/// Writes `subject` under `scratch`, builds it in a fresh target directory, and measures it.
fn measure(root: &Path, scratch: &Path, subject: &Subject) -> anyhow::Result<Weight> {
    let dir = scratch.join(subject.binary).join(slug(subject.label));
    let target = dir.join("target");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot empty {}", dir.display()))?;
    }
    for (file, text) in &subject.files {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
        .context("cannot copy the workspace's Cargo.lock")?;
    let started = Instant::now();
    let output = Command::new("cargo")
        .current_dir(&dir)
        .arg("build")
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .context("cannot start `cargo build`: is cargo on PATH?")?;
    let build = started.elapsed();
    let log = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!("`cargo build` of {} failed:\n{log}", subject.label);
    }
    let crates = log
        .lines()
        .filter(|line| line.trim_start().starts_with("Compiling "))
        .count();
    let binary = target.join("debug").join(subject.binary);
    let stripped = dir.join("stripped");
    let status = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&binary)
        .status()
        .context("cannot start `strip`")?;
    ensure!(status.success(), "`strip {}` failed", binary.display());
    let weight = Weight {
        label: subject.label,
        crates,
        build,
        binary_bytes: size(&binary)?,
        stripped_bytes: size(&stripped)?,
    };
    // A cold target directory is over a gigabyte; the next run builds a fresh one anyway.
    std::fs::remove_dir_all(&target)
        .with_context(|| format!("cannot remove {}", target.display()))?;
    Ok(weight)
}

/// The figures as a Markdown table, with ratios against the last row (rmcp).
pub fn render(weights: &[Weight]) -> String {
    let Some(peer) = weights.last() else {
        return String::new();
    };
    let ratio = |ours: f64, theirs: f64| {
        if theirs > 0.0 {
            format!("{:.1}×", ours / theirs)
        } else {
            "–".to_owned()
        }
    };
    let mut table = String::from(
        "| crate | crates compiled | cold build | debug binary | stripped |\n|---|---|---|---|---|\n",
    );
    for weight in weights {
        let _ = writeln!(
            table,
            "| {} | {} ({}) | {:.0} s ({}) | {:.1} MB | {:.1} MB ({}) |",
            weight.label,
            weight.crates,
            ratio(weight.crates as f64, peer.crates as f64),
            weight.build.as_secs_f64(),
            ratio(weight.build.as_secs_f64(), peer.build.as_secs_f64()),
            megabytes(weight.binary_bytes),
            megabytes(weight.stripped_bytes),
            ratio(weight.stripped_bytes as f64, peer.stripped_bytes as f64),
        );
    }
    table
}

/// The body of the one fenced block of `guide` whose info string is `info`.
fn guide_block<'a>(guide: &'a str, info: &str) -> anyhow::Result<&'a str> {
    let fence = format!("```{info}\n");
    let start = guide
        .find(&fence)
        .with_context(|| format!("docs/embed.md has no block marked ```{info}"))?;
    let body = &guide[start + fence.len()..];
    let end = body
        .find("\n```\n")
        .with_context(|| format!("the ```{info} block of docs/embed.md is not closed"))?;
    Ok(&body[..=end])
}

fn slug(label: &str) -> String {
    label
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' })
        .collect()
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

fn size(path: &PathBuf) -> anyhow::Result<u64> {
    Ok(std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len())
}

fn megabytes(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}

#[allow(
    clippy::print_stderr,
    reason = "a command-line report says what it is building on the terminal"
)]
fn note(text: &str) {
    eprintln!("xtask weight: {text}");
}

//! Writes `$OUT_DIR/linked_domains.rs`: one `use <crate> as _;` per `switchboard-domain-*`
//! entry of this crate's `[dependencies]`.
//!
//! Cargo only offers a dependency to the linker; a crate that is never referenced is dropped,
//! and with it every `#[tool]` and domain it submits to `inventory` (rust-lang/rust#64731).
//! Generating the references from the manifest keeps adding a domain to one line.

use std::{env, error::Error, fs, path::PathBuf};

const DOMAIN_CRATE_PREFIX: &str = "switchboard-domain-";

fn main() -> Result<(), Box<dyn Error>> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let manifest_path = manifest_dir.join("Cargo.toml");
    println!("cargo::rerun-if-changed={}", manifest_path.display());

    let manifest: toml::Table = fs::read_to_string(&manifest_path)?.parse()?;
    let dependencies = manifest
        .get("dependencies")
        .and_then(toml::Value::as_table)
        .ok_or("crates/switchboard-domains/Cargo.toml has no [dependencies] table")?;
    let references: String = dependencies
        .keys()
        .filter(|name| name.starts_with(DOMAIN_CRATE_PREFIX))
        .map(|name| format!("use {} as _;\n", name.replace('-', "_")))
        .collect();

    let out_path = PathBuf::from(env::var("OUT_DIR")?).join("linked_domains.rs");
    fs::write(out_path, references)?;
    Ok(())
}

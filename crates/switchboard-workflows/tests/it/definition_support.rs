//! The tools definitions are validated against: the linked registry's own descriptors, as
//! `cargo xtask catalog` committed them to `docs/reference/tools.json` (checked to be current
//! by `cargo xtask catalog --check`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use switchboard_core::Category;
use switchboard_workflows::{ToolSignature, ValidationErrors};

/// The workspace root.
pub(crate) fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The example workflows, in `docs/examples/workflows/`.
pub(crate) fn example(name: &str) -> PathBuf {
    workspace_root().join("docs/examples/workflows").join(name)
}

/// Every registered tool's signature, by name.
pub(crate) fn tools() -> BTreeMap<String, ToolSignature> {
    let path = workspace_root().join("docs/reference/tools.json");
    let text = std::fs::read_to_string(&path).expect("docs/reference/tools.json is committed");
    let catalog: Value = serde_json::from_str(&text).expect("the catalog is JSON");
    catalog["tools"]
        .as_array()
        .expect("the catalog lists tools")
        .iter()
        .map(|tool| {
            let category: Category =
                serde_json::from_value(tool["category"].clone()).expect("a category");
            let signature = ToolSignature {
                category,
                input_schema: tool["input_schema"].clone(),
                output_schema: tool.get("output_schema").cloned().filter(|s| !s.is_null()),
            };
            (tool["name"].as_str().expect("a name").to_owned(), signature)
        })
        .collect()
}

/// The problems, as `path: message` lines.
pub(crate) fn lines(errors: &ValidationErrors) -> Vec<String> {
    errors
        .errors
        .iter()
        .map(|error| format!("{}: {}", error.path, error.message))
        .collect()
}

//! `cargo xtask catalog`: the tool reference, generated from the registry itself.
//!
//! The catalog is rendered from what a running registry reports, not from source files, so it
//! shows exactly the names, categories, permissions and JSON Schemas callers see. Two files
//! are written under `docs/reference/`: `tools.md` for people choosing a tool and
//! `tools.json` for programs (the Anthropic and MCP shapes included); beside them,
//! `workflow.schema.json`, the JSON Schema of workflow definition files, derived from the file
//! model. All are committed; `--check` (and the `#[test]` in `catalog/tests.rs`) fails while
//! any is stale.
//!
//! Output is deterministic: tools sorted by domain then name, JSON object keys sorted
//! whatever `serde_json` features the build unifies, no timestamps.

mod json_file;
mod markdown_file;
mod schema_fields;
#[cfg(test)]
mod tests;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use anyhow::Context as _;
use switchboard::{ToolDescriptor, ToolRegistry};
use switchboard_workflows::MemoryRunStore;
use switchboard_workflows_engine::{Engine, EngineOptions};

use crate::{
    ensure_file::{FileStatus, Mode, ensure_file_contents},
    project_root,
};

/// The markdown catalog, relative to the workspace root.
pub const MARKDOWN_PATH: &str = "docs/reference/tools.md";
/// The JSON catalog, relative to the workspace root.
pub const JSON_PATH: &str = "docs/reference/tools.json";
/// The JSON Schema of workflow definition files, for editors, relative to the workspace root.
pub const WORKFLOW_SCHEMA_PATH: &str = "docs/reference/workflow.schema.json";
/// The command that regenerates the files.
pub const FIX_COMMAND: &str = "cargo xtask catalog";

/// The domains this crate links (see the `use` lines in `lib.rs`). A listed domain that has no
/// tool in the booted registry means a domain crate was silently not linked.
const EXPECTED_DOMAINS: [&str; 2] = ["core", "roster"];

/// Everything the catalog is rendered from, read from a booted registry.
#[derive(Debug, Clone)]
pub struct RegistrySnapshot {
    /// Every tool, sorted by domain, then name.
    pub tools: Vec<ToolDescriptor>,
    /// Each linked domain's description, by domain name.
    pub domain_descriptions: BTreeMap<String, String>,
    /// For each permission a tool requires, the roles the built-in matrix grants it to, sorted.
    pub roles_by_permission: BTreeMap<String, Vec<String>>,
    /// The timeout of a call whose tool declares none.
    pub default_timeout: Duration,
    /// Every linked page, sorted by route.
    pub pages: Vec<PageSummary>,
    /// Every prompt the registry serves, sorted by name.
    pub prompts: Vec<switchboard::PromptDescriptor>,
}

/// A page, as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PageSummary {
    /// Its route, such as `/roster/shifts/{shift_id}`.
    pub route: String,
    /// Its title.
    pub title: String,
    /// What it shows.
    pub description: String,
    /// Its actions, as `(action, tool)`, in the page's order.
    pub actions: Vec<PageActionSummary>,
}

/// One action of a page.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PageActionSummary {
    /// What callers pick.
    pub name: String,
    /// The tool it runs.
    pub tool: String,
}

/// The two generated files' contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedCatalog {
    /// `docs/reference/tools.md`.
    pub markdown: String,
    /// `docs/reference/tools.json`.
    pub json: String,
}

/// Boots the registry the way the binaries do (every linked tool, the built-in permission
/// matrix, default configuration), reads it, and shuts it down.
pub fn snapshot_registry() -> anyhow::Result<RegistrySnapshot> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot build a tokio runtime to boot the registry in")?;
    let snapshot = runtime.block_on(async {
        let registry = ToolRegistry::builder()
            .start()
            .await
            .context("the tool registry refused to start")?;
        // The workflows domains export are tools too, registered as the binaries do.
        let engine = Engine::new(
            registry.clone(),
            Arc::new(MemoryRunStore::new()),
            EngineOptions::default(),
        );
        engine
            .register_exported()
            .await
            .context("an exported workflow is invalid")?;
        engine.shutdown();
        let snapshot = read_registry(&registry);
        registry.shutdown().await;
        anyhow::Ok(snapshot)
    })?;
    for domain in EXPECTED_DOMAINS {
        anyhow::ensure!(
            snapshot.tools.iter().any(|tool| tool.domain == domain),
            "the registry has no tool of domain `{domain}`: is `use switchboard_domain_{domain} \
             as _;` still in xtask/src/lib.rs?"
        );
    }
    Ok(snapshot)
}

fn read_registry(registry: &ToolRegistry) -> RegistrySnapshot {
    let mut tools: Vec<ToolDescriptor> = registry
        .list()
        .iter()
        .map(|tool| (**tool).clone())
        .collect();
    tools.sort_by(|left, right| (&left.domain, &left.name).cmp(&(&right.domain, &right.name)));
    let domain_descriptions = switchboard_core::linked_domains()
        .map(|domain| (domain.name.to_owned(), domain.description.trim().to_owned()))
        .collect();
    let roles_by_permission = tools
        .iter()
        .map(|tool| {
            let roles = registry
                .permissions()
                .roles_granting(&tool.permission)
                .iter()
                .map(ToString::to_string)
                .collect();
            (tool.permission.to_string(), roles)
        })
        .collect();
    let mut pages: Vec<PageSummary> = switchboard_core::linked_pages()
        .map(|page| PageSummary {
            route: page.spec.route.to_owned(),
            title: page.spec.title.to_owned(),
            description: page.spec.description.to_owned(),
            actions: (page.actions)()
                .into_iter()
                .map(|(name, tool)| PageActionSummary {
                    name: name.to_owned(),
                    tool: tool.to_owned(),
                })
                .collect(),
        })
        .collect();
    pages.sort_by(|left, right| left.route.cmp(&right.route));
    RegistrySnapshot {
        tools,
        domain_descriptions,
        roles_by_permission,
        default_timeout: registry.config().default_timeout,
        pages,
        prompts: registry
            .prompts()
            .iter()
            .map(|prompt| (**prompt).clone())
            .collect(),
    }
}

/// Renders both files from a snapshot.
pub fn generate(snapshot: &RegistrySnapshot) -> anyhow::Result<GeneratedCatalog> {
    Ok(GeneratedCatalog {
        markdown: markdown_file::render(snapshot),
        json: json_file::render(snapshot).context("cannot serialize tools.json")?,
    })
}

/// What `catalog` did to each file, in the order markdown, JSON, workflow schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogReport {
    /// Each file's path (relative to the workspace root) and status.
    pub files: Vec<(&'static str, FileStatus)>,
}

impl CatalogReport {
    /// The messages of the files found stale (check mode only), one per file.
    pub fn stale_messages(&self) -> Vec<&str> {
        self.files
            .iter()
            .filter_map(|(_, status)| match status {
                FileStatus::Stale(message) => Some(message.as_str()),
                FileStatus::UpToDate | FileStatus::Updated => None,
            })
            .collect()
    }
}

/// Generates the catalog and writes it (`Mode::Write`) or compares it with the committed
/// files (`Mode::Check`).
pub fn run(mode: Mode) -> anyhow::Result<CatalogReport> {
    let generated = generate(&snapshot_registry()?)?;
    let root = project_root();
    let mut files = Vec::new();
    let workflow_schema = workflow_schema()?;
    for (path, contents) in [
        (MARKDOWN_PATH, &generated.markdown),
        (JSON_PATH, &generated.json),
        (WORKFLOW_SCHEMA_PATH, &workflow_schema),
    ] {
        let status = ensure_file_contents(&root.join(path), path, contents, FIX_COMMAND, mode)?;
        files.push((path, status));
    }
    Ok(CatalogReport { files })
}

/// The workflow definition schema, derived from the file model: pretty JSON, keys sorted, one
/// trailing newline.
pub fn workflow_schema() -> anyhow::Result<String> {
    let schema = json_file::sorted_keys(&switchboard_workflows::json_schema());
    let mut text =
        serde_json::to_string_pretty(&schema).context("cannot serialize the workflow schema")?;
    text.push('\n');
    Ok(text)
}

/// Fails, naming the fix, when the committed catalog differs from a fresh one.
pub fn check() -> anyhow::Result<()> {
    let report = run(Mode::Check)?;
    let stale = report.stale_messages();
    anyhow::ensure!(stale.is_empty(), "{}", stale.join("\n"));
    Ok(())
}

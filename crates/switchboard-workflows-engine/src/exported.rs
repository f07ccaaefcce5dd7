//! Workflows that domains export as tools ([`switchboard_core::workflow!`]): each is validated
//! against the registry's tools and registered as a run-time tool whose call is a run.
//!
//! **A call is a run, as the caller.** The registry checks the tool's own category and
//! permission first, as for any tool: an agent's call of an `execute` workflow becomes a
//! proposal before any run exists. Past that gate, the run acts as the caller, so each step is
//! checked and audited again as that caller.
//!
//! **Progress.** Every node that completes or is skipped is one progress report (`done` = nodes
//! finished, `total` = the definition's node count), with a message naming the node.
//!
//! **Ends.** A completed run answers its output. A failed or cancelled run answers an error
//! naming the failing node, its error and what the compensation did. A run that waits for a
//! person (a proposal, an escalation, a step's question to its client) answers at once that it
//! is paused, with its run id and the proposal to decide or the questions to answer: the call
//! does not hang. A call dropped before its run ends (the
//! client cancelled it, or it timed out) cancels the run, which compensates.
//!
//! **Answers.** The questions are answered with the run-time tool `workflows_answer`
//! (`answering.rs`), registered beside the exported workflows; its call follows the run on
//! from the answer as the workflow's own call would have (`follow.rs`).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_core::{
    BoxFuture, CallContext, Category, ProgressNotifier, ToolContext, ToolDescriptor, ToolError,
    ToolOrigin, WorkflowSpec, linked_tools, linked_workflows,
};
use switchboard_registry::{Exposure, RegistryError, RuntimeTool, RuntimeToolSpec};
use switchboard_workflows::{
    Definition, Format, RunId, ToolSignatures, ValidationErrors, load_str,
};

use crate::Engine;

mod answering;
mod follow;

pub use answering::{ANSWER_PERMISSION, ANSWER_REFUSED, ANSWER_TOOL, UNKNOWN_RUN};
use follow::{Following, follow, unavailable};

/// The registry domain exported workflow tools run in (run-time tools need a domain without
/// state; the declaring domain keeps its own).
pub const EXPORTED_DOMAIN: &str = "workflows";

/// How long a call of an exported workflow may wait for its run's end.
pub const EXPORTED_CALL_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// The code of the error of a run that failed or was cancelled.
pub const WORKFLOW_FAILED: &str = "workflow_failed";

/// The code of the error of a run the engine could not start or follow.
pub const WORKFLOW_UNAVAILABLE: &str = "workflow_unavailable";

/// Why an exported workflow cannot be offered: the boot stops with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The definition does not validate against the registry's tools.
    #[error(
        "the workflow `{name}` exported by domain `{domain}` ({file}, declared at {location}) is invalid:\n{errors}"
    )]
    Invalid {
        /// The tool's name.
        name: String,
        /// The declaring domain.
        domain: String,
        /// The definition file, as declared.
        file: String,
        /// Where it is declared.
        location: String,
        /// What is wrong.
        errors: ValidationErrors,
    },
    /// The declared category is laxer than one of the workflow's steps.
    #[error(
        "the workflow `{name}` (declared at {location}) is exported as `{declared}`, but its step tool `{tool}` is `{step}`: declare `category: {}` or stricter",
        capitalized(.step.as_str())
    )]
    CategoryTooLax {
        /// The tool's name.
        name: String,
        /// Where it is declared.
        location: String,
        /// The declared category.
        declared: Category,
        /// The step's tool.
        tool: String,
        /// The step's category.
        step: Category,
    },
    /// The registry refused the tools.
    #[error("the exported workflows could not be registered: {0}")]
    Register(#[from] RegistryError),
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// An exported workflow, validated.
#[derive(Debug, Clone)]
pub struct ExportedWorkflow {
    /// Its declaration.
    pub spec: &'static WorkflowSpec,
    /// Its definition.
    pub definition: Arc<Definition>,
    /// Its tool's category: the declared one, else its strictest step's.
    pub category: Category,
}

/// Validates the linked workflows of the domains `tools` has tools of against `tools`. A
/// workflow whose declaring domain has no tool there is left out (its domain is excluded), and
/// so is one with a step whose tool `tool_left_out` says went with its domain (a linked tool
/// of a domain the registry leaves out); a step naming any other missing tool is an error.
pub fn validate_exported(
    tools: &dyn ToolSignatures,
    domain_present: &dyn Fn(&str) -> bool,
    tool_left_out: &dyn Fn(&str) -> bool,
) -> Result<Vec<ExportedWorkflow>, ExportError> {
    let mut specs: Vec<&'static WorkflowSpec> = linked_workflows()
        .filter(|spec| domain_present(spec.domain))
        .filter(|spec| match left_out_step(spec, tool_left_out) {
            Some(tool) => {
                tracing::debug!(
                    workflow = spec.name,
                    tool,
                    "exported workflow not offered: its step's tool went with its domain"
                );
                false
            }
            None => true,
        })
        .collect();
    specs.sort_by_key(|spec| spec.name);
    specs
        .into_iter()
        .map(|spec| validate_one(spec, tools))
        .collect()
}

fn validate_one(
    spec: &'static WorkflowSpec,
    tools: &dyn ToolSignatures,
) -> Result<ExportedWorkflow, ExportError> {
    let location = format!("{}:{}", spec.location.file, spec.location.line);
    let definition = load_str(spec.source, tools).map_err(|errors| ExportError::Invalid {
        name: spec.name.to_owned(),
        domain: spec.domain.to_owned(),
        file: spec.file.to_owned(),
        location: location.clone(),
        errors,
    })?;
    let mut step_tools = Vec::new();
    tool_names(&definition.document, &mut step_tools);
    let strictest = step_tools
        .iter()
        .filter_map(|tool| Some((tool, tools.signature(tool)?.category)))
        .max_by_key(|(_, category)| *category);
    let category = match (spec.category, strictest) {
        (Some(declared), Some((tool, step))) if declared < step => {
            return Err(ExportError::CategoryTooLax {
                name: spec.name.to_owned(),
                location,
                declared,
                tool: tool.clone(),
                step,
            });
        }
        (Some(declared), _) => declared,
        (None, Some((_, step))) => step,
        (None, None) => Category::Read,
    };
    Ok(ExportedWorkflow {
        spec,
        definition: Arc::new(definition),
        category,
    })
}

/// The first tool `spec`'s definition names that `tool_left_out` says went with its domain.
/// A definition that does not parse names none: its validation reports it.
fn left_out_step(spec: &WorkflowSpec, tool_left_out: &dyn Fn(&str) -> bool) -> Option<String> {
    let file = switchboard_workflows::parse(spec.source, Format::detect(None, spec.source)).ok()?;
    let document = serde_json::to_value(&file).ok()?;
    let mut names = Vec::new();
    tool_names(&document, &mut names);
    names.into_iter().find(|name| tool_left_out(name))
}

/// Every tool a definition document names (steps, approvals, compensations).
fn tool_names(document: &Value, names: &mut Vec<String>) {
    match document {
        Value::Object(fields) => {
            for (key, value) in fields {
                match (key.as_str(), value) {
                    ("tool", Value::String(name)) => names.push(name.clone()),
                    // A node's input and output mappings are data, not nodes.
                    ("params" | "input" | "output" | "input_schema", _) => {}
                    _ => tool_names(value, names),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| tool_names(item, names)),
        _ => {}
    }
}

/// How many nodes a definition document has, nested ones included.
fn node_count(document: &Value) -> usize {
    match document {
        Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| match (key.as_str(), value) {
                ("nodes", Value::Array(nodes)) => nodes.len() + node_count(value),
                ("params" | "input" | "output", _) => 0,
                _ => node_count(value),
            })
            .sum(),
        Value::Array(items) => items.iter().map(node_count).sum(),
        _ => 0,
    }
}

impl Engine {
    /// The run-time tools of every workflow the registry's domains export, validated against
    /// the registry's tools. An invalid workflow, or one exported as a laxer category than
    /// one of its steps, is an error naming its file and declaration.
    pub fn exported_tools(&self) -> Result<Vec<RuntimeToolSpec>, ExportError> {
        let registry = &self.shared.registry;
        let tools = registry.list();
        let present = |domain: &str| !registry.list_by_domain(domain).is_empty();
        let left_out = |tool: &str| {
            registry.find(tool).is_none()
                && linked_tools().any(|entry| {
                    entry.spec.name == tool && registry.excludes_domain(entry.spec.domain)
                })
        };
        Ok(validate_exported(&tools, &present, &left_out)?
            .into_iter()
            .map(|exported| self.tool_spec(exported))
            .collect())
    }

    /// Registers [`exported_tools`](Self::exported_tools) and [`answer_tool`](Self::answer_tool)
    /// (`workflows_answer`, for the questions of every run of this engine's store, however
    /// started) with the engine's registry; returns how many tools. Call it once, after the
    /// registry and the engine are up (the CLI does for every command; a Rust program embedding
    /// the engine calls it itself).
    pub async fn register_exported(&self) -> Result<usize, ExportError> {
        let mut tools = self.exported_tools()?;
        let exported = tools.len();
        tools.push(self.answer_tool());
        let count = tools.len();
        self.shared.registry.register(tools).await?;
        tracing::debug!(
            exported,
            "registered the exported workflows and `{ANSWER_TOOL}`"
        );
        Ok(count)
    }

    fn tool_spec(&self, exported: ExportedWorkflow) -> RuntimeToolSpec {
        let spec = exported.spec;
        let input_schema = exported
            .definition
            .input_schema
            .clone()
            .unwrap_or_else(|| json!({"type": "object"}));
        let descriptor = ToolDescriptor {
            name: Cow::Borrowed(spec.name),
            title: None,
            domain: Cow::Borrowed(EXPORTED_DOMAIN),
            category: exported.category,
            permission: Cow::Borrowed(spec.permission),
            description: Cow::Borrowed(spec.description),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: Some(EXPORTED_CALL_TIMEOUT),
            input_schema: Arc::new(input_schema),
            output_schema: None,
            tasks: switchboard_core::TaskSupport::Optional,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: format!(
                    "workflow {} exported by domain `{}` ({}:{})",
                    spec.file, spec.domain, spec.location.file, spec.location.line
                ),
            },
        };
        RuntimeToolSpec {
            descriptor,
            tool: Arc::new(WorkflowTool {
                engine: self.clone(),
                total: node_count(&exported.definition.document),
                definition: exported.definition,
            }),
            exposure: Exposure::Listed,
        }
    }
}

/// An exported workflow's body: a run, followed to its end or to a pause.
struct WorkflowTool {
    engine: Engine,
    definition: Arc<Definition>,
    total: usize,
}

impl RuntimeTool for WorkflowTool {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.run(ctx, params))
    }
}

/// Cancels the run when the call is dropped before the run ended or paused.
struct CancelOnDrop {
    engine: Engine,
    run: RunId,
    caller: CallContext,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let engine = self.engine.clone();
        let (run, caller) = (self.run, self.caller.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = engine.cancel(run, &caller).await {
                    tracing::debug!(%run, %error, "the dropped call's run was not cancelled");
                }
            });
        }
    }
}

impl WorkflowTool {
    async fn run(&self, ctx: &ToolContext, params: Value) -> Result<Value, ToolError> {
        let mut caller = CallContext::from(ctx.caller());
        // The run's steps report to nobody: the tool reports the run's progress itself.
        caller.progress = ProgressNotifier::none();
        caller.idempotency_key = None;
        let run = self
            .engine
            .start(Arc::clone(&self.definition), params, &caller)
            .await
            .map_err(unavailable)?;
        let mut guard = CancelOnDrop {
            engine: self.engine.clone(),
            run,
            caller: caller.clone(),
            armed: true,
        };
        let following = Following {
            run,
            after: 0,
            done: 0,
            total: self.total,
        };
        follow(&self.engine, ctx, &caller, following, || {
            guard.armed = false
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use switchboard_core::SourceLocation;
    use switchboard_workflows::ToolSignature;

    use super::*;

    const SOURCE: &str = r#"
workflow: touch_twice
expressions: cel
nodes:
  - id: look
    tool: look
    params: {}
  - id: touch
    tool: touch
    params: {}
"#;

    fn spec(category: Option<Category>) -> &'static WorkflowSpec {
        Box::leak(Box::new(WorkflowSpec {
            name: "test_touch_twice",
            domain: "test",
            description: "Looks, then touches.",
            category,
            permission: "test.write",
            file: "touch_twice.yaml",
            source: SOURCE,
            location: SourceLocation {
                file: file!(),
                line: line!(),
            },
        }))
    }

    fn tools() -> BTreeMap<String, ToolSignature> {
        let signature = |category| ToolSignature {
            category,
            input_schema: json!({"type": "object"}),
            output_schema: None,
        };
        BTreeMap::from([
            ("look".to_owned(), signature(Category::Read)),
            ("touch".to_owned(), signature(Category::Execute)),
        ])
    }

    #[test]
    fn the_category_defaults_to_the_strictest_step() {
        let exported = validate_one(spec(None), &tools()).expect("valid");
        assert_eq!(exported.category, Category::Execute);
        let exported = validate_one(spec(Some(Category::Restricted)), &tools()).expect("valid");
        assert_eq!(exported.category, Category::Restricted);
    }

    #[test]
    fn a_category_laxer_than_a_step_is_refused() {
        let error = validate_one(spec(Some(Category::Read)), &tools()).expect_err("too lax");
        assert!(
            matches!(&error, ExportError::CategoryTooLax { tool, step: Category::Execute, .. } if tool == "touch"),
            "{error}"
        );
        assert!(error.to_string().contains("category: Execute"), "{error}");
    }

    #[test]
    fn a_workflow_whose_step_tool_went_with_its_domain_is_left_out() {
        let gone = |tool: &str| tool == "touch";
        let kept = |_: &str| false;

        assert_eq!(left_out_step(spec(None), &gone).as_deref(), Some("touch"));
        assert_eq!(left_out_step(spec(None), &kept), None);
    }

    #[test]
    fn an_invalid_definition_names_its_file() {
        let mut tools = tools();
        tools.remove("touch");
        let error = validate_one(spec(None), &tools).expect_err("unknown tool");
        let message = error.to_string();
        assert!(message.contains("touch_twice.yaml"), "{message}");
        assert!(message.contains("touch"), "{message}");
    }
}

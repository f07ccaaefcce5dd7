//! The definition file: what people write, in YAML or JSON, before validation.
//!
//! These serde types are the one description of the format. The JSON Schema editors use
//! (`docs/reference/workflow.schema.json`) is derived from them, the typed builder fills them,
//! and [`validate`](crate::validate()) reads a document through them, so the file, the schema
//! and the builder cannot drift apart. Every type denies unknown fields: a misspelt key is an
//! error, never a silently ignored line.
//!
//! A node is one flat object with exactly one *kind key* (`tool`, `condition`, `foreach`,
//! `parallel`, `approval`, `wait`, `workflow`, `end`) and the keys that kind takes. The flat
//! shape reads best in YAML; validation checks that a node names one kind and only that kind's
//! keys, with the node's path.
//!
//! A file is read as YAML (with `serde-saphyr`, which reports line and column) unless it ends
//! in `.json` or its text starts with `{`. Sub-workflows named by path are loaded relative to
//! the file that names them and inlined, so the document a definition keeps is
//! self-contained; a cycle of files is refused with the chain of paths.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::definition::Definition;
use crate::validate::{ToolSignatures, ValidationError, ValidationErrors, validate};

/// A workflow definition file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Switchboard workflow")]
pub struct WorkflowFile {
    /// The workflow's name: `[a-z0-9_]`, at most 64 characters.
    pub workflow: String,
    /// What it does, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The expression language of the file's expressions; only `cel` for now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expressions: Option<String>,
    /// The JSON Schema the run's input must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Bounds on a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LimitsFile>,
    /// The run's output, mapped from `input` and `steps` (a string that is wholly `${ … }` is
    /// an expression).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The nodes, run from the first.
    pub nodes: Vec<NodeFile>,
}

/// Bounds on a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    /// The most node executions one run may make (retries, iterations and compensations
    /// count); default 1000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
}

/// One node: an id, exactly one kind key, and the keys of that kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [
    {"required": ["tool"]}, {"required": ["condition"]}, {"required": ["foreach"]},
    {"required": ["parallel"]}, {"required": ["approval"]}, {"required": ["wait"]},
    {"required": ["workflow"]}, {"required": ["end"]}
]))]
pub struct NodeFile {
    /// Unique in its block: `[a-z0-9_]`, at most 64 characters.
    pub id: String,
    /// What it is for, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The node that runs next, in the same block; default: the following node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Retry rules for failed attempts, the first matching one applying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Vec<RetrierFile>>,
    /// What a final failure does; default `compensate` (the run fails, and the compensations
    /// of its completed steps run first, in reverse order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<OnFailureFile>,
    /// How to undo the node if the run fails after it completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compensate: Option<ToolCallFile>,

    /// Kind `tool`: the registered tool to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The tool's params (kind `tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,

    /// Kind `condition`: the branches, the first that holds choosing the next node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<Vec<BranchFile>>,
    /// Where a `condition` goes when no branch holds; none ends the block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otherwise: Option<String>,

    /// Kind `foreach`: an expression giving the list to run `do` over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreach: Option<String>,
    /// The name the `do` block sees the item under; default `item` (`index` is its index).
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    /// The most items a `foreach` accepts (required, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u32>,
    /// How many items (`foreach`) or branches (`parallel`) run at once; default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// The block a `foreach` runs per item.
    #[serde(default, rename = "do", skip_serializing_if = "Option::is_none")]
    pub body: Option<Vec<NodeFile>>,

    /// Kind `parallel`: named blocks that run at the same time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<BTreeMap<String, Vec<NodeFile>>>,

    /// Kind `approval`: a mutating tool call a person approves before it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalFile>,

    /// Kind `wait`: a duration (`1h 30m`) or `{ until: <expression> }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<WaitFile>,

    /// Kind `workflow`: a sub-workflow, by path relative to this file or inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<WorkflowRef>,
    /// The sub-workflow's input (kind `workflow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,

    /// Kind `end`: ends the run, with this output if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<EndFile>,
}

impl NodeFile {
    /// The kind keys this node carries, as the file spells them.
    pub fn kind_keys(&self) -> Vec<&'static str> {
        [
            ("tool", self.tool.is_some()),
            ("condition", self.condition.is_some()),
            ("foreach", self.foreach.is_some()),
            ("parallel", self.parallel.is_some()),
            ("approval", self.approval.is_some()),
            ("wait", self.wait.is_some()),
            ("workflow", self.workflow.is_some()),
            ("end", self.end.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, present)| present.then_some(key))
        .collect()
    }
}

/// One retry rule (AWS Step Functions' `Retry`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrierFile {
    /// The failures it retries: error kinds (`timeout`, `domain_unavailable`, `tool_failed`,
    /// …) or `retryable_tool_error`. Default: `timeout`, `domain_unavailable`,
    /// `retryable_tool_error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
    /// The wait before the first retry (`1s`, `500ms`); default `1s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// The most attempts in all, the first included; default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// What each wait is multiplied by for the next; default 2, at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_rate: Option<f64>,
    /// The longest wait (`30s`); default `60s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delay: Option<String>,
    /// `full` (default): a random share of the wait; `none`: exactly the wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterFile>,
}

/// Whether a retry's wait is randomised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JitterFile {
    /// A uniformly random wait between zero and the computed one.
    Full,
    /// Exactly the computed wait.
    None,
}

/// What a node's final failure does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OnFailureFile {
    /// `fail`, `skip`, `compensate` or `escalate`.
    Action(FailureAction),
    /// `{ fallback: node_id }`: go on at that node of the same block.
    Fallback(FallbackFile),
}

/// The failure handlings named by a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureAction {
    /// The run fails.
    Fail,
    /// The node is skipped; its output is `null`.
    Skip,
    /// The run fails and its completed steps are compensated.
    Compensate,
    /// The run pauses for a person.
    Escalate,
}

/// `{ fallback: node_id }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FallbackFile {
    /// The node of the same block to go on at.
    pub fallback: String,
}

/// A tool call: a `compensate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallFile {
    /// The registered tool.
    pub tool: String,
    /// Its params; a compensation also sees the node's `params` and `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// One branch of a `condition`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BranchFile {
    /// A boolean CEL expression (bare, or wrapped in `${ }`).
    pub when: String,
    /// The node of the same block to go to when it holds.
    pub next: String,
}

/// An `approval`: the mutating call to propose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalFile {
    /// The mutating (execute or restricted) tool.
    pub tool: String,
    /// Its params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// What the approver reads: a CEL expression giving a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// How long a `wait` waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum WaitFile {
    /// A duration: `30s`, `1h 30m`.
    Duration(String),
    /// `{ until: <expression> }`, an RFC 3339 timestamp.
    Until(UntilFile),
}

/// `{ until: <expression> }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UntilFile {
    /// A CEL expression giving an RFC 3339 timestamp.
    pub until: String,
}

/// A sub-workflow: a path relative to the file, or the workflow inline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum WorkflowRef {
    /// A file path, relative to the file that names it.
    Path(String),
    /// The workflow itself.
    Inline(Box<WorkflowFile>),
}

/// `end`: ends the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndFile {
    /// The run's output, in place of the workflow's `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// The JSON Schema of a definition file, for editors
/// (`docs/reference/workflow.schema.json`).
pub fn json_schema() -> Value {
    let schema = schemars::schema_for!(WorkflowFile);
    schema.to_value()
}

/// How a definition's text is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// YAML (which also reads most JSON).
    Yaml,
    /// JSON.
    Json,
}

impl Format {
    /// The format of a file: JSON when it ends in `.json` or its text starts with `{`.
    pub fn detect(path: Option<&Path>, text: &str) -> Self {
        let json_extension = path
            .and_then(Path::extension)
            .is_some_and(|extension| extension.eq_ignore_ascii_case("json"));
        if json_extension || text.trim_start().starts_with('{') {
            Format::Json
        } else {
            Format::Yaml
        }
    }
}

/// Reads a definition's text into the file model, without following sub-workflow paths.
/// A syntax or shape error carries its line and column.
pub fn parse(text: &str, format: Format) -> Result<WorkflowFile, ValidationError> {
    match format {
        Format::Json => serde_json::from_str(text).map_err(|error| {
            let mut problem =
                ValidationError::new("", format!("not a workflow definition: {error}"));
            problem.line = Some(error.line());
            problem.column = Some(error.column());
            problem
        }),
        Format::Yaml => serde_saphyr::from_str(text).map_err(|error| {
            let location = error.location();
            // saphyr's message repeats the location and quotes the source; the first line is
            // the reason.
            let reason = error.to_string();
            let reason = saphyr_reason(reason.lines().next().unwrap_or_default());
            let mut problem =
                ValidationError::new("", format!("not a workflow definition: {reason}"));
            if let Some(location) = location {
                problem.line = usize::try_from(location.line()).ok();
                problem.column = usize::try_from(location.column()).ok();
            }
            problem
        }),
    }
}

/// saphyr's first line without its own `error: line N column M: ` prefix (the location is
/// kept as numbers).
fn saphyr_reason(first_line: &str) -> String {
    let reason = first_line.strip_prefix("error: ").unwrap_or(first_line);
    match reason.split_once(": ") {
        Some((location, rest)) if location.starts_with("line ") => rest.to_owned(),
        _ => reason.to_owned(),
    }
}

/// Reads a definition file, loads its sub-workflow files (relative to it, recursively, a
/// cycle refused), and validates the whole: the definition's document is self-contained.
pub fn load(path: &Path, tools: &dyn ToolSignatures) -> Result<Definition, ValidationErrors> {
    let _span = tracing::debug_span!("workflow_load", path = %path.display()).entered();
    let mut chain = Vec::new();
    let file = load_inlined(path, &mut chain).map_err(ValidationErrors::from)?;
    let document = serde_json::to_value(&file).map_err(|error| {
        ValidationErrors::from(ValidationError::new("", error.to_string()).in_file(path))
    })?;
    validate(&document, tools).map_err(|errors| errors.in_file(path))
}

/// Parses text (format detected as for a file) and validates it. Sub-workflows must be
/// inline: there is no file to resolve a path against.
pub fn load_str(text: &str, tools: &dyn ToolSignatures) -> Result<Definition, ValidationErrors> {
    let file = parse(text, Format::detect(None, text)).map_err(ValidationErrors::from)?;
    let document = serde_json::to_value(&file)
        .map_err(|error| ValidationErrors::from(ValidationError::new("", error.to_string())))?;
    validate(&document, tools)
}

/// Reads `path` and replaces each sub-workflow path with the file it names, inlined.
fn load_inlined(path: &Path, chain: &mut Vec<PathBuf>) -> Result<WorkflowFile, ValidationError> {
    let canonical = path.canonicalize().map_err(|error| {
        ValidationError::new("", format!("cannot read {}: {error}", path.display())).in_file(path)
    })?;
    if let Some(start) = chain.iter().position(|seen| seen == &canonical) {
        let cycle: Vec<String> = chain[start..]
            .iter()
            .chain(std::iter::once(&canonical))
            .map(|file| file.display().to_string())
            .collect();
        return Err(ValidationError::new(
            "",
            format!("sub-workflows form a cycle: {}", cycle.join(" -> ")),
        )
        .in_file(path));
    }
    let text = std::fs::read_to_string(&canonical).map_err(|error| {
        ValidationError::new("", format!("cannot read {}: {error}", path.display())).in_file(path)
    })?;
    let mut file =
        parse(&text, Format::detect(Some(path), &text)).map_err(|error| error.in_file(path))?;
    chain.push(canonical.clone());
    let directory = canonical
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    inline_block(&mut file.nodes, &directory, chain)?;
    chain.pop();
    Ok(file)
}

fn inline_block(
    nodes: &mut [NodeFile],
    directory: &Path,
    chain: &mut Vec<PathBuf>,
) -> Result<(), ValidationError> {
    for node in nodes {
        if let Some(body) = &mut node.body {
            inline_block(body, directory, chain)?;
        }
        if let Some(branches) = &mut node.parallel {
            for body in branches.values_mut() {
                inline_block(body, directory, chain)?;
            }
        }
        match &mut node.workflow {
            Some(WorkflowRef::Path(relative)) => {
                let child = load_inlined(&directory.join(&*relative), chain)?;
                node.workflow = Some(WorkflowRef::Inline(Box::new(child)));
            }
            Some(WorkflowRef::Inline(child)) => inline_block(&mut child.nodes, directory, chain)?,
            None => {}
        }
    }
    Ok(())
}

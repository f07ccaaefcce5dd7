//! Validation: a document in the file model becomes a [`Definition`], or every problem in it
//! is reported at once, each with its path.
//!
//! Everything a definition can get wrong before it runs is refused here, so the engine never
//! meets it: an unknown tool, a `next` that names no node, a node no path reaches, a cycle
//! (loops are `foreach`, which is bounded), an expression that does not parse or reads a
//! variable that is not in its scope, a retry that can never succeed, params the tool's input
//! schema rejects. Reporting all problems, not the first, is what makes fixing a file one
//! edit, not one edit per run of `switchboard workflow validate`.
//!
//! Paths are written the way one reads the file: `nodes[3].params.user_id`,
//! `nodes[4].do[0].tool`, `nodes[5].parallel.notify_a[0].id`, `nodes[6].workflow.nodes[1]`.
//!
//! Tools are known through [`ToolSignatures`], so the crate depends on the core only; the CLI
//! hands it the registry's descriptors.
//!
//! Types are checked as far as the schemas allow: a literal against the field's JSON type, and
//! a simple path (`input.a.b`, `steps.x.output.f`) by the type the workflow's input schema or
//! the tool's output schema gives it. What a schema leaves open (`anyOf`, no `type`) is left
//! for run time, where the registry checks every call's params anyway.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use switchboard_core::{Category, ToolDescriptor};

mod expressions;
mod nodes;
mod schemas;

use crate::definition::{Block, Definition, Node};
use crate::file::{FailureAction, NodeFile, OnFailureFile, WorkflowFile};

/// The most node executions of a run when the file sets no `limits.max_steps`.
pub const DEFAULT_MAX_STEPS: u32 = 1000;
/// The largest `max_items` a `foreach` may declare.
pub const MAX_FOREACH_ITEMS: u32 = 1000;
/// How deeply inline sub-workflows may nest.
const MAX_WORKFLOW_DEPTH: usize = 16;
/// How deeply blocks may nest within one workflow.
const MAX_BLOCK_DEPTH: usize = 32;

/// What validation needs to know of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSignature {
    /// Its category: an `approval` or a `compensate` must name a mutating tool.
    pub category: Category,
    /// The JSON Schema of its params.
    pub input_schema: Value,
    /// The JSON Schema of its output, where known.
    pub output_schema: Option<Value>,
}

/// The tools a definition may name.
pub trait ToolSignatures {
    /// The tool called `name`, if there is one.
    fn signature(&self, name: &str) -> Option<ToolSignature>;
    /// Every tool's name, for "did you mean" suggestions.
    fn names(&self) -> Vec<String>;
}

impl ToolSignatures for [Arc<ToolDescriptor>] {
    fn signature(&self, name: &str) -> Option<ToolSignature> {
        let tool = self.iter().find(|tool| tool.name == name)?;
        Some(ToolSignature {
            category: tool.category,
            input_schema: (*tool.input_schema).clone(),
            output_schema: tool.output_schema.as_deref().cloned(),
        })
    }

    fn names(&self) -> Vec<String> {
        self.iter().map(|tool| tool.name.to_string()).collect()
    }
}

impl ToolSignatures for Vec<Arc<ToolDescriptor>> {
    fn signature(&self, name: &str) -> Option<ToolSignature> {
        self.as_slice().signature(name)
    }

    fn names(&self) -> Vec<String> {
        self.as_slice().names()
    }
}

impl ToolSignatures for BTreeMap<String, ToolSignature> {
    fn signature(&self, name: &str) -> Option<ToolSignature> {
        self.get(name).cloned()
    }

    fn names(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
}

/// One problem in a definition.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ValidationError {
    /// The file it is in, when the definition was loaded from files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// Where in the definition (`nodes[3].params.user_id`); empty for the whole document.
    pub path: String,
    /// The line (from 1), when known: syntax and shape errors of a file's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The column (from 1), with the line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// What is wrong, and how to fix it.
    pub message: String,
}

impl ValidationError {
    /// A problem at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: None,
            path: path.into(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// The same problem, in `file` (kept if it already names one: a sub-workflow's).
    pub fn in_file(mut self, file: &Path) -> Self {
        if self.file.is_none() {
            self.file = Some(file.to_path_buf());
        }
        self
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(column) = self.column {
                    write!(f, ":{column}")?;
                }
            }
            f.write_str(": ")?;
        } else if let Some(line) = self.line {
            write!(f, "line {line}")?;
            if let Some(column) = self.column {
                write!(f, ", column {column}")?;
            }
            f.write_str(": ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// Every problem found in a definition, in the order of the document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(transparent)]
pub struct ValidationErrors {
    /// The problems; never empty.
    pub errors: Vec<ValidationError>,
}

impl ValidationErrors {
    /// The same problems, in `file` (those of sub-workflow files keep their own).
    pub fn in_file(self, file: &Path) -> Self {
        Self {
            errors: self
                .errors
                .into_iter()
                .map(|error| error.in_file(file))
                .collect(),
        }
    }
}

impl From<ValidationError> for ValidationErrors {
    fn from(error: ValidationError) -> Self {
        Self {
            errors: vec![error],
        }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.errors.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

/// Validates a self-contained document (sub-workflows inline) against the tools, and builds
/// its definition; or reports every problem in it.
pub fn validate(
    document: &Value,
    tools: &dyn ToolSignatures,
) -> Result<Definition, ValidationErrors> {
    let _span = tracing::debug_span!("workflow_validate").entered();
    let file: WorkflowFile = serde_json::from_value(document.clone()).map_err(|error| {
        ValidationErrors::from(ValidationError::new(
            "",
            format!("not a workflow definition: {error}"),
        ))
    })?;
    let mut validator = Validator {
        tools,
        errors: Vec::new(),
    };
    let definition = validator.workflow(&file, "", 0);
    match definition {
        Some(definition) if validator.errors.is_empty() => Ok(definition),
        _ => {
            if validator.errors.is_empty() {
                validator
                    .errors
                    .push(ValidationError::new("", "the definition is not valid"));
            }
            Err(ValidationErrors {
                errors: validator.errors,
            })
        }
    }
}

/// What an expression may read where it is (checked here; `crate::Scope` holds the values at
/// run time).
#[derive(Debug, Clone)]
struct VisibleScope<'a> {
    /// The workflow's input schema, for the types of `input.…` paths.
    input_schema: Option<&'a Value>,
    /// Top-level variables besides `input`, `steps` and `run`.
    extra_variables: Vec<String>,
    /// The node ids `steps.X` may name, with their tool's output schema where known.
    steps: BTreeMap<String, Option<Value>>,
    /// Node ids of the same blocks that no path runs before the expression's node.
    not_before: BTreeSet<String>,
}

impl VisibleScope<'_> {
    fn variables(&self) -> Vec<&str> {
        let mut variables = vec!["input", "steps", "run"];
        variables.extend(self.extra_variables.iter().map(String::as_str));
        variables
    }
}

struct Validator<'a> {
    tools: &'a dyn ToolSignatures,
    errors: Vec<ValidationError>,
}

impl Validator<'_> {
    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(ValidationError::new(path, message));
    }

    fn workflow(&mut self, file: &WorkflowFile, prefix: &str, depth: usize) -> Option<Definition> {
        if depth > MAX_WORKFLOW_DEPTH {
            self.error(
                prefix,
                format!("sub-workflows nest more than {MAX_WORKFLOW_DEPTH} deep"),
            );
            return None;
        }
        let at = |field: &str| join(prefix, field);
        if !is_identifier(&file.workflow) {
            self.error(
                at("workflow"),
                format!(
                    "the name `{}` must be 1 to 64 of `a-z`, `0-9` and `_`",
                    file.workflow
                ),
            );
        }
        if let Some(language) = &file.expressions
            && language != "cel"
        {
            self.error(
                at("expressions"),
                format!("unknown expression language `{language}`: only `cel` is supported"),
            );
        }
        if let Some(input) = &file.input
            && !input.is_object()
            && !input.is_boolean()
        {
            self.error(at("input"), "the input schema must be a JSON Schema object");
        }
        let max_steps = file
            .limits
            .as_ref()
            .and_then(|limits| limits.max_steps)
            .unwrap_or(DEFAULT_MAX_STEPS);
        if max_steps == 0 {
            self.error(at("limits.max_steps"), "max_steps must be at least 1");
        }
        if file.nodes.is_empty() {
            self.error(at("nodes"), "a workflow needs at least one node");
        }
        let scope = VisibleScope {
            input_schema: file.input.as_ref(),
            extra_variables: Vec::new(),
            steps: BTreeMap::new(),
            not_before: BTreeSet::new(),
        };
        let mut scope_with_all_steps = scope.clone();
        self.collect_steps(&file.nodes, &mut scope_with_all_steps.steps, 0);
        let output = file
            .output
            .as_ref()
            .and_then(|output| self.mapping(output, &at("output"), &scope_with_all_steps));
        let body = self.block(&file.nodes, &at("nodes"), &scope, depth, 0);
        if !file.nodes.iter().any(has_compensate) && uses_compensate(&file.nodes) {
            self.error(
                at("nodes"),
                "`on_failure: compensate` undoes completed nodes, but no node declares a \
                 `compensate`: add one, or use `on_failure: fail`",
            );
        }
        let document = serde_json::to_value(file).ok()?;
        Some(Definition {
            name: Arc::from(file.workflow.as_str()),
            description: file.description.clone(),
            input_schema: file.input.clone(),
            output,
            max_steps,
            body: body?,
            document: Arc::new(document),
        })
    }

    /// Records every node id of `nodes` and the blocks nested in them (not sub-workflows),
    /// with their tool's output schema: what `steps.X` may name.
    fn collect_steps(
        &self,
        nodes: &[NodeFile],
        steps: &mut BTreeMap<String, Option<Value>>,
        depth: usize,
    ) {
        if depth > MAX_BLOCK_DEPTH {
            return;
        }
        for node in nodes {
            let output = node
                .tool
                .as_deref()
                .or(node
                    .approval
                    .as_ref()
                    .map(|approval| approval.tool.as_str()))
                .and_then(|tool| self.tools.signature(tool))
                .and_then(|signature| signature.output_schema);
            steps.insert(node.id.clone(), output);
            if let Some(body) = &node.body {
                self.collect_steps(body, steps, depth + 1);
            }
            for body in node.parallel.iter().flat_map(BTreeMap::values) {
                self.collect_steps(body, steps, depth + 1);
            }
        }
    }

    fn block(
        &mut self,
        nodes: &[NodeFile],
        path: &str,
        outer: &VisibleScope<'_>,
        workflow_depth: usize,
        depth: usize,
    ) -> Option<Block> {
        if depth > MAX_BLOCK_DEPTH {
            self.error(
                path,
                format!("blocks nest more than {MAX_BLOCK_DEPTH} deep"),
            );
            return None;
        }
        let mut scope = outer.clone();
        self.collect_steps(nodes, &mut scope.steps, depth);
        let ids: Vec<&str> = nodes.iter().map(|node| node.id.as_str()).collect();
        let mut seen = BTreeSet::new();
        for (index, id) in ids.iter().enumerate() {
            let at = format!("{path}[{index}].id");
            if !is_identifier(id) {
                self.error(
                    &at,
                    format!("the node id `{id}` must be 1 to 64 of `a-z`, `0-9` and `_`"),
                );
            }
            if !seen.insert(*id) {
                self.error(
                    &at,
                    format!("the node id `{id}` is used twice in this block"),
                );
            }
        }
        let successors = successors(nodes);
        let reachable: Vec<Vec<bool>> = (0..nodes.len())
            .map(|start| reachable_from(start, &successors))
            .collect();
        let mut built = Vec::with_capacity(nodes.len());
        for (index, node) in nodes.iter().enumerate() {
            let at = format!("{path}[{index}]");
            let following = ids.get(index + 1).copied();
            // A node sees the steps of the nodes that can run before it, not the later ones.
            let mut node_scope = scope.clone();
            for (other, id) in ids.iter().enumerate() {
                let runs_before = other != index && reachable[other][index];
                if !runs_before {
                    node_scope.steps.remove(*id);
                    node_scope.not_before.insert((*id).to_owned());
                }
            }
            built.push(self.node(
                node,
                &at,
                following,
                &ids,
                &node_scope,
                workflow_depth,
                depth,
            ));
        }
        self.check_graph(nodes, &successors, path);
        let nodes: Option<Vec<Node>> = built.into_iter().collect();
        Some(Block { nodes: nodes? })
    }

    /// Refuses nodes no path reaches from the block's first node, and every cycle.
    fn check_graph(&mut self, nodes: &[NodeFile], successors: &[Vec<usize>], path: &str) {
        if nodes.is_empty() {
            return;
        }
        let mut reached = vec![false; nodes.len()];
        let mut pending = vec![0];
        while let Some(index) = pending.pop() {
            if std::mem::replace(&mut reached[index], true) {
                continue;
            }
            pending.extend(successors[index].iter().copied());
        }
        for (index, reached) in reached.iter().enumerate() {
            if !reached {
                self.error(
                    format!("{path}[{index}]"),
                    format!(
                        "the node `{}` is never reached: no `next`, branch or fallback leads to \
                         it from the block's first node",
                        nodes[index].id
                    ),
                );
            }
        }
        // Depth-first search with an explicit stack; a back edge closes a cycle.
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            OnStack,
            Done,
        }
        let mut marks = vec![Mark::New; nodes.len()];
        let mut cycles = Vec::new();
        for start in 0..nodes.len() {
            if marks[start] != Mark::New {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            marks[start] = Mark::OnStack;
            while let Some(&mut (index, ref mut next_edge)) = stack.last_mut() {
                if let Some(&target) = successors[index].get(*next_edge) {
                    *next_edge += 1;
                    match marks[target] {
                        Mark::New => {
                            marks[target] = Mark::OnStack;
                            stack.push((target, 0));
                        }
                        Mark::OnStack => {
                            let from = stack
                                .iter()
                                .position(|&(on_stack, _)| on_stack == target)
                                .unwrap_or(0);
                            let chain: Vec<&str> = stack[from..]
                                .iter()
                                .map(|&(on_stack, _)| nodes[on_stack].id.as_str())
                                .chain(std::iter::once(nodes[target].id.as_str()))
                                .collect();
                            cycles.push((target, chain.join(" -> ")));
                        }
                        Mark::Done => {}
                    }
                } else {
                    marks[index] = Mark::Done;
                    stack.pop();
                }
            }
        }
        for (index, chain) in cycles {
            self.error(
                format!("{path}[{index}]"),
                format!(
                    "the nodes form a cycle ({chain}): a workflow never loops back; repeat \
                     work with a bounded `foreach`"
                ),
            );
        }
    }
}

/// Each node's successors in its block: its `next` (or the following node), a condition's
/// branches and `otherwise`, and a fallback.
fn successors(nodes: &[NodeFile]) -> Vec<Vec<usize>> {
    let index_of = |id: &str| nodes.iter().position(|node| node.id == id);
    nodes
        .iter()
        .enumerate()
        .map(|(index, node)| {
            let mut targets: Vec<&str> = Vec::new();
            if let Some(branches) = &node.condition {
                targets.extend(branches.iter().map(|branch| branch.next.as_str()));
                targets.extend(node.otherwise.as_deref());
            } else if node.end.is_none() {
                match &node.next {
                    Some(next) => targets.push(next),
                    None => targets.extend(nodes.get(index + 1).map(|next| next.id.as_str())),
                }
            }
            if let Some(OnFailureFile::Fallback(fallback)) = &node.on_failure {
                targets.push(&fallback.fallback);
            }
            let mut successors: Vec<usize> = targets.into_iter().filter_map(index_of).collect();
            successors.dedup();
            successors
        })
        .collect()
}

/// Which nodes a path leads to from `start` (`start` itself only through a cycle).
fn reachable_from(start: usize, successors: &[Vec<usize>]) -> Vec<bool> {
    let mut reached = vec![false; successors.len()];
    let mut pending = successors[start].clone();
    while let Some(index) = pending.pop() {
        if !std::mem::replace(&mut reached[index], true) {
            pending.extend(successors[index].iter().copied());
        }
    }
    reached
}

/// `[a-z0-9_]{1,64}`.
fn is_identifier(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
}

fn join(prefix: &str, field: &str) -> String {
    if prefix.is_empty() {
        field.to_owned()
    } else {
        format!("{prefix}.{field}")
    }
}

/// ", did you mean `x`?" for the closest of `candidates`, if one is close.
fn suggestion<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    candidates
        .map(|candidate| (strsim::jaro_winkler(name, candidate), candidate))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| format!(" (did you mean `{candidate}`?)"))
        .unwrap_or_default()
}

fn has_compensate(node: &NodeFile) -> bool {
    node.compensate.is_some()
        || node.body.iter().flatten().any(has_compensate)
        || node
            .parallel
            .iter()
            .flat_map(BTreeMap::values)
            .flatten()
            .any(has_compensate)
}

fn uses_compensate(nodes: &[NodeFile]) -> bool {
    nodes.iter().any(|node| {
        node.on_failure == Some(OnFailureFile::Action(FailureAction::Compensate))
            || node.body.as_deref().is_some_and(uses_compensate)
            || node
                .parallel
                .iter()
                .flat_map(BTreeMap::values)
                .any(|body| uses_compensate(body))
    })
}

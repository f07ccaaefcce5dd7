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
use std::str::FromStr;
use std::sync::Arc;

use jiff::SignedDuration;
use serde_json::Value;
use switchboard_core::{Category, ErrorKind, ToolDescriptor};

use crate::definition::{
    Block, Branch, Compensation, Definition, Jitter, Mapping, Node, NodeId, NodeKind, OnFailure,
    Retrier, RetryOn, WaitFor,
};
use crate::expression::Expression;
use crate::file::{
    FailureAction, JitterFile, NodeFile, OnFailureFile, RetrierFile, WaitFile, WorkflowFile,
    WorkflowRef,
};

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

/// What an expression may read where it is.
#[derive(Debug, Clone)]
struct Scope<'a> {
    /// The workflow's input schema, for the types of `input.…` paths.
    input_schema: Option<&'a Value>,
    /// Top-level variables besides `input`, `steps` and `run`.
    extra_variables: Vec<String>,
    /// The node ids `steps.X` may name, with their tool's output schema where known.
    steps: BTreeMap<String, Option<Value>>,
}

impl Scope<'_> {
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
        let scope = Scope {
            input_schema: file.input.as_ref(),
            extra_variables: Vec::new(),
            steps: BTreeMap::new(),
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
        outer: &Scope<'_>,
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
        let mut built = Vec::with_capacity(nodes.len());
        for (index, node) in nodes.iter().enumerate() {
            let at = format!("{path}[{index}]");
            let following = ids.get(index + 1).copied();
            built.push(self.node(node, &at, following, &ids, &scope, workflow_depth, depth));
        }
        self.check_graph(nodes, path);
        let nodes: Option<Vec<Node>> = built.into_iter().collect();
        Some(Block { nodes: nodes? })
    }

    /// Refuses nodes no path reaches from the block's first node, and every cycle.
    fn check_graph(&mut self, nodes: &[NodeFile], path: &str) {
        let index_of = |id: &str| nodes.iter().position(|node| node.id == id);
        let successors: Vec<Vec<usize>> = nodes
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
            .collect();
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

    #[allow(clippy::too_many_arguments)]
    fn node(
        &mut self,
        node: &NodeFile,
        path: &str,
        following: Option<&str>,
        block_ids: &[&str],
        scope: &Scope<'_>,
        workflow_depth: usize,
        depth: usize,
    ) -> Option<Node> {
        let at = |field: &str| format!("{path}.{field}");
        let keys = node.kind_keys();
        let [kind] = keys.as_slice() else {
            let found = if keys.is_empty() {
                "it has none".to_owned()
            } else {
                format!("it has {}", keys.join(", "))
            };
            self.error(
                path,
                format!(
                    "a node needs exactly one kind key (tool, condition, foreach, parallel, \
                     approval, wait, workflow, end); {found}"
                ),
            );
            return None;
        };
        let kind = *kind;
        self.check_stray_keys(node, kind, path);
        let target = |validator: &mut Self, field: &str, id: &str| {
            if !block_ids.contains(&id) {
                let hint = suggestion(id, block_ids.iter().copied());
                validator.error(
                    at(field),
                    format!(
                        "no node `{id}` in this block{hint}; targets must be in the same block"
                    ),
                );
            }
        };
        if let Some(next) = &node.next {
            target(self, "next", next);
        }
        if let Some(branches) = &node.condition {
            for (index, branch) in branches.iter().enumerate() {
                target(self, &format!("condition[{index}].next"), &branch.next);
            }
        }
        if let Some(otherwise) = &node.otherwise {
            target(self, "otherwise", otherwise);
        }
        let on_failure = match &node.on_failure {
            None | Some(OnFailureFile::Action(FailureAction::Fail)) => OnFailure::Fail,
            Some(OnFailureFile::Action(FailureAction::Skip)) => OnFailure::Skip,
            Some(OnFailureFile::Action(FailureAction::Compensate)) => OnFailure::Compensate,
            Some(OnFailureFile::Action(FailureAction::Escalate)) => OnFailure::Escalate,
            Some(OnFailureFile::Fallback(fallback)) => {
                target(self, "on_failure.fallback", &fallback.fallback);
                if fallback.fallback == node.id {
                    self.error(
                        at("on_failure.fallback"),
                        "a node cannot fall back to itself: use `retry` to try it again",
                    );
                }
                OnFailure::Fallback(NodeId::new(fallback.fallback.as_str()))
            }
        };
        let retry = match &node.retry {
            Some(retriers) => retriers
                .iter()
                .enumerate()
                .map(|(index, retrier)| self.retrier(retrier, &at(&format!("retry[{index}]"))))
                .collect::<Vec<_>>(),
            None if kind == "tool" => vec![Some(Retrier::default())],
            None => Vec::new(),
        };
        let compensate = node
            .compensate
            .as_ref()
            .map(|compensate| {
                let mut compensation_scope = scope.clone();
                compensation_scope
                    .extra_variables
                    .extend(["params".to_owned(), "output".to_owned()]);
                let signature = self.tool_signature(&compensate.tool, &at("compensate.tool"));
                if let Some(signature) = &signature
                    && !signature.category.mutates()
                {
                    self.error(
                        at("compensate.tool"),
                        format!(
                            "the compensation `{}` is a {} tool: an undo must be a mutating \
                             (execute or restricted) tool",
                            compensate.tool,
                            signature.category.as_str()
                        ),
                    );
                }
                let params = compensate
                    .params
                    .clone()
                    .unwrap_or(Value::Object(Default::default()));
                let mapping = self.mapping(&params, &at("compensate.params"), &compensation_scope);
                if let Some(signature) = &signature {
                    self.check_against_schema(
                        &params,
                        &signature.input_schema,
                        &signature.input_schema,
                        &at("compensate.params"),
                        &compensation_scope,
                    );
                }
                Some(Compensation {
                    tool: Arc::from(compensate.tool.as_str()),
                    params: mapping?,
                })
            })
            .map(|compensation| compensation.ok_or(()));
        if node.compensate.is_some() && !matches!(kind, "tool" | "approval") {
            self.error(
                at("compensate"),
                format!("a `{kind}` node does nothing to undo: only `tool` and `approval` nodes take `compensate`"),
            );
        }
        if let Some(tool) = &node.tool
            && node.compensate.is_some()
            && let Some(signature) = self.tools.signature(tool)
            && !signature.category.mutates()
        {
            self.error(
                at("compensate"),
                format!(
                    "`{tool}` is a {} tool and changes nothing, so there is nothing to compensate",
                    signature.category.as_str()
                ),
            );
        }
        let kind = self.kind(node, kind, path, scope, workflow_depth, depth)?;
        let next = match kind {
            NodeKind::Condition { .. } | NodeKind::End { .. } => None,
            _ => node.next.as_deref().or(following).map(NodeId::new),
        };
        let retry: Option<Vec<Retrier>> = retry.into_iter().collect();
        let compensate = match compensate {
            Some(Ok(compensation)) => Some(compensation),
            Some(Err(())) => return None,
            None => None,
        };
        Some(Node {
            id: NodeId::new(node.id.as_str()),
            description: node.description.clone(),
            kind,
            next,
            retry: retry?,
            on_failure,
            compensate,
        })
    }

    /// Refuses keys that belong to another kind than the node's.
    fn check_stray_keys(&mut self, node: &NodeFile, kind: &str, path: &str) {
        let keys = [
            ("params", node.params.is_some(), &["tool"][..]),
            ("otherwise", node.otherwise.is_some(), &["condition"][..]),
            ("as", node.item.is_some(), &["foreach"][..]),
            ("max_items", node.max_items.is_some(), &["foreach"][..]),
            (
                "concurrency",
                node.concurrency.is_some(),
                &["foreach", "parallel"][..],
            ),
            ("do", node.body.is_some(), &["foreach"][..]),
            ("input", node.input.is_some(), &["workflow"][..]),
            (
                "next",
                node.next.is_some(),
                &[
                    "tool", "foreach", "parallel", "approval", "wait", "workflow",
                ][..],
            ),
            (
                "retry",
                node.retry.is_some(),
                &["tool", "approval", "workflow"][..],
            ),
            (
                "on_failure",
                node.on_failure.is_some(),
                &[
                    "tool", "foreach", "parallel", "approval", "wait", "workflow",
                ][..],
            ),
        ];
        for (key, present, kinds) in keys {
            if present && !kinds.contains(&kind) {
                let advice = match (key, kind) {
                    ("next", "condition") => {
                        ": a condition goes on through its branches and `otherwise`"
                    }
                    ("next", "end") => ": an `end` node ends the run",
                    _ => "",
                };
                self.error(
                    format!("{path}.{key}"),
                    format!("a `{kind}` node does not take `{key}`{advice}"),
                );
            }
        }
    }

    #[allow(clippy::too_many_lines)]
    fn kind(
        &mut self,
        node: &NodeFile,
        kind: &str,
        path: &str,
        scope: &Scope<'_>,
        workflow_depth: usize,
        depth: usize,
    ) -> Option<NodeKind> {
        let at = |field: &str| format!("{path}.{field}");
        match kind {
            "tool" => {
                let tool = node.tool.as_deref().unwrap_or_default();
                let signature = self.tool_signature(tool, &at("tool"));
                let params = node
                    .params
                    .clone()
                    .unwrap_or(Value::Object(Default::default()));
                let mapping = self.mapping(&params, &at("params"), scope);
                if let Some(signature) = &signature {
                    self.check_against_schema(
                        &params,
                        &signature.input_schema,
                        &signature.input_schema,
                        &at("params"),
                        scope,
                    );
                }
                signature?;
                Some(NodeKind::Tool {
                    tool: Arc::from(tool),
                    params: mapping?,
                })
            }
            "condition" => {
                let branches = node.condition.as_deref().unwrap_or_default();
                if branches.is_empty() {
                    self.error(at("condition"), "a condition needs at least one branch");
                }
                let branches: Vec<Option<Branch>> = branches
                    .iter()
                    .enumerate()
                    .map(|(index, branch)| {
                        let when = self.expression(
                            &branch.when,
                            &at(&format!("condition[{index}].when")),
                            scope,
                        )?;
                        Some(Branch {
                            when,
                            next: NodeId::new(branch.next.as_str()),
                        })
                    })
                    .collect();
                Some(NodeKind::Condition {
                    branches: branches.into_iter().collect::<Option<_>>()?,
                    otherwise: node.otherwise.as_deref().map(NodeId::new),
                })
            }
            "foreach" => {
                let items = self.expression(
                    node.foreach.as_deref().unwrap_or_default(),
                    &at("foreach"),
                    scope,
                );
                let item = node.item.clone().unwrap_or_else(|| "item".to_owned());
                if !is_identifier(&item)
                    || matches!(
                        item.as_str(),
                        "input" | "steps" | "run" | "index" | "params" | "output"
                    )
                {
                    self.error(
                        at("as"),
                        format!(
                            "`{item}` cannot name the item: use `a-z`, `0-9` and `_`, and none \
                             of input, steps, run, index, params, output"
                        ),
                    );
                }
                let max_items = match node.max_items {
                    None => {
                        self.error(
                            at("max_items"),
                            format!(
                                "a foreach must declare `max_items` (at most \
                                 {MAX_FOREACH_ITEMS}): loops are bounded"
                            ),
                        );
                        0
                    }
                    Some(0) => {
                        self.error(at("max_items"), "max_items must be at least 1");
                        0
                    }
                    Some(max) if max > MAX_FOREACH_ITEMS => {
                        self.error(
                            at("max_items"),
                            format!("max_items is {max}; the most allowed is {MAX_FOREACH_ITEMS}"),
                        );
                        max
                    }
                    Some(max) => max,
                };
                let concurrency = self.concurrency(node.concurrency, 1, &at("concurrency"));
                let body = node.body.as_deref().unwrap_or_default();
                if body.is_empty() {
                    self.error(
                        at("do"),
                        "a foreach needs a `do` block of at least one node",
                    );
                }
                let mut inner = scope.clone();
                inner
                    .extra_variables
                    .extend([item.clone(), "index".to_owned()]);
                let body = self.block(body, &at("do"), &inner, workflow_depth, depth + 1);
                Some(NodeKind::Foreach {
                    items: items?,
                    item: Arc::from(item),
                    max_items,
                    concurrency,
                    body: body?,
                })
            }
            "parallel" => {
                let branches = node.parallel.as_ref()?;
                if branches.is_empty() {
                    self.error(at("parallel"), "a parallel node needs at least one branch");
                }
                let default = u32::try_from(branches.len()).unwrap_or(u32::MAX).max(1);
                let concurrency = self.concurrency(node.concurrency, default, &at("concurrency"));
                let mut built = Vec::new();
                for (name, body) in branches {
                    let branch_path = at(&format!("parallel.{name}"));
                    if !is_identifier(name) {
                        self.error(
                            &branch_path,
                            format!(
                                "the branch name `{name}` must be 1 to 64 of `a-z`, `0-9` and `_`"
                            ),
                        );
                    }
                    if body.is_empty() {
                        self.error(&branch_path, "a branch needs at least one node");
                    }
                    let block = self.block(body, &branch_path, scope, workflow_depth, depth + 1);
                    built.push(block.map(|block| (Arc::from(name.as_str()), block)));
                }
                Some(NodeKind::Parallel {
                    branches: built.into_iter().collect::<Option<_>>()?,
                    concurrency,
                })
            }
            "approval" => {
                let approval = node.approval.as_ref()?;
                let signature = self.tool_signature(&approval.tool, &at("approval.tool"));
                if let Some(signature) = &signature
                    && !signature.category.mutates()
                {
                    self.error(
                        at("approval.tool"),
                        format!(
                            "`{}` is a {} tool: an approval asks a person before a change, so \
                             it needs an execute or restricted tool",
                            approval.tool,
                            signature.category.as_str()
                        ),
                    );
                }
                let params = approval
                    .params
                    .clone()
                    .unwrap_or(Value::Object(Default::default()));
                let mapping = self.mapping(&params, &at("approval.params"), scope);
                if let Some(signature) = &signature {
                    self.check_against_schema(
                        &params,
                        &signature.input_schema,
                        &signature.input_schema,
                        &at("approval.params"),
                        scope,
                    );
                }
                let summary = approval
                    .summary
                    .as_deref()
                    .map(|summary| self.expression(summary, &at("approval.summary"), scope));
                signature?;
                Some(NodeKind::Approval {
                    tool: Arc::from(approval.tool.as_str()),
                    params: mapping?,
                    summary: match summary {
                        Some(summary) => Some(summary?),
                        None => None,
                    },
                })
            }
            "wait" => match node.wait.as_ref()? {
                WaitFile::Duration(text) => {
                    let duration = self.duration(text, &at("wait"))?;
                    Some(NodeKind::Wait(WaitFor::Duration(duration)))
                }
                WaitFile::Until(until) => {
                    let expression = self.expression(&until.until, &at("wait.until"), scope)?;
                    Some(NodeKind::Wait(WaitFor::Until(expression)))
                }
            },
            "workflow" => {
                let child = match node.workflow.as_ref()? {
                    WorkflowRef::Path(relative) => {
                        self.error(
                            at("workflow"),
                            format!(
                                "the sub-workflow `{relative}` is a path, which only a file \
                                 load resolves: validate a document with its sub-workflows \
                                 inline"
                            ),
                        );
                        return None;
                    }
                    WorkflowRef::Inline(child) => child,
                };
                let input = node
                    .input
                    .clone()
                    .unwrap_or(Value::Object(Default::default()));
                let mapping = self.mapping(&input, &at("input"), scope);
                if let Some(schema) = &child.input {
                    self.check_against_schema(&input, schema, schema, &at("input"), scope);
                }
                let definition = self.workflow(child, &at("workflow"), workflow_depth + 1)?;
                Some(NodeKind::Workflow {
                    definition: Arc::new(definition),
                    input: mapping?,
                })
            }
            "end" => {
                let end = node.end.as_ref()?;
                let output = match &end.output {
                    Some(output) => Some(self.mapping(output, &at("end.output"), scope)?),
                    None => None,
                };
                Some(NodeKind::End { output })
            }
            _ => None,
        }
    }

    fn concurrency(&mut self, concurrency: Option<u32>, default: u32, path: &str) -> u32 {
        match concurrency {
            Some(0) => {
                self.error(path, "concurrency must be at least 1");
                1
            }
            Some(concurrency) => concurrency,
            None => default,
        }
    }

    fn tool_signature(&mut self, name: &str, path: &str) -> Option<ToolSignature> {
        let signature = self.tools.signature(name);
        if signature.is_none() {
            let names = self.tools.names();
            let hint = suggestion(name, names.iter().map(String::as_str));
            self.error(path, format!("no tool `{name}` is registered{hint}"));
        }
        signature
    }

    fn retrier(&mut self, retrier: &RetrierFile, path: &str) -> Option<Retrier> {
        let defaults = Retrier::default();
        let at = |field: &str| format!("{path}.{field}");
        let mut valid = true;
        let errors = match &retrier.errors {
            None => defaults.errors.clone(),
            Some(names) => {
                if names.is_empty() {
                    self.error(at("errors"), "a retrier needs at least one error to retry");
                    valid = false;
                }
                let mut errors = Vec::new();
                for (index, name) in names.iter().enumerate() {
                    match retry_on(name) {
                        Ok(error) => errors.push(error),
                        Err(reason) => {
                            self.error(at(&format!("errors[{index}]")), reason);
                            valid = false;
                        }
                    }
                }
                errors
            }
        };
        let interval = match &retrier.interval {
            Some(text) => self.duration(text, &at("interval")),
            None => Some(defaults.interval),
        };
        let max_delay = match &retrier.max_delay {
            Some(text) => self.duration(text, &at("max_delay")).map(Some),
            None => Some(defaults.max_delay),
        };
        let max_attempts = retrier.max_attempts.unwrap_or(defaults.max_attempts);
        if max_attempts == 0 {
            self.error(
                at("max_attempts"),
                "max_attempts counts the first attempt: at least 1",
            );
            valid = false;
        }
        let backoff_rate = retrier.backoff_rate.unwrap_or(defaults.backoff_rate);
        if !backoff_rate.is_finite() || backoff_rate < 1.0 {
            self.error(
                at("backoff_rate"),
                format!(
                    "backoff_rate is {backoff_rate}; it must be at least 1 (waits never shrink)"
                ),
            );
            valid = false;
        }
        let jitter = match retrier.jitter {
            Some(JitterFile::None) => Jitter::None,
            Some(JitterFile::Full) | None => defaults.jitter,
        };
        let (interval, max_delay) = (interval?, max_delay?);
        valid.then_some(Retrier {
            errors,
            interval,
            max_attempts,
            backoff_rate,
            max_delay,
            jitter,
        })
    }

    fn duration(&mut self, text: &str, path: &str) -> Option<SignedDuration> {
        match SignedDuration::from_str(text) {
            Ok(duration) if duration.is_positive() => Some(duration),
            Ok(_) => {
                self.error(path, format!("the duration `{text}` must be positive"));
                None
            }
            Err(error) => {
                self.error(
                    path,
                    format!(
                        "`{text}` is not a duration such as `30s`, `500ms` or `1h 30m`: {error}"
                    ),
                );
                None
            }
        }
    }

    /// Parses an always-expression field (bare CEL, or wrapped in `${ }`).
    fn expression(&mut self, source: &str, path: &str, scope: &Scope<'_>) -> Option<Expression> {
        let source = unwrap_expression(source).unwrap_or(source);
        let expression = match Expression::parse(source) {
            Ok(expression) => expression,
            Err(error) => {
                self.error(path, error.to_string());
                return None;
            }
        };
        self.check_references(&expression, path, scope);
        Some(expression)
    }

    /// Refuses variables not in scope and `steps.X` naming no node.
    fn check_references(&mut self, expression: &Expression, path: &str, scope: &Scope<'_>) {
        let in_scope = scope.variables();
        let bound = macro_variables(expression.source());
        for variable in expression.variables() {
            if !in_scope.contains(&variable) && !bound.iter().any(|name| name == variable) {
                let hint = suggestion(variable, in_scope.iter().copied());
                self.error(
                    path,
                    format!(
                        "`{variable}` is not in scope in `{}`{hint}; in scope here: {}",
                        expression.source(),
                        in_scope.join(", ")
                    ),
                );
            }
        }
        for step in step_references(expression.source()) {
            if !scope.steps.contains_key(step) {
                let hint = suggestion(step, scope.steps.keys().map(String::as_str));
                self.error(
                    path,
                    format!("`steps.{step}` names no node this expression can see{hint}"),
                );
            }
        }
    }

    /// A JSON value whose wholly-`${ }` strings are expressions.
    fn mapping(&mut self, value: &Value, path: &str, scope: &Scope<'_>) -> Option<Mapping> {
        match value {
            Value::String(text) => match unwrap_expression(text) {
                Some(source) => match Expression::parse(source) {
                    Ok(expression) => {
                        self.check_references(&expression, path, scope);
                        Some(Mapping::Expression(expression))
                    }
                    Err(error) => {
                        self.error(path, error.to_string());
                        None
                    }
                },
                None => Some(Mapping::Literal(value.clone())),
            },
            Value::Array(items) => {
                let items: Vec<Option<Mapping>> = items
                    .iter()
                    .enumerate()
                    .map(|(index, item)| self.mapping(item, &format!("{path}[{index}]"), scope))
                    .collect();
                Some(Mapping::Array(items.into_iter().collect::<Option<_>>()?))
            }
            Value::Object(fields) => {
                let fields: Vec<(String, Option<Mapping>)> = fields
                    .iter()
                    .map(|(name, field)| {
                        (name.clone(), self.mapping(field, &join(path, name), scope))
                    })
                    .collect();
                let mut object = BTreeMap::new();
                for (name, field) in fields {
                    object.insert(name, field?);
                }
                Some(Mapping::Object(object))
            }
            literal => Some(Mapping::Literal(literal.clone())),
        }
    }

    /// Checks a mapping against a JSON Schema: required and unknown fields, and the types of
    /// literals and of simple path expressions.
    fn check_against_schema(
        &mut self,
        value: &Value,
        schema: &Value,
        root: &Value,
        path: &str,
        scope: &Scope<'_>,
    ) {
        let schema = resolve(schema, root);
        let expected = schema_types(schema);
        let actual: Option<Vec<&'static str>> = match value {
            Value::String(text) => match unwrap_expression(text) {
                Some(source) => match known_type(source.trim(), scope) {
                    Some(types) => Some(types),
                    None => return,
                },
                None => Some(vec!["string"]),
            },
            other => Some(vec![json_type(other)]),
        };
        if let (Some(expected), Some(actual)) = (&expected, &actual)
            && !actual.iter().any(|actual| type_fits(actual, expected))
        {
            let what = if value.as_str().and_then(unwrap_expression).is_some() {
                format!("the expression gives {}", actual.join(" or "))
            } else {
                format!("the value is {}", actual.join(" or "))
            };
            self.error(
                path,
                format!("{what}, but the schema expects {}", expected.join(" or ")),
            );
            return;
        }
        let (Value::Object(fields), Some(properties)) =
            (value, schema.get("properties").and_then(Value::as_object))
        else {
            if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
                for (index, item) in items.iter().enumerate() {
                    self.check_against_schema(
                        item,
                        item_schema,
                        root,
                        &format!("{path}[{index}]"),
                        scope,
                    );
                }
            }
            return;
        };
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !fields.contains_key(required) {
                self.error(path, format!("the required field `{required}` is missing"));
            }
        }
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (name, field) in fields {
            match properties.get(name) {
                Some(field_schema) => {
                    self.check_against_schema(field, field_schema, root, &join(path, name), scope);
                }
                None if closed => {
                    let hint = suggestion(name, properties.keys().map(String::as_str));
                    self.error(
                        join(path, name),
                        format!("the field `{name}` is not in the schema{hint}"),
                    );
                }
                None => {}
            }
        }
    }
}

/// The error a retrier names, or why it cannot be retried.
fn retry_on(name: &str) -> Result<RetryOn, String> {
    if name == "retryable_tool_error" {
        return Ok(RetryOn::RetryableToolError);
    }
    let kind = ErrorKind::from_str(name).map_err(|_| {
        let names = ErrorKind::ALL
            .iter()
            .map(|kind| kind.as_str())
            .chain(std::iter::once("retryable_tool_error"));
        format!("unknown error `{name}`{}", suggestion(name, names))
    })?;
    match kind {
        ErrorKind::Timeout
        | ErrorKind::DomainUnavailable
        | ErrorKind::ToolFailed
        | ErrorKind::ToolPanicked
        | ErrorKind::AuditFailed
        | ErrorKind::StoreUnavailable => Ok(RetryOn::Kind(kind)),
        refused => Err(format!(
            "`{refused}` is a refusal that gives the same answer on every attempt: it cannot \
             be retried (retry timeout, domain_unavailable, tool_failed, tool_panicked, \
             audit_failed, store_unavailable or retryable_tool_error)"
        )),
    }
}

/// The CEL inside a string that is wholly `${ … }`.
pub(crate) fn unwrap_expression(text: &str) -> Option<&str> {
    let inner = text.trim().strip_prefix("${")?.strip_suffix('}')?;
    Some(inner.trim())
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

/// The variables CEL's macros bind in `source`: the `d` of `list.map(d, …)`.
fn macro_variables(source: &str) -> Vec<String> {
    const MACROS: [&str; 5] = ["map(", "filter(", "all(", "exists(", "exists_one("];
    let mut bound = Vec::new();
    for (start, _) in source.match_indices('.') {
        let rest = &source[start + 1..];
        let Some(arguments) = MACROS.iter().find_map(|name| rest.strip_prefix(name)) else {
            continue;
        };
        if let Some((variable, _)) = arguments.split_once(',') {
            let variable = variable.trim();
            if !variable.is_empty()
                && variable
                    .chars()
                    .all(|character| character.is_ascii_alphanumeric() || character == '_')
            {
                bound.push(variable.to_owned());
            }
        }
    }
    bound
}

/// The node ids `source` names as `steps.X`.
fn step_references(source: &str) -> Vec<&str> {
    let mut steps = Vec::new();
    for (start, _) in source.match_indices("steps.") {
        let before = source[..start].chars().next_back();
        if before.is_some_and(|character| {
            character.is_ascii_alphanumeric() || character == '_' || character == '.'
        }) {
            continue;
        }
        let rest = &source[start + "steps.".len()..];
        let end = rest
            .find(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
            .unwrap_or(rest.len());
        if end > 0 {
            steps.push(&rest[..end]);
        }
    }
    steps
}

/// The JSON types an expression gives, when it is a simple path whose schema is known:
/// `input.a.b` from the workflow's input schema, `steps.x.output.f` from the tool's output
/// schema.
fn known_type(source: &str, scope: &Scope<'_>) -> Option<Vec<&'static str>> {
    let segments: Vec<&str> = source.split('.').collect();
    if segments.iter().any(|segment| {
        !is_identifier(segment)
            && !segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
    }) || segments.iter().any(|segment| segment.is_empty())
    {
        return None;
    }
    let (root, fields) = match segments.as_slice() {
        ["input", fields @ ..] => (scope.input_schema?, fields),
        ["steps", step, "output", fields @ ..] => (scope.steps.get(*step)?.as_ref()?, fields),
        _ => return None,
    };
    let mut schema = root;
    for field in fields {
        schema = resolve(schema, root).get("properties")?.get(*field)?;
    }
    schema_types(resolve(schema, root))
}

/// Follows a local `$ref` (`#/$defs/X`, `#/definitions/X`).
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut schema = schema;
    for _ in 0..8 {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
            break;
        };
        match reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
        {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// The JSON types a schema allows, when it says.
fn schema_types(schema: &Value) -> Option<Vec<&'static str>> {
    const TYPES: [&str; 7] = [
        "null", "boolean", "object", "array", "number", "string", "integer",
    ];
    let known = |name: &str| TYPES.iter().copied().find(|known| *known == name);
    match schema.get("type")? {
        Value::String(name) => Some(vec![known(name)?]),
        Value::Array(names) => names
            .iter()
            .map(|name| name.as_str().and_then(known))
            .collect(),
        _ => None,
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_fits(actual: &str, expected: &[&str]) -> bool {
    expected.contains(&actual) || (actual == "integer" && expected.contains(&"number"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macro_variables_are_found() {
        assert_eq!(macro_variables("input.days.map(d, d * 2)"), ["d"]);
        assert_eq!(
            macro_variables("xs.filter(x, x > 1).all(y , y < 9)"),
            ["x", "y"]
        );
    }

    #[test]
    fn step_references_skip_fields_named_steps() {
        assert_eq!(
            step_references("steps.a.output.x + input.steps.b + steps.c"),
            ["a", "c"]
        );
    }

    #[test]
    fn wrapped_expressions_are_unwrapped() {
        assert_eq!(unwrap_expression("${ input.a }"), Some("input.a"));
        assert_eq!(unwrap_expression("hello ${ input.a }"), None);
    }

    #[test]
    fn refusals_cannot_be_retried() {
        assert!(retry_on("timeout").is_ok());
        assert!(retry_on("permission_denied").is_err());
        assert!(
            retry_on("timout")
                .expect_err("misspelt")
                .contains("did you mean `timeout`")
        );
    }
}

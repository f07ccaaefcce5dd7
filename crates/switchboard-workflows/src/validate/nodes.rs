//! The checks of one node: its kind and that kind's keys, its targets, retries, failure
//! handling and compensation, and the tools it names.

use std::str::FromStr;
use std::sync::Arc;

use jiff::SignedDuration;
use serde_json::Value;
use switchboard_core::ErrorKind;

use super::{MAX_FOREACH_ITEMS, ToolSignature, Validator, VisibleScope, is_identifier, suggestion};
use crate::definition::{
    Branch, Compensation, Jitter, Node, NodeId, NodeKind, OnFailure, Retrier, RetryOn, WaitFor,
};
use crate::file::{
    FailureAction, JitterFile, NodeFile, OnFailureFile, RetrierFile, WaitFile, WorkflowRef,
};

impl Validator<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn node(
        &mut self,
        node: &NodeFile,
        path: &str,
        following: Option<&str>,
        block_ids: &[&str],
        scope: &VisibleScope<'_>,
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
            None => OnFailure::default(),
            Some(OnFailureFile::Action(FailureAction::Fail)) => OnFailure::Fail,
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
    pub(super) fn check_stray_keys(&mut self, node: &NodeFile, kind: &str, path: &str) {
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
    pub(super) fn kind(
        &mut self,
        node: &NodeFile,
        kind: &str,
        path: &str,
        scope: &VisibleScope<'_>,
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

    pub(super) fn concurrency(
        &mut self,
        concurrency: Option<u32>,
        default: u32,
        path: &str,
    ) -> u32 {
        match concurrency {
            Some(0) => {
                self.error(path, "concurrency must be at least 1");
                1
            }
            Some(concurrency) => concurrency,
            None => default,
        }
    }

    pub(super) fn tool_signature(&mut self, name: &str, path: &str) -> Option<ToolSignature> {
        let signature = self.tools.signature(name);
        if signature.is_none() {
            let names = self.tools.names();
            let hint = suggestion(name, names.iter().map(String::as_str));
            self.error(path, format!("no tool `{name}` is registered{hint}"));
        }
        signature
    }

    pub(super) fn retrier(&mut self, retrier: &RetrierFile, path: &str) -> Option<Retrier> {
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

    pub(super) fn duration(&mut self, text: &str, path: &str) -> Option<SignedDuration> {
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
}

/// The error a retrier names, or why it cannot be retried.
pub(super) fn retry_on(name: &str) -> Result<RetryOn, String> {
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
        | ErrorKind::StoreUnavailable
        | ErrorKind::AuditUnavailable
        | ErrorKind::RateLimited => Ok(RetryOn::Kind(kind)),
        refused => Err(format!(
            "`{refused}` is a refusal that gives the same answer on every attempt: it cannot \
             be retried (retry timeout, domain_unavailable, tool_failed, tool_panicked, \
             audit_failed, store_unavailable, audit_unavailable, rate_limited or \
             retryable_tool_error)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

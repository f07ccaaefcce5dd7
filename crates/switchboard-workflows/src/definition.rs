//! A validated workflow definition: the typed graph the engine interprets.
//!
//! A definition reaches this form only through validation (a file, or the typed builder, both
//! checked the same way), so the engine never meets an unknown tool, a dangling `next`, an
//! unbounded loop or an expression that does not parse: those are refused before anything
//! runs, with their path in the file. What is left for run time is what only run time knows:
//! the values the expressions see.
//!
//! The graph is a tree of [`Block`]s. A block is a list of nodes that runs from its first node,
//! each node naming the next (by default the one after it); a block ends when a node has no
//! next. `foreach` and `parallel` own blocks of their own, so a node is found by its *path*
//! (`fan_out/notify/send`: the ids of the nodes that own it, then its own), and one execution
//! of it by that path and an *iteration* (the item's index in a `foreach`, else 0).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use jiff::SignedDuration;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_core::ErrorKind;

use crate::expression::Expression;

/// A workflow ready to run: every check passed.
#[derive(Debug, Clone)]
pub struct Definition {
    /// The workflow's name (`shift_swap`): what runs are listed under.
    pub name: Arc<str>,
    /// What it does, for people.
    pub description: String,
    /// The JSON Schema the run's input must satisfy, if the workflow declares one.
    pub input_schema: Option<Value>,
    /// The run's output, mapped from its input and its steps' outputs once it completes; none
    /// means the run's output is `null`.
    pub output: Option<Mapping>,
    /// The most node executions one run may make (retries, iterations and compensations
    /// count): a run that reaches it fails instead of looping for ever.
    pub max_steps: u32,
    /// The nodes, from the first.
    pub body: Block,
    /// The document it was validated from, self-contained (its sub-workflows inline): what a
    /// run stores, so that a resumed run validates and follows the definition it started
    /// with, even if the file changed since.
    pub document: Arc<Value>,
}

/// Nodes that run in order from the first, each naming the next.
#[derive(Debug, Clone, Default)]
pub struct Block {
    /// The nodes; the first is where the block starts.
    pub nodes: Vec<Node>,
}

impl Block {
    /// The node with this id, in this block only (not in blocks nested in it).
    pub fn node(&self, id: &NodeId) -> Option<&Node> {
        self.nodes.iter().find(|node| &node.id == id)
    }
}

/// A node's id, unique within its block: the last segment of its [`NodePath`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(Arc<str>);

impl NodeId {
    /// Wraps a string as a node id (validation checks its shape: `[a-z0-9_]`, at most 64).
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a node sits in its definition: the ids from the top block down to it, joined by `/`
/// (`fan_out/notify/send`). With an iteration, it names one execution, and it is the key a
/// store keeps a step under.
///
/// A step inside nested `foreach` nodes names the items of the enclosing ones in its path: a
/// `foreach` that itself runs inside a `foreach` names its items' steps under its own path
/// followed by `[i]`, the index of the outer item it runs for. With `outer` (a `foreach`)
/// whose body holds `inner` (a `foreach`) whose body holds `send`, the steps are `outer`
/// (iteration 0), `outer/inner` (iteration `i`: one per outer item) and `outer/inner[i]/send`
/// (iteration `j`: item `j` of the inner list of outer item `i`); one level deeper,
/// `outer/inner[i]/deepest[j]/send`. A `foreach` outside any other needs no brackets: its
/// items are its body's iterations. [`for_item`](Self::for_item) writes the brackets,
/// [`node`](Self::node) drops them (the node's place in the definition) and
/// [`items`](Self::items) reads them back.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodePath(Arc<str>);

impl NodePath {
    /// The path of a node of the top block.
    pub fn root(id: &NodeId) -> Self {
        Self(Arc::clone(&id.0))
    }

    /// The path of `id`, a node of a block nested in the node at this path. For a `parallel`
    /// node, the branch's name is a segment of its own.
    pub fn child(&self, id: &str) -> Self {
        Self(format!("{}/{id}", self.0).into())
    }

    /// Wraps a stored path.
    pub fn new(path: impl Into<Arc<str>>) -> Self {
        Self(path.into())
    }

    /// Where a `foreach` at this path, running for item `item` of an enclosing `foreach`,
    /// names its own items' steps: `outer/inner[2]`.
    pub fn for_item(&self, item: u32) -> Self {
        Self(format!("{}[{item}]", self.0).into())
    }

    /// The node's path in its definition, without the items of enclosing `foreach` nodes:
    /// `outer/inner/send` for `outer/inner[2]/send`.
    pub fn node(&self) -> Self {
        if !self.0.contains('[') {
            return self.clone();
        }
        let segments: Vec<&str> = self
            .0
            .split('/')
            .map(|segment| segment.split('[').next().unwrap_or(segment))
            .collect();
        Self(segments.join("/").into())
    }

    /// The items of the enclosing `foreach` nodes the path names, outermost first: `[2]` for
    /// `outer/inner[2]/send`, none outside nested `foreach` nodes.
    pub fn items(&self) -> Vec<u32> {
        self.0
            .split('/')
            .filter_map(|segment| {
                let (_, rest) = segment.split_once('[')?;
                rest.strip_suffix(']')?.parse().ok()
            })
            .collect()
    }

    /// The path as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NodePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One node: what it does, where the run goes next, and how its failures are handled.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its id, unique in its block.
    pub id: NodeId,
    /// What it is for, for people (shown by `workflow show`).
    pub description: Option<String>,
    /// What it does.
    pub kind: NodeKind,
    /// The node that runs after it in the same block; none ends the block. A `condition` node
    /// chooses its next itself, and an `end` node ends the run.
    pub next: Option<NodeId>,
    /// How its failed attempts are retried, the first matching retrier applying (Step
    /// Functions' `Retry`). Empty: a failure is final at once.
    pub retry: Vec<Retrier>,
    /// What a final failure does.
    pub on_failure: OnFailure,
    /// How to undo what it did, when the run fails or is cancelled after it completed.
    pub compensate: Option<Compensation>,
}

/// The eight kinds of node.
#[derive(Debug, Clone)]
pub enum NodeKind {
    /// Calls a registered tool through `ToolRegistry::invoke`, as the run's caller.
    Tool {
        /// The tool's registered name.
        tool: Arc<str>,
        /// Its params, mapped from the run's input and earlier outputs.
        params: Mapping,
    },
    /// Chooses the next node: the first branch whose condition holds, else `otherwise`, else
    /// the end of the block.
    Condition {
        /// The branches, in order.
        branches: Vec<Branch>,
        /// Where to go when no branch holds.
        otherwise: Option<NodeId>,
    },
    /// Runs its block once per item of a list, at most `max_items` of them (a longer list
    /// fails the node), `concurrency` at a time. Its output is the list of the block's
    /// outputs, in the items' order.
    Foreach {
        /// The list.
        items: Expression,
        /// The name the block sees the current item under (its index is `index`).
        item: Arc<str>,
        /// The most items it accepts.
        max_items: u32,
        /// How many items run at once (1: one after the other).
        concurrency: u32,
        /// What runs per item; its output is the output of its last node.
        body: Block,
    },
    /// Runs its named branches at the same time, `concurrency` at most, and joins them: its
    /// output is an object of each branch's output by name; a branch that fails fails it.
    Parallel {
        /// The branches, by name.
        branches: Vec<(Arc<str>, Block)>,
        /// How many branches run at once.
        concurrency: u32,
    },
    /// Asks a person: the call is stored as a proposal (through the registry's proposals),
    /// and the run pauses until it is decided. Approved: the call runs as the approver and its
    /// output is the node's; rejected or expired: the node fails.
    Approval {
        /// The mutating tool to propose.
        tool: Arc<str>,
        /// Its params.
        params: Mapping,
        /// What the approver reads; none: the registry's own summary.
        summary: Option<Expression>,
    },
    /// A durable timer: the run is stored as waiting, not held by a sleeping task, and goes on
    /// once the time has come, across restarts.
    Wait(WaitFor),
    /// Runs another workflow as a child run with the same caller; its output is the child's.
    /// The child is validated with its parent (a file names it by a path relative to its own),
    /// so a run never meets a missing or invalid child, and a cycle of workflows is refused.
    Workflow {
        /// The child workflow.
        definition: Arc<Definition>,
        /// The child's input.
        input: Mapping,
    },
    /// Ends the run, completed, with this output in place of the workflow's `output`.
    End {
        /// The run's output; none: the workflow's `output` mapping, or `null`.
        output: Option<Mapping>,
    },
}

impl NodeKind {
    /// The kind's name as a definition file spells it.
    pub const fn as_str(&self) -> &'static str {
        match self {
            NodeKind::Tool { .. } => "tool",
            NodeKind::Condition { .. } => "condition",
            NodeKind::Foreach { .. } => "foreach",
            NodeKind::Parallel { .. } => "parallel",
            NodeKind::Approval { .. } => "approval",
            NodeKind::Wait(_) => "wait",
            NodeKind::Workflow { .. } => "workflow",
            NodeKind::End { .. } => "end",
        }
    }
}

/// One branch of a `condition` node.
#[derive(Debug, Clone)]
pub struct Branch {
    /// A boolean expression.
    pub when: Expression,
    /// Where the run goes when it holds.
    pub next: NodeId,
}

/// How long a `wait` node waits.
#[derive(Debug, Clone)]
pub enum WaitFor {
    /// This long after the node starts.
    Duration(SignedDuration),
    /// Until the instant this expression gives (an RFC 3339 timestamp string).
    Until(Expression),
}

/// What a node's final failure does (after its retries).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OnFailure {
    /// The run fails, and the compensations of its completed steps run first, in reverse
    /// order (the saga): a failed run never leaves declared undo steps un-run.
    #[default]
    Compensate,
    /// The run fails at once, and what completed stays done, for a person to look at.
    Fail,
    /// The node is skipped with the error recorded; the run goes on to its next node, which
    /// sees the node's output as `null`.
    Skip,
    /// The run goes on at this node of the same block instead.
    Fallback(NodeId),
    /// The run pauses for a person, who resumes it (the node runs again) or cancels it.
    Escalate,
}

/// A node's undo: a tool call mapped over what the node did.
#[derive(Debug, Clone)]
pub struct Compensation {
    /// The tool that undoes the node.
    pub tool: Arc<str>,
    /// Its params; besides the run's scope, they see the node's own `params` and `output`.
    pub params: Mapping,
}

/// One retry rule, shaped like AWS Step Functions' `Retry`: attempt `n + 1` waits
/// `min(interval × backoff_rate^(n−1), max_delay)`, or with full jitter a uniformly random
/// share of that.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrier {
    /// The failures it retries.
    pub errors: Vec<RetryOn>,
    /// The wait before the first retry.
    pub interval: SignedDuration,
    /// The most attempts in all, the first included.
    pub max_attempts: u32,
    /// What each wait is multiplied by for the next.
    pub backoff_rate: f64,
    /// The longest wait; none: no cap.
    pub max_delay: Option<SignedDuration>,
    /// Whether the wait is randomised.
    pub jitter: Jitter,
}

impl Retrier {
    /// The failures retried when a retrier names none: `timeout`, `domain_unavailable`, and
    /// `tool_failed` when the tool marks its error retryable.
    pub const DEFAULT_ERRORS: [RetryOn; 3] = [
        RetryOn::Kind(ErrorKind::Timeout),
        RetryOn::Kind(ErrorKind::DomainUnavailable),
        RetryOn::RetryableToolError,
    ];
}

impl Default for Retrier {
    /// The retrier a `tool` node gets when it declares none: the default errors, three
    /// attempts, one second doubling, capped at a minute, full jitter.
    fn default() -> Self {
        Self {
            errors: Self::DEFAULT_ERRORS.to_vec(),
            interval: SignedDuration::from_secs(1),
            max_attempts: 3,
            backoff_rate: 2.0,
            max_delay: Some(SignedDuration::from_secs(60)),
            jitter: Jitter::Full,
        }
    }
}

/// A failure a retrier matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOn {
    /// Every failure of this kind. Validation refuses the kinds that can never succeed on a
    /// retry (`invalid_input`, `permission_denied`, `category_denied` and the other refusals
    /// of the checks).
    Kind(ErrorKind),
    /// A `tool_failed` whose tool marked its error retryable.
    RetryableToolError,
}

/// Whether a retry's wait is randomised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Jitter {
    /// A uniformly random wait between zero and the computed one ("full jitter"), so that
    /// many runs failing together do not retry together.
    #[default]
    Full,
    /// Exactly the computed wait.
    None,
}

/// A JSON value whose leaves may be expressions: what a node's params, a sub-workflow's input
/// and an output are written as. A string that is wholly `${ … }` is an expression, whose
/// value (of any JSON type) takes its place; every other value is itself.
#[derive(Debug, Clone)]
pub enum Mapping {
    /// A value used as it is.
    Literal(Value),
    /// An expression, evaluated in the run's scope.
    Expression(Expression),
    /// An object whose fields are mappings.
    Object(BTreeMap<String, Mapping>),
    /// An array whose items are mappings.
    Array(Vec<Mapping>),
}

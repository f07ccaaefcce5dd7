//! The typed builder: a workflow written in Rust, checked exactly like a file.
//!
//! The builder fills the file model ([`WorkflowFile`]) and validates it with
//! [`validate`](crate::validate()), so a workflow built in code and the same workflow written
//! in YAML give equal documents and pass the same checks; there is no second path into a
//! [`Definition`].
//!
//! ```
//! use std::collections::BTreeMap;
//! use serde_json::json;
//! use switchboard_workflows::{NodeBuilder, WorkflowBuilder};
//!
//! let document = WorkflowBuilder::new("greet")
//!     .description("Reads a shift.")
//!     .node(NodeBuilder::tool("read", "roster_get_shift").params(json!({"shift_id": "${ input.shift }"})))
//!     .node(NodeBuilder::end("done"))
//!     .document();
//! assert_eq!(document["nodes"][0]["tool"], "roster_get_shift");
//! ```

use std::collections::BTreeMap;

use serde_json::Value;

use crate::definition::Definition;
use crate::file::{
    ApprovalFile, BranchFile, EndFile, FailureAction, FallbackFile, LimitsFile, NodeFile,
    OnFailureFile, RetrierFile, ToolCallFile, UntilFile, WaitFile, WorkflowFile, WorkflowRef,
};
use crate::validate::{ToolSignatures, ValidationErrors, validate};

/// Builds a workflow; [`build`](Self::build) validates it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowBuilder {
    file: WorkflowFile,
}

impl WorkflowBuilder {
    /// A workflow called `name`, with no nodes yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            file: WorkflowFile {
                workflow: name.into(),
                description: String::new(),
                expressions: None,
                input: None,
                limits: None,
                output: None,
                nodes: Vec::new(),
            },
        }
    }

    /// What it does, for people.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.file.description = description.into();
        self
    }

    /// Names the expression language (`cel`, the only one).
    pub fn expressions(mut self, language: impl Into<String>) -> Self {
        self.file.expressions = Some(language.into());
        self
    }

    /// The JSON Schema of the run's input.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.file.input = Some(schema);
        self
    }

    /// The most node executions of one run.
    pub fn max_steps(mut self, max_steps: u32) -> Self {
        self.file.limits = Some(LimitsFile {
            max_steps: Some(max_steps),
        });
        self
    }

    /// The run's output mapping.
    pub fn output(mut self, output: Value) -> Self {
        self.file.output = Some(output);
        self
    }

    /// Appends a node.
    pub fn node(mut self, node: NodeBuilder) -> Self {
        self.file.nodes.push(node.node);
        self
    }

    /// The file model it has built.
    pub fn file(&self) -> &WorkflowFile {
        &self.file
    }

    /// The document it has built, as a file's would be.
    pub fn document(&self) -> Value {
        serde_json::to_value(&self.file).unwrap_or(Value::Null)
    }

    /// Validates it, exactly as a file is.
    pub fn build(&self, tools: &dyn ToolSignatures) -> Result<Definition, ValidationErrors> {
        validate(&self.document(), tools)
    }
}

/// Builds one node: a constructor per kind, then the common settings.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeBuilder {
    node: NodeFile,
}

impl NodeBuilder {
    fn with(id: impl Into<String>, fill: impl FnOnce(&mut NodeFile)) -> Self {
        let mut node = NodeFile {
            id: id.into(),
            ..NodeFile::default()
        };
        fill(&mut node);
        Self { node }
    }

    /// Calls `tool` (params: [`params`](Self::params)).
    pub fn tool(id: impl Into<String>, tool: impl Into<String>) -> Self {
        Self::with(id, |node| node.tool = Some(tool.into()))
    }

    /// The params of a `tool` node.
    pub fn params(mut self, params: Value) -> Self {
        self.node.params = Some(params);
        self
    }

    /// A condition with no branches yet (add them with [`branch`](Self::branch)).
    pub fn condition(id: impl Into<String>) -> Self {
        Self::with(id, |node| node.condition = Some(Vec::new()))
    }

    /// Adds a branch to a condition: when `when` holds, go to `next`.
    pub fn branch(mut self, when: impl Into<String>, next: impl Into<String>) -> Self {
        self.node
            .condition
            .get_or_insert_with(Vec::new)
            .push(BranchFile {
                when: when.into(),
                next: next.into(),
            });
        self
    }

    /// Where a condition goes when no branch holds.
    pub fn otherwise(mut self, next: impl Into<String>) -> Self {
        self.node.otherwise = Some(next.into());
        self
    }

    /// Runs `body` per item of `items`, at most `max_items`.
    pub fn foreach(
        id: impl Into<String>,
        items: impl Into<String>,
        max_items: u32,
        body: Vec<NodeBuilder>,
    ) -> Self {
        Self::with(id, |node| {
            node.foreach = Some(items.into());
            node.max_items = Some(max_items);
            node.body = Some(body.into_iter().map(|node| node.node).collect());
        })
    }

    /// The name a foreach's block sees the item under.
    pub fn item_as(mut self, name: impl Into<String>) -> Self {
        self.node.item = Some(name.into());
        self
    }

    /// How many items or branches run at once.
    pub fn concurrency(mut self, concurrency: u32) -> Self {
        self.node.concurrency = Some(concurrency);
        self
    }

    /// Runs named branches at the same time.
    pub fn parallel(
        id: impl Into<String>,
        branches: impl IntoIterator<Item = (String, Vec<NodeBuilder>)>,
    ) -> Self {
        let branches: BTreeMap<String, Vec<NodeFile>> = branches
            .into_iter()
            .map(|(name, body)| (name, body.into_iter().map(|node| node.node).collect()))
            .collect();
        Self::with(id, |node| node.parallel = Some(branches))
    }

    /// Asks a person to approve a call of a mutating `tool`.
    pub fn approval(
        id: impl Into<String>,
        tool: impl Into<String>,
        params: Value,
        summary: Option<String>,
    ) -> Self {
        Self::with(id, |node| {
            node.approval = Some(ApprovalFile {
                tool: tool.into(),
                params: Some(params),
                summary,
            });
        })
    }

    /// Waits this long (`30s`, `1h 30m`).
    pub fn wait(id: impl Into<String>, duration: impl Into<String>) -> Self {
        Self::with(id, |node| {
            node.wait = Some(WaitFile::Duration(duration.into()))
        })
    }

    /// Waits until the instant `until` gives.
    pub fn wait_until(id: impl Into<String>, until: impl Into<String>) -> Self {
        Self::with(id, |node| {
            node.wait = Some(WaitFile::Until(UntilFile {
                until: until.into(),
            }));
        })
    }

    /// Runs `workflow` as a child with `input`.
    pub fn workflow(id: impl Into<String>, workflow: WorkflowBuilder, input: Value) -> Self {
        Self::with(id, |node| {
            node.workflow = Some(WorkflowRef::Inline(Box::new(workflow.file)));
            node.input = Some(input);
        })
    }

    /// Ends the run (with the workflow's output).
    pub fn end(id: impl Into<String>) -> Self {
        Self::with(id, |node| node.end = Some(EndFile::default()))
    }

    /// Ends the run with this output.
    pub fn end_with(id: impl Into<String>, output: Value) -> Self {
        Self::with(id, |node| {
            node.end = Some(EndFile {
                output: Some(output),
            });
        })
    }

    /// What the node is for, for people.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.node.description = Some(description.into());
        self
    }

    /// The node that runs next.
    pub fn next(mut self, next: impl Into<String>) -> Self {
        self.node.next = Some(next.into());
        self
    }

    /// Adds a retry rule.
    pub fn retry(mut self, retrier: RetrierFile) -> Self {
        self.node.retry.get_or_insert_with(Vec::new).push(retrier);
        self
    }

    /// What a final failure does.
    pub fn on_failure(mut self, action: FailureAction) -> Self {
        self.node.on_failure = Some(OnFailureFile::Action(action));
        self
    }

    /// On a final failure, go on at `node` instead.
    pub fn fallback(mut self, node: impl Into<String>) -> Self {
        self.node.on_failure = Some(OnFailureFile::Fallback(FallbackFile {
            fallback: node.into(),
        }));
        self
    }

    /// How to undo the node.
    pub fn compensate(mut self, tool: impl Into<String>, params: Value) -> Self {
        self.node.compensate = Some(ToolCallFile {
            tool: tool.into(),
            params: Some(params),
        });
        self
    }
}

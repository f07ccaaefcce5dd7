//! The picture both graph formats draw, as a flat list of boxes, clusters and edges.
//!
//! Walking the definition once, here, keeps Graphviz and Mermaid in agreement about what is
//! drawn: a box per node (id, kind, description, compensation, state), a cluster per `foreach` body and per `parallel`
//! branch, an edge for each `next`, each condition branch (labelled with its `when`), each
//! `otherwise` and each fallback (dashed), and an edge from a `foreach` or `parallel` node into
//! the blocks it runs (dotted). The texts here are raw; each format escapes them its own way.

use crate::definition::{Block, Definition, Node, NodeKind, NodePath, OnFailure, WaitFor};

use super::status::{RunView, Tone};

/// The longest expression an edge label shows.
const EXPRESSION_CHARS: usize = 80;
/// The longest description a box shows.
const DESCRIPTION_CHARS: usize = 60;
/// The longest error a box shows.
const ERROR_CHARS: usize = 60;

/// One thing to draw, in drawing order: clusters open and close around their boxes.
#[derive(Debug)]
pub(crate) enum Item {
    /// A node's box.
    Box {
        /// The node's path, its identity in the picture.
        path: NodePath,
        /// Its label's lines (raw text).
        lines: Vec<String>,
        /// Its colour.
        tone: Tone,
    },
    /// A cluster opens.
    ClusterStart {
        /// Its identity: the path of the node that owns it, and the branch for a parallel.
        id: String,
        /// Its title (raw text).
        title: String,
    },
    /// The innermost open cluster closes.
    ClusterEnd,
}

/// An edge between two boxes.
#[derive(Debug)]
pub(crate) struct Edge {
    pub(crate) from: NodePath,
    pub(crate) to: NodePath,
    /// Its label (raw text), if any.
    pub(crate) label: Option<String>,
    pub(crate) style: EdgeStyle,
}

/// How an edge is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EdgeStyle {
    /// The run's way forward: `next`, a branch, `otherwise`.
    Solid,
    /// Only on a failure: a fallback.
    Dashed,
    /// Into a block the node runs: a `foreach` body, a `parallel` branch.
    Dotted,
}

/// The picture of `definition`, with the states of `run` if given.
#[derive(Debug, Default)]
pub(crate) struct Picture {
    pub(crate) title: String,
    pub(crate) items: Vec<Item>,
    pub(crate) edges: Vec<Edge>,
}

impl Picture {
    pub(crate) fn new(definition: &Definition, run: Option<&RunView<'_>>) -> Self {
        let mut picture = Picture {
            title: match run {
                Some(run) => format!(
                    "{} · run {} · {}",
                    definition.name,
                    run.run.id,
                    run.run.state.as_str()
                ),
                None => definition.name.to_string(),
            },
            ..Picture::default()
        };
        picture.block(&definition.body, None, run, None);
        picture
    }

    fn block(
        &mut self,
        block: &Block,
        owner: Option<&NodePath>,
        run: Option<&RunView<'_>>,
        in_foreach: Option<usize>,
    ) {
        let path_of = |id: &str| match owner {
            Some(owner) => owner.child(id),
            None => NodePath::new(id),
        };
        for node in &block.nodes {
            let path = path_of(node.id.as_str());
            self.node_box(node, &path, run, in_foreach);
            if let Some(next) = &node.next {
                self.edge(&path, path_of(next.as_str()), None, EdgeStyle::Solid);
            }
            if let NodeKind::Condition {
                branches,
                otherwise,
            } = &node.kind
            {
                for branch in branches {
                    let label = super::one_line(branch.when.source(), EXPRESSION_CHARS);
                    let to = path_of(branch.next.as_str());
                    self.edge(&path, to, Some(label), EdgeStyle::Solid);
                }
                if let Some(otherwise) = otherwise {
                    let to = path_of(otherwise.as_str());
                    self.edge(&path, to, Some("otherwise".to_owned()), EdgeStyle::Solid);
                }
            }
            if let OnFailure::Fallback(fallback) = &node.on_failure {
                let to = path_of(fallback.as_str());
                self.edge(&path, to, Some("on failure".to_owned()), EdgeStyle::Dashed);
            }
        }
    }

    fn node_box(
        &mut self,
        node: &Node,
        path: &NodePath,
        run: Option<&RunView<'_>>,
        in_foreach: Option<usize>,
    ) {
        let is_foreach = matches!(node.kind, NodeKind::Foreach { .. });
        let mut lines = vec![node.id.to_string(), kind_line(node)];
        if let Some(description) = &node.description {
            lines.push(super::one_line(description, DESCRIPTION_CHARS));
        }
        if let Some(compensation) = &node.compensate {
            lines.push(format!("undo: {}", compensation.tool));
        }
        let mut tone = Tone::Pending;
        if let Some(run) = run {
            let status = run.node(path, in_foreach, is_foreach);
            lines.push(status.summary);
            if let Some(error) = status.error {
                lines.push(super::one_line(&error, ERROR_CHARS));
            }
            tone = status.tone;
        }
        self.items.push(Item::Box {
            path: path.clone(),
            lines,
            tone,
        });
        match &node.kind {
            NodeKind::Foreach {
                items, item, body, ..
            } => {
                let title = format!(
                    "foreach {}: each {item} in {}",
                    node.id,
                    super::one_line(items.source(), EXPRESSION_CHARS)
                );
                let total = run
                    .map(|run| run.foreach_items(path).unwrap_or(0))
                    .or(Some(0));
                if let Some(first) = body.nodes.first() {
                    let to = path.child(first.id.as_str());
                    self.edge(path, to, Some(format!("each {item}")), EdgeStyle::Dotted);
                }
                self.cluster(path.as_str().to_owned(), title, |picture| {
                    picture.block(body, Some(path), run, total);
                });
            }
            NodeKind::Parallel { branches, .. } => {
                for (name, branch) in branches {
                    let branch_path = path.child(name);
                    let title = format!("{} branch {name}", node.id);
                    if let Some(first) = branch.nodes.first() {
                        let to = branch_path.child(first.id.as_str());
                        self.edge(path, to, Some(name.to_string()), EdgeStyle::Dotted);
                    }
                    self.cluster(branch_path.as_str().to_owned(), title, |picture| {
                        picture.block(branch, Some(&branch_path), run, in_foreach);
                    });
                }
            }
            _ => {}
        }
    }

    fn cluster(&mut self, id: String, title: String, inside: impl FnOnce(&mut Self)) {
        self.items.push(Item::ClusterStart { id, title });
        inside(self);
        self.items.push(Item::ClusterEnd);
    }

    fn edge(&mut self, from: &NodePath, to: NodePath, label: Option<String>, style: EdgeStyle) {
        self.edges.push(Edge {
            from: from.clone(),
            to,
            label,
            style,
        });
    }
}

/// A node's kind and what it acts on, in a few words (`tool roster_assign`).
pub(crate) fn kind_line(node: &Node) -> String {
    match &node.kind {
        NodeKind::Tool { tool, .. } => format!("tool {tool}"),
        NodeKind::Approval { tool, .. } => format!("approval of {tool}"),
        NodeKind::Foreach {
            max_items,
            concurrency,
            ..
        } => format!("foreach (at most {max_items}, {concurrency} at a time)"),
        NodeKind::Parallel { concurrency, .. } => format!("parallel ({concurrency} at a time)"),
        NodeKind::Wait(WaitFor::Duration(duration)) => format!("wait {duration:#}"),
        NodeKind::Wait(WaitFor::Until(until)) => {
            format!(
                "wait until {}",
                super::one_line(until.source(), EXPRESSION_CHARS)
            )
        }
        NodeKind::Workflow { definition, .. } => format!("workflow {}", definition.name),
        kind @ (NodeKind::Condition { .. } | NodeKind::End { .. }) => kind.as_str().to_owned(),
    }
}

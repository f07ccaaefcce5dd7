//! The text picture: a header about the run, then the nodes as an indented tree in block
//! order, each with its kind, its state and what went wrong.
//!
//! A `foreach` body and each `parallel` branch are indented under their node. Under a node
//! come, when there is something to say: its description, its condition branches, a `next`
//! that is not the node below it, its failure strategy and retries, its compensation, its
//! error (one line, cut), and with [`RenderOptions::show_outputs`] its output.

use std::fmt::Write as _;

use super::graph::kind_line;
use super::status::{ERROR_CHARS, RunView};
use super::{RenderOptions, one_line, printable};
use crate::definition::{Block, Definition, Node, NodeKind, NodePath, OnFailure};

/// The longest input, description or expression shown.
const TEXT_CHARS: usize = 100;

pub(crate) fn render(
    definition: &Definition,
    run: Option<&RunView<'_>>,
    options: RenderOptions,
) -> String {
    let mut out = String::new();
    let _ = write!(out, "workflow {}", printable(&definition.name));
    if !definition.description.is_empty() {
        let _ = write!(out, ": {}", one_line(&definition.description, TEXT_CHARS));
    }
    out.push('\n');
    if let Some(view) = run {
        let record = view.run;
        let _ = writeln!(out, "run      {}", record.id);
        let _ = writeln!(out, "state    {}", printable(&record.state.to_string()));
        let _ = writeln!(out, "created  {}", record.created_at);
        let _ = writeln!(out, "updated  {}", record.updated_at);
        let _ = writeln!(
            out,
            "input    {}",
            one_line(&record.input.to_string(), TEXT_CHARS)
        );
        if options.show_outputs
            && let Some(output) = &record.output
        {
            let _ = writeln!(
                out,
                "output   {}",
                one_line(&output.to_string(), TEXT_CHARS)
            );
        }
    }
    out.push('\n');
    let mut tree = Tree { out, run, options };
    tree.block(&definition.body, None, 0, None);
    tree.out
}

struct Tree<'r, 'a> {
    out: String,
    run: Option<&'r RunView<'a>>,
    options: RenderOptions,
}

impl Tree<'_, '_> {
    fn block(
        &mut self,
        block: &Block,
        owner: Option<&NodePath>,
        depth: usize,
        in_foreach: Option<usize>,
    ) {
        for (index, node) in block.nodes.iter().enumerate() {
            let path = match owner {
                Some(owner) => owner.child(node.id.as_str()),
                None => NodePath::new(node.id.as_str()),
            };
            let following = block.nodes.get(index + 1).map(|next| &next.id);
            self.node(node, &path, depth, in_foreach, following);
        }
    }

    fn node(
        &mut self,
        node: &Node,
        path: &NodePath,
        depth: usize,
        in_foreach: Option<usize>,
        following: Option<&crate::definition::NodeId>,
    ) {
        let indent = "  ".repeat(depth);
        let detail = "  ".repeat(depth + 2);
        let is_foreach = matches!(node.kind, NodeKind::Foreach { .. });
        let status = self.run.map(|run| run.node(path, in_foreach, is_foreach));
        let _ = write!(
            self.out,
            "{indent}{} · {}",
            printable(node.id.as_str()),
            printable(&kind_line(node))
        );
        if let Some(status) = &status {
            let _ = write!(self.out, " · {}", status.summary);
        }
        self.out.push('\n');
        let mut line = |text: String| {
            let _ = writeln!(self.out, "{detail}{text}");
        };
        if let Some(description) = &node.description {
            line(format!("about: {}", one_line(description, TEXT_CHARS)));
        }
        match &node.kind {
            NodeKind::Condition {
                branches,
                otherwise,
            } => {
                for branch in branches {
                    line(format!(
                        "when {} → {}",
                        one_line(branch.when.source(), TEXT_CHARS),
                        printable(branch.next.as_str())
                    ));
                }
                match otherwise {
                    Some(otherwise) => {
                        line(format!("otherwise → {}", printable(otherwise.as_str())))
                    }
                    None => line("otherwise → end of block".to_owned()),
                }
            }
            NodeKind::Foreach { items, item, .. } => line(format!(
                "each {} in {}",
                printable(item),
                one_line(items.source(), TEXT_CHARS)
            )),
            _ => {}
        }
        match (&node.next, &node.kind) {
            (_, NodeKind::Condition { .. } | NodeKind::End { .. }) => {}
            (Some(next), _) if Some(next) != following => {
                line(format!("next → {}", printable(next.as_str())));
            }
            (None, _) if following.is_some() => line("next → end of block".to_owned()),
            _ => {}
        }
        if let Some(max_attempts) = node.retry.iter().map(|retrier| retrier.max_attempts).max() {
            line(format!("retry: at most {max_attempts} attempts"));
        }
        match &node.on_failure {
            OnFailure::Compensate => {}
            OnFailure::Fail => line("on failure: fail, without compensation".to_owned()),
            OnFailure::Skip => line("on failure: skip".to_owned()),
            OnFailure::Fallback(fallback) => {
                line(format!(
                    "on failure: fallback → {}",
                    printable(fallback.as_str())
                ));
            }
            OnFailure::Escalate => line("on failure: escalate (pause for a person)".to_owned()),
        }
        if let Some(compensation) = &node.compensate {
            line(format!("undo: tool {}", printable(&compensation.tool)));
        }
        if let Some(status) = &status {
            if let Some(error) = &status.error {
                line(format!("error: {}", one_line(error, ERROR_CHARS)));
            }
            if self.options.show_outputs
                && let Some(output) = &status.output
            {
                line(format!("output: {output}"));
            }
        }
        match &node.kind {
            NodeKind::Foreach { body, .. } => {
                let total = self
                    .run
                    .map(|run| run.foreach_items(path).unwrap_or(0))
                    .or(Some(0));
                self.block(body, Some(path), depth + 1, total);
            }
            NodeKind::Parallel { branches, .. } => {
                for (name, branch) in branches {
                    let _ = writeln!(self.out, "{indent}  branch {}", printable(name));
                    self.block(branch, Some(&path.child(name)), depth + 2, in_foreach);
                }
            }
            _ => {}
        }
    }
}

//! The Graphviz picture: a `digraph` of boxes, clusters and edges (see [`super::graph`]).
//!
//! Every identifier and label is a double-quoted string escaped by [`dot_label`], and a box's
//! lines are joined with Graphviz's own `\n` after each line is escaped, so no text can end a
//! string or start a statement.

use std::fmt::Write as _;

use super::dot_label;
use super::graph::{EdgeStyle, Item, Picture};
use super::status::{RunView, Tone};
use crate::definition::Definition;

pub(crate) fn render(definition: &Definition, run: Option<&RunView<'_>>) -> String {
    let picture = Picture::new(definition, run);
    let mut out = String::new();
    out.push_str("digraph workflow {\n");
    let _ = writeln!(out, "  label=\"{}\";", dot_label(&picture.title));
    out.push_str("  labelloc=t;\n");
    out.push_str("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=10];\n");
    let mut depth = 1;
    for item in &picture.items {
        let indent = "  ".repeat(depth);
        match item {
            Item::Box { path, lines, tone } => {
                let label: Vec<String> = lines.iter().map(|line| dot_label(line)).collect();
                let (fill, border) = colours(*tone);
                let _ = writeln!(
                    out,
                    "{indent}\"{}\" [label=\"{}\", fillcolor=\"{fill}\", color=\"{border}\"];",
                    dot_label(path.as_str()),
                    label.join("\\n"),
                );
            }
            Item::ClusterStart { id, title } => {
                let _ = writeln!(out, "{indent}subgraph \"cluster_{}\" {{", dot_label(id));
                let _ = writeln!(out, "{indent}  label=\"{}\";", dot_label(title));
                let _ = writeln!(out, "{indent}  style=dashed;");
                depth += 1;
            }
            Item::ClusterEnd => {
                depth = depth.saturating_sub(1).max(1);
                let _ = writeln!(out, "{}}}", "  ".repeat(depth));
            }
        }
    }
    for edge in &picture.edges {
        let mut attributes = Vec::new();
        if let Some(label) = &edge.label {
            attributes.push(format!("label=\"{}\"", dot_label(label)));
        }
        match edge.style {
            EdgeStyle::Solid => {}
            EdgeStyle::Dashed => attributes.push("style=dashed".to_owned()),
            EdgeStyle::Dotted => attributes.push("style=dotted".to_owned()),
        }
        let attributes = if attributes.is_empty() {
            String::new()
        } else {
            format!(" [{}]", attributes.join(", "))
        };
        let _ = writeln!(
            out,
            "  \"{}\" -> \"{}\"{attributes};",
            dot_label(edge.from.as_str()),
            dot_label(edge.to.as_str()),
        );
    }
    out.push_str("}\n");
    out
}

/// A tone's fill and border colours.
pub(crate) const fn colours(tone: Tone) -> (&'static str, &'static str) {
    match tone {
        Tone::Pending => ("#ffffff", "#9e9e9e"),
        Tone::Completed => ("#c8e6c9", "#2e7d32"),
        Tone::Skipped => ("#f5f5f5", "#bdbdbd"),
        Tone::Compensated => ("#e0e0e0", "#616161"),
        Tone::Active => ("#fff59d", "#f9a825"),
        Tone::Failed => ("#ffcdd2", "#c62828"),
        Tone::CompensationFailed => ("#ef9a9a", "#b71c1c"),
    }
}

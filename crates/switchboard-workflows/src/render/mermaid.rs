//! The Mermaid picture: a `flowchart TD` of boxes, subgraphs and edges (see [`super::graph`]).
//!
//! Mermaid ids are plain words, so each box gets `n0`, `n1`, … in drawing order and its path
//! goes in the label. Labels are `["…"]` strings escaped by [`mermaid_label`] (entity codes
//! such as `#quot;`), a box's lines joined with `<br/>` after each line is escaped; states
//! become classes (`classDef`), coloured like the Graphviz picture.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::dot::colours;
use super::graph::{EdgeStyle, Item, Picture};
use super::mermaid_label;
use super::status::{RunView, Tone};
use crate::definition::Definition;

pub(crate) fn render(definition: &Definition, run: Option<&RunView<'_>>) -> String {
    let picture = Picture::new(definition, run);
    let mut out = String::new();
    out.push_str("flowchart TD\n");
    let _ = writeln!(out, "  %% {}", mermaid_label(&picture.title));
    let mut ids: HashMap<&str, String> = HashMap::new();
    let mut classes: Vec<(Tone, Vec<String>)> = Tone::ALL.iter().map(|t| (*t, vec![])).collect();
    let mut depth = 1;
    let mut clusters = 0;
    for item in &picture.items {
        let indent = "  ".repeat(depth);
        match item {
            Item::Box { path, lines, tone } => {
                let id = format!("n{}", ids.len());
                let label: Vec<String> = lines.iter().map(|line| mermaid_label(line)).collect();
                let _ = writeln!(out, "{indent}{id}[\"{}\"]", label.join("<br/>"));
                if let Some((_, members)) = classes.iter_mut().find(|(of, _)| of == tone) {
                    members.push(id.clone());
                }
                ids.insert(path.as_str(), id);
            }
            Item::ClusterStart { title, .. } => {
                let _ = writeln!(
                    out,
                    "{indent}subgraph c{clusters}[\"{}\"]",
                    mermaid_label(title)
                );
                clusters += 1;
                depth += 1;
            }
            Item::ClusterEnd => {
                depth = depth.saturating_sub(1).max(1);
                let _ = writeln!(out, "{}end", "  ".repeat(depth));
            }
        }
    }
    for edge in &picture.edges {
        let (Some(from), Some(to)) = (ids.get(edge.from.as_str()), ids.get(edge.to.as_str()))
        else {
            continue;
        };
        let arrow = match edge.style {
            EdgeStyle::Solid => "-->",
            EdgeStyle::Dashed | EdgeStyle::Dotted => "-.->",
        };
        match &edge.label {
            Some(label) => {
                let _ = writeln!(out, "  {from} {arrow}|\"{}\"| {to}", mermaid_label(label));
            }
            None => {
                let _ = writeln!(out, "  {from} {arrow} {to}");
            }
        }
    }
    for (tone, members) in &classes {
        if members.is_empty() {
            continue;
        }
        let (fill, border) = colours(*tone);
        let _ = writeln!(
            out,
            "  classDef {} fill:{fill},stroke:{border}",
            tone.class()
        );
        let _ = writeln!(out, "  class {} {}", members.join(","), tone.class());
    }
    out
}

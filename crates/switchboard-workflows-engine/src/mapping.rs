//! Evaluating mappings, and finding a node by its path.

use serde_json::{Map, Value};
use switchboard_workflows::{Block, Definition, EvaluationError, Mapping, Node, NodeKind, Scope};

/// The value of `mapping` in `scope`: literals as they are, expressions evaluated.
pub(crate) fn evaluate(mapping: &Mapping, scope: &Scope) -> Result<Value, EvaluationError> {
    Ok(match mapping {
        Mapping::Literal(value) => value.clone(),
        Mapping::Expression(expression) => expression.evaluate(scope)?,
        Mapping::Object(fields) => {
            let mut object = Map::with_capacity(fields.len());
            for (name, field) in fields {
                object.insert(name.clone(), evaluate(field, scope)?);
            }
            Value::Object(object)
        }
        Mapping::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| evaluate(item, scope))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// The node at `path` (`fan_out/notify`, `branches/left/send`, `outer/inner[2]/send`) in
/// `definition`, if any.
pub(crate) fn find_node<'d>(definition: &'d Definition, path: &str) -> Option<&'d Node> {
    nodes_on(definition, path).pop()
}

/// Whether the node at `path` runs inside a `foreach` block: then a `foreach` it is names its
/// own items' steps under `path[iteration]`, so that the items of each outer item have steps
/// of their own.
pub(crate) fn inside_foreach(definition: &Definition, path: &str) -> bool {
    let nodes = nodes_on(definition, path);
    let enclosing = nodes.len().saturating_sub(1);
    nodes[..enclosing]
        .iter()
        .any(|node| matches!(node.kind, NodeKind::Foreach { .. }))
}

/// The nodes from the top block down to the one at `path`, as far as they are found.
fn nodes_on<'d>(definition: &'d Definition, path: &str) -> Vec<&'d Node> {
    let mut nodes = Vec::new();
    let mut block: &Block = &definition.body;
    let mut segments = path.split('/');
    loop {
        let Some(segment) = segments.next() else {
            return nodes;
        };
        // `inner[2]`: the node `inner`, run for the outer item 2.
        let id = segment.split('[').next().unwrap_or(segment);
        let Some(node) = block.nodes.iter().find(|node| node.id.as_str() == id) else {
            return Vec::new();
        };
        nodes.push(node);
        let Some(next) = segments.clone().next() else {
            return nodes;
        };
        block = match &node.kind {
            NodeKind::Foreach { body, .. } => body,
            NodeKind::Parallel { branches, .. } => {
                segments.next();
                match branches.iter().find(|(name, _)| &**name == next) {
                    Some((_, block)) => block,
                    None => return Vec::new(),
                }
            }
            _ => return Vec::new(),
        };
    }
}

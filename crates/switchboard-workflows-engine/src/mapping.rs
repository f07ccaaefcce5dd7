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

/// The node at `path` (`fan_out/notify`, `branches/left/send`) in `definition`, if any.
pub(crate) fn find_node<'d>(definition: &'d Definition, path: &str) -> Option<&'d Node> {
    let mut block: &Block = &definition.body;
    let mut segments = path.split('/');
    loop {
        let id = segments.next()?;
        let node = block.nodes.iter().find(|node| node.id.as_str() == id)?;
        let Some(next) = segments.clone().next() else {
            return Some(node);
        };
        block = match &node.kind {
            NodeKind::Foreach { body, .. } => body,
            NodeKind::Parallel { branches, .. } => {
                segments.next();
                &branches.iter().find(|(name, _)| &**name == next)?.1
            }
            _ => return None,
        };
    }
}

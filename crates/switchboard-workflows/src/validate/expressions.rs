//! The checks of expressions and mappings: they parse, and read only what is in their scope.
//!
//! CEL reports a macro's own variable (the `d` of `list.map(d, …)`) among an expression's
//! references, so the names macros bind are found in the source and allowed; `steps.X` is
//! checked against the node ids the expression can see.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Validator, VisibleScope, join, suggestion};
use crate::definition::Mapping;
use crate::expression::Expression;

impl Validator<'_> {
    /// Parses an always-expression field (bare CEL, or wrapped in `${ }`).
    pub(super) fn expression(
        &mut self,
        source: &str,
        path: &str,
        scope: &VisibleScope<'_>,
    ) -> Option<Expression> {
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
    pub(super) fn check_references(
        &mut self,
        expression: &Expression,
        path: &str,
        scope: &VisibleScope<'_>,
    ) {
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
            if scope.not_before.contains(step) && !scope.steps.contains_key(step) {
                self.error(
                    path,
                    format!(
                        "`steps.{step}` cannot have run yet here: no path runs the node `{step}` \
                         before this one"
                    ),
                );
            } else if !scope.steps.contains_key(step) {
                let hint = suggestion(step, scope.steps.keys().map(String::as_str));
                self.error(
                    path,
                    format!("`steps.{step}` names no node this expression can see{hint}"),
                );
            }
        }
    }

    /// A JSON value whose wholly-`${ }` strings are expressions.
    pub(super) fn mapping(
        &mut self,
        value: &Value,
        path: &str,
        scope: &VisibleScope<'_>,
    ) -> Option<Mapping> {
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
}

/// The CEL inside a string that is wholly `${ … }`.
pub(crate) fn unwrap_expression(text: &str) -> Option<&str> {
    let inner = text.trim().strip_prefix("${")?.strip_suffix('}')?;
    Some(inner.trim())
}

/// The variables CEL's macros bind in `source`: the `d` of `list.map(d, …)`.
pub(super) fn macro_variables(source: &str) -> Vec<String> {
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
pub(super) fn step_references(source: &str) -> Vec<&str> {
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
}

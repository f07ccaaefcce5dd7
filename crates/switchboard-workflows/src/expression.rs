//! Expressions in CEL, the Common Expression Language, through the `cel` crate.
//!
//! Why CEL rather than jq: a workflow's expressions are conditions and field picks
//! (`steps.read_a.output.assignee != null`, `input.days.map(d, d.shift_id)`), which CEL writes
//! the way people write them in the languages they know, and CEL is not Turing-complete: every
//! expression terminates, in time bounded by its size and its data. A jq filter can recurse
//! for ever (`def f: f; f`), and a run that cannot loop for ever must not hold an expression
//! that can. CEL is also what Kubernetes and Envoy embed for the same job, so its semantics are
//! specified and familiar.
//!
//! An expression is compiled once, when its definition is validated, and evaluated against a
//! [`Scope`] of JSON values. A failure at run time (a missing field, a wrong type) is an
//! [`EvaluationError`] carrying the expression and the values it saw, never a panic.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// A compiled CEL expression and its source.
#[derive(Clone)]
pub struct Expression {
    source: Arc<str>,
    program: Arc<cel::Program>,
    variables: Arc<[Arc<str>]>,
}

impl Expression {
    /// Compiles `source`; the error says where it stops parsing.
    pub fn parse(source: &str) -> Result<Self, ExpressionError> {
        let program = cel::Program::compile(source).map_err(|errors| ExpressionError {
            expression: source.to_owned(),
            reason: errors.to_string(),
        })?;
        let variables = program
            .references()
            .variables()
            .into_iter()
            .map(Arc::from)
            .collect();
        Ok(Self {
            source: source.into(),
            program: Arc::new(program),
            variables,
        })
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The top-level names it references (`input`, `steps`, …), for validation to check
    /// against what the node's scope holds. A macro's own variable (the `d` of
    /// `list.map(d, d * 2)`) is among them.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.variables.iter().map(|name| &**name)
    }

    /// Evaluates it against `scope`, as JSON.
    pub fn evaluate(&self, scope: &Scope) -> Result<Value, EvaluationError> {
        let failed = |reason: String| EvaluationError {
            expression: self.source.to_string(),
            reason,
            scope: scope.seen_by(self),
        };
        let mut context = cel::Context::default();
        let read = self
            .variables()
            .filter_map(|name| Some((name, scope.variables.get(name)?)));
        for (name, value) in read {
            context.add_variable_from_value(name, cel_value(value));
        }
        let value = self
            .program
            .execute(&context)
            .map_err(|error| failed(error.to_string()))?;
        value
            .json()
            .map_err(|error| failed(format!("its value has no JSON form: {error}")))
    }

    /// Evaluates it and requires a boolean (a condition's `when`).
    pub fn evaluate_bool(&self, scope: &Scope) -> Result<bool, EvaluationError> {
        match self.evaluate(scope)? {
            Value::Bool(holds) => Ok(holds),
            other => Err(EvaluationError {
                expression: self.source.to_string(),
                reason: format!("a condition must be true or false, and this one is {other}"),
                scope: scope.seen_by(self),
            }),
        }
    }
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Expression").field(&self.source).finish()
    }
}

impl fmt::Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// The values an expression can read, by top-level name: `input` (the run's input), `steps`
/// (each completed node's `{ params, output }` by id), `run` (its id and workflow), and in
/// a `foreach` block the item and `index`.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    variables: Map<String, Value>,
}

impl Scope {
    /// An empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the variable `name`.
    pub fn set(&mut self, name: impl Into<String>, value: Value) -> &mut Self {
        self.variables.insert(name.into(), value);
        self
    }

    /// The variable `name`, if set.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.variables.get(name)
    }

    /// The variable `name`, to change in place, if set (the engine adds each completed step
    /// to `steps` without copying the others).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        self.variables.get_mut(name)
    }

    /// The variables `expression` reads, as one object: what an error shows it saw.
    fn seen_by(&self, expression: &Expression) -> Value {
        Value::Object(
            expression
                .variables()
                .filter_map(|name| {
                    let value = self.variables.get(name)?.clone();
                    Some((name.to_owned(), value))
                })
                .collect(),
        )
    }
}

/// A JSON value as CEL sees it. A JSON integer is a CEL `int` (signed) whenever it fits one,
/// as it does in CEL's own JSON mapping: serde would make a positive one a `uint`, and CEL
/// refuses arithmetic that mixes the two, so `input.count * 2` would fail on every count.
fn cel_value(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(flag) => cel::Value::Bool(*flag),
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(int), _) => cel::Value::Int(int),
            (None, Some(uint)) => cel::Value::UInt(uint),
            (None, None) => cel::Value::Float(number.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(text) => cel::Value::String(Arc::new(text.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(cel_value).collect())),
        Value::Object(fields) => cel::Value::Map(cel::objects::Map::from(
            fields
                .iter()
                .map(|(name, field)| (name.clone(), cel_value(field)))
                .collect::<std::collections::HashMap<_, _>>(),
        )),
    }
}

/// An expression that does not parse (refused at validation).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the expression `{expression}` does not parse: {reason}")]
pub struct ExpressionError {
    /// The expression as written.
    pub expression: String,
    /// What the parser said.
    pub reason: String,
}

/// An expression that failed at run time: it fails its node, never the engine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the expression `{expression}` failed: {reason} (it saw {scope})")]
pub struct EvaluationError {
    /// The expression as written.
    pub expression: String,
    /// What went wrong (a missing field, a wrong type).
    pub reason: String,
    /// The variables it read, with their values.
    pub scope: Value,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scope() -> Scope {
        let mut scope = Scope::new();
        scope
            .set("input", json!({"shift_a": "acme-am", "days": [1, 2, 3]}))
            .set("steps", json!({"read_a": {"output": {"assignee": "ana"}}}));
        scope
    }

    #[test]
    fn picks_fields_and_builds_values_as_json() {
        let pick = Expression::parse("steps.read_a.output.assignee").expect("parses");
        assert_eq!(pick.evaluate(&scope()).expect("evaluates"), json!("ana"));
        let list = Expression::parse("input.days.map(d, d * 2)").expect("parses");
        assert_eq!(
            list.evaluate(&scope()).expect("evaluates"),
            json!([2, 4, 6])
        );
        let mut variables: Vec<&str> = list.variables().collect();
        variables.sort_unstable();
        assert_eq!(
            variables,
            ["d", "input"],
            "a macro's own variable is a reference too"
        );
    }

    #[test]
    fn a_condition_must_be_a_boolean() {
        let holds = Expression::parse("size(input.days) > 2").expect("parses");
        assert!(holds.evaluate_bool(&scope()).expect("evaluates"));
        let not_bool = Expression::parse("input.shift_a").expect("parses");
        let error = not_bool.evaluate_bool(&scope()).expect_err("a string");
        assert!(error.reason.contains("true or false"), "{error}");
    }

    #[test]
    fn a_missing_field_is_an_error_naming_the_expression_and_what_it_saw() {
        let missing = Expression::parse("steps.read_b.output").expect("parses");
        let error = missing.evaluate(&scope()).expect_err("no read_b");
        assert_eq!(error.expression, "steps.read_b.output");
        assert_eq!(
            error.scope,
            json!({"steps": {"read_a": {"output": {"assignee": "ana"}}}})
        );
    }

    #[test]
    fn a_syntax_error_is_refused_at_parse() {
        let error = Expression::parse("input.(").expect_err("bad syntax");
        assert_eq!(error.expression, "input.(");
    }
}

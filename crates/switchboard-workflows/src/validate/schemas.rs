//! Mappings checked against JSON Schemas, as far as a schema allows: required and unknown
//! fields, the JSON type of literals, and the type of simple path expressions (`input.a.b`
//! from the workflow's input schema, `steps.x.output.f` from the tool's output schema).

use serde_json::Value;

use super::expressions::unwrap_expression;
use super::{Validator, VisibleScope, is_identifier, join, suggestion};

impl Validator<'_> {
    /// Checks a mapping against a JSON Schema: required and unknown fields, and the types of
    /// literals and of simple path expressions.
    pub(super) fn check_against_schema(
        &mut self,
        value: &Value,
        schema: &Value,
        root: &Value,
        path: &str,
        scope: &VisibleScope<'_>,
    ) {
        let schema = resolve(schema, root);
        let expected = schema_types(schema);
        let actual: Option<Vec<&'static str>> = match value {
            Value::String(text) => match unwrap_expression(text) {
                Some(source) => match known_type(source.trim(), scope) {
                    Some(types) => Some(types),
                    None => return,
                },
                None => Some(vec!["string"]),
            },
            other => Some(vec![json_type(other)]),
        };
        if let (Some(expected), Some(actual)) = (&expected, &actual)
            && !actual.iter().any(|actual| type_fits(actual, expected))
        {
            let what = if value.as_str().and_then(unwrap_expression).is_some() {
                format!("the expression gives {}", actual.join(" or "))
            } else {
                format!("the value is {}", actual.join(" or "))
            };
            self.error(
                path,
                format!("{what}, but the schema expects {}", expected.join(" or ")),
            );
            return;
        }
        let (Value::Object(fields), Some(properties)) =
            (value, schema.get("properties").and_then(Value::as_object))
        else {
            if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
                for (index, item) in items.iter().enumerate() {
                    self.check_against_schema(
                        item,
                        item_schema,
                        root,
                        &format!("{path}[{index}]"),
                        scope,
                    );
                }
            }
            return;
        };
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !fields.contains_key(required) {
                self.error(path, format!("the required field `{required}` is missing"));
            }
        }
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (name, field) in fields {
            match properties.get(name) {
                Some(field_schema) => {
                    self.check_against_schema(field, field_schema, root, &join(path, name), scope);
                }
                None if closed => {
                    let hint = suggestion(name, properties.keys().map(String::as_str));
                    self.error(
                        join(path, name),
                        format!("the field `{name}` is not in the schema{hint}"),
                    );
                }
                None => {}
            }
        }
    }
}

/// The JSON types an expression gives, when it is a simple path whose schema is known:
/// `input.a.b` from the workflow's input schema, `steps.x.output.f` from the tool's output
/// schema.
pub(super) fn known_type(source: &str, scope: &VisibleScope<'_>) -> Option<Vec<&'static str>> {
    let segments: Vec<&str> = source.split('.').collect();
    if segments.iter().any(|segment| {
        !is_identifier(segment)
            && !segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
    }) || segments.iter().any(|segment| segment.is_empty())
    {
        return None;
    }
    let (root, fields) = match segments.as_slice() {
        ["input", fields @ ..] => (scope.input_schema?, fields),
        ["steps", step, "output", fields @ ..] => (scope.steps.get(*step)?.as_ref()?, fields),
        _ => return None,
    };
    let mut schema = root;
    for field in fields {
        schema = resolve(schema, root).get("properties")?.get(*field)?;
    }
    schema_types(resolve(schema, root))
}

/// Follows a local `$ref` (`#/$defs/X`, `#/definitions/X`).
pub(super) fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut schema = schema;
    for _ in 0..8 {
        let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
            break;
        };
        match reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
        {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// The JSON types a schema allows, when it says.
pub(super) fn schema_types(schema: &Value) -> Option<Vec<&'static str>> {
    const TYPES: [&str; 7] = [
        "null", "boolean", "object", "array", "number", "string", "integer",
    ];
    let known = |name: &str| TYPES.iter().copied().find(|known| *known == name);
    match schema.get("type")? {
        Value::String(name) => Some(vec![known(name)?]),
        Value::Array(names) => names
            .iter()
            .map(|name| name.as_str().and_then(known))
            .collect(),
        _ => None,
    }
}

pub(super) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(super) fn type_fits(actual: &str, expected: &[&str]) -> bool {
    expected.contains(&actual) || (actual == "integer" && expected.contains(&"number"))
}

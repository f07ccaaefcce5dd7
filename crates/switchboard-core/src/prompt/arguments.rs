//! A prompt's MCP argument list, derived from the JSON Schema of its arguments' type.
//!
//! MCP prompt arguments are strings on the wire (`prompts/get` takes a map of string to
//! string), so every top-level property of the arguments' type must describe a string: a
//! `String`, a type that deserializes from one and says so in its schema (a date such as
//! `jiff::civil::Date`, an id), an enum of unit variants, or an `Option` of any of these (an
//! optional argument). A number, a boolean, an object or an array cannot arrive as a prompt
//! argument, so such a property is refused when the registry starts, with the property named.
//! An enum's values are kept: they complete by themselves (`completion/complete`).

use serde_json::{Map, Value};

use super::PromptArgument;

/// The arguments a prompt whose arguments' type has the JSON Schema `schema` takes, sorted by
/// name; why not, when a property is not a string or the schema
/// does not describe an object.
pub(crate) fn from_schema(schema: &Value) -> Result<Vec<PromptArgument>, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(
            "the arguments' type must be a struct (its schema must describe a JSON object)"
                .to_owned(),
        );
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    properties
        .iter()
        .map(|(name, property)| {
            let values = string_values(schema, property, 0).map_err(|found| {
                format!(
                    "the argument `{name}` is {found}; prompt arguments are strings on the wire, \
                     so each must be a `String`, a type that deserializes from a string (a date, \
                     an id), an enum of unit variants, or an `Option` of one of these"
                )
            })?;
            let mut values = values;
            values.sort();
            values.dedup();
            Ok(PromptArgument {
                name: name.clone(),
                description: description(schema, property),
                required: required.contains(&name.as_str()),
                values,
            })
        })
        .collect()
}

/// How deep `$ref`s and wrappers are followed before a schema is called too complex.
const MAX_DEPTH: usize = 8;

/// The enum values of a schema that describes a string (empty for any string), or what it
/// describes instead.
fn string_values(root: &Value, schema: &Value, depth: usize) -> Result<Vec<String>, String> {
    if depth > MAX_DEPTH {
        return Err("a schema nested too deeply to read".to_owned());
    }
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        let resolved = resolve(root, target)
            .ok_or_else(|| format!("a reference `{target}` the schema does not define"))?;
        return string_values(root, resolved, depth + 1);
    }
    if let Some(value) = schema.get("const") {
        return match value {
            Value::String(text) => Ok(vec![text.clone()]),
            other => Err(format!("the constant `{other}`")),
        };
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let mut strings = Vec::with_capacity(values.len());
        for value in values {
            match value {
                Value::String(text) => strings.push(text.clone()),
                Value::Null => {}
                other => return Err(format!("an enum with the value `{other}`")),
            }
        }
        return Ok(strings);
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        let Some(branches) = schema.get(keyword).and_then(Value::as_array) else {
            continue;
        };
        // `null` branches are what makes an argument optional; it is absent on the wire.
        let typed: Vec<&Value> = branches.iter().filter(|branch| !is_null(branch)).collect();
        let mut values = Vec::new();
        for branch in typed {
            values.extend(string_values(root, branch, depth + 1)?);
        }
        return Ok(values);
    }
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "string" => Ok(Vec::new()),
        Some(Value::Array(kinds))
            if kinds.iter().any(|kind| kind == "string")
                && kinds.iter().all(|kind| kind == "string" || kind == "null") =>
        {
            Ok(Vec::new())
        }
        Some(Value::String(kind)) => Err(format!("of JSON type `{kind}`")),
        Some(other) => Err(format!("of JSON types {other}")),
        None => Err("of no declared type".to_owned()),
    }
}

fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
}

/// The schema `#/$defs/Name` (or `#/definitions/Name`) points to in `root`.
fn resolve<'a>(root: &'a Value, target: &str) -> Option<&'a Value> {
    let pointer = target.strip_prefix('#')?;
    root.pointer(pointer)
}

/// A property's description, or the one of the type it refers to.
fn description(root: &Value, property: &Value) -> Option<String> {
    if let Some(text) = property.get("description").and_then(Value::as_str) {
        return Some(text.to_owned());
    }
    let target = property.get("$ref").and_then(Value::as_str).or_else(|| {
        ["anyOf", "oneOf", "allOf"].iter().find_map(|keyword| {
            property
                .get(*keyword)?
                .as_array()?
                .iter()
                .find_map(|branch| branch.get("$ref").and_then(Value::as_str))
        })
    })?;
    resolve(root, target)?
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;
    use crate::schema::schema_of;

    /// A team.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code, reason = "only the schema is read")]
    enum Team {
        /// The morning crew.
        Early,
        Late,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code, reason = "only the schema is read")]
    struct Args {
        /// The first day.
        week_start: jiff::civil::Date,
        /// Whose shifts.
        team: Option<Team>,
        note: Option<String>,
        kind: Team,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code, reason = "only the schema is read")]
    struct Numbers {
        name: String,
        count: u32,
    }

    fn arguments<T: JsonSchema>() -> Result<Vec<PromptArgument>, String> {
        from_schema(&schema_of::<T>().to_value())
    }

    #[test]
    fn strings_dates_enums_and_options_are_arguments() {
        let derived = arguments::<Args>().expect("every property is a string");
        let summary: Vec<_> = derived
            .iter()
            .map(|argument| {
                (
                    argument.name.as_str(),
                    argument.required,
                    argument.values.clone(),
                    argument.description.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "kind",
                    true,
                    vec!["early".to_owned(), "late".to_owned()],
                    Some("A team.".to_owned())
                ),
                ("note", false, vec![], None),
                (
                    "team",
                    false,
                    vec!["early".to_owned(), "late".to_owned()],
                    Some("Whose shifts.".to_owned())
                ),
                (
                    "week_start",
                    true,
                    vec![],
                    Some("The first day.".to_owned())
                ),
            ]
        );
    }

    #[test]
    fn a_number_is_refused_with_its_name() {
        let refused = arguments::<Numbers>().expect_err("a u32 is not a string");
        assert!(
            refused.contains("`count`") && refused.contains("`integer`"),
            "{refused}"
        );
    }

    #[test]
    fn a_type_that_is_no_struct_is_refused() {
        let refused = arguments::<String>().expect_err("a string is not an object");
        assert!(refused.contains("struct"), "{refused}");
    }

    #[test]
    fn no_arguments_is_an_empty_list() {
        assert_eq!(arguments::<crate::NoInput>(), Ok(Vec::new()));
    }
}

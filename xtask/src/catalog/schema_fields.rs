//! Turns a tool's JSON Schema into the rows of a field table a person can read.
//!
//! Only what schemars emits for our inputs and outputs is handled in detail: an object with
//! `properties` and `required`, scalar types with `format` and bound keywords, arrays,
//! `T | null`, enums (`enum`, or `oneOf` of `const`s with descriptions) and `$ref`s into
//! `$defs`. Anything else is still shown, as its type names, never silently dropped.
//!
//! A `$ref` is resolved one level at a time: an object type is named in the row and described
//! in a table of its own, an enum is named and its values listed, and any other definition is
//! inlined into the row that refers to it. Every definition is described once, in the order
//! it is first met.

use serde_json::{Map, Value};

/// A whole schema, described for the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SchemaDoc {
    /// What the top-level value is.
    pub(super) body: Body,
    /// The named types the fields refer to, in the order they are first met.
    pub(super) named_types: Vec<NamedType>,
}

/// The top-level value of a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Body {
    /// An object that accepts no properties (`NoInput`): pass `{}`.
    NoFields,
    /// An object with properties.
    Fields(Vec<FieldRow>),
    /// Anything else.
    Value(TypeSummary),
}

/// One property of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FieldRow {
    /// The property name.
    pub(super) name: String,
    /// Whether the object's `required` lists it.
    pub(super) required: bool,
    /// Its type and constraints.
    pub(super) summary: TypeSummary,
}

/// A type as a person reads it: `string or null`, with `maxLength: 64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TypeSummary {
    /// Type names, for example `string`, `array of Shift`, `integer or null`.
    pub(super) type_text: String,
    /// Constraint keywords, for example `minLength: 1`, `format: date`.
    pub(super) constraints: Vec<String>,
    /// The schema's `description`, if any.
    pub(super) description: Option<String>,
}

/// A type defined under `$defs` and described on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NamedType {
    /// The key under `$defs`.
    pub(super) name: String,
    /// The definition's `description`.
    pub(super) description: Option<String>,
    /// Its fields or values.
    pub(super) shape: NamedShape,
}

/// What a named type consists of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum NamedShape {
    /// An object's properties.
    Fields(Vec<FieldRow>),
    /// An enum's values, each with its description.
    Values(Vec<(String, Option<String>)>),
}

/// Describes `root`, a schema with its `$defs`.
pub(super) fn describe(root: &Value) -> SchemaDoc {
    let mut walker = Walker {
        defs: root.get("$defs").and_then(Value::as_object),
        referenced: Vec::new(),
    };
    let body = if root.get("properties").is_some() {
        Body::Fields(walker.fields(root))
    } else if is_type(root, "object")
        && root.get("additionalProperties") == Some(&Value::Bool(false))
    {
        Body::NoFields
    } else {
        Body::Value(walker.summarize(root))
    };
    let mut named_types = Vec::new();
    let mut next = 0;
    // Describing a definition can reference further definitions; `referenced` grows while
    // this loop runs and never holds a name twice, so recursive types terminate.
    while let Some(name) = walker.referenced.get(next).cloned() {
        next += 1;
        let Some(definition) = walker.definition(&name) else {
            continue;
        };
        let description = text(definition, "description");
        let shape = if let Some(values) = enum_values(definition) {
            NamedShape::Values(values)
        } else {
            NamedShape::Fields(walker.fields(definition))
        };
        named_types.push(NamedType {
            name,
            description,
            shape,
        });
    }
    SchemaDoc { body, named_types }
}

struct Walker<'schema> {
    defs: Option<&'schema Map<String, Value>>,
    referenced: Vec<String>,
}

impl<'schema> Walker<'schema> {
    fn definition(&self, name: &str) -> Option<&'schema Value> {
        self.defs.and_then(|defs| defs.get(name))
    }

    /// The rows of an object schema: required properties in `required` order (their
    /// declaration order), then optional ones alphabetically.
    fn fields(&mut self, object: &Value) -> Vec<FieldRow> {
        let Some(properties) = object.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut optional: Vec<&str> = properties
            .keys()
            .map(String::as_str)
            .filter(|name| !required.contains(name))
            .collect();
        optional.sort_unstable();
        let ordered = required
            .iter()
            .filter(|name| properties.contains_key(**name))
            .map(|name| (*name, true))
            .chain(optional.into_iter().map(|name| (name, false)));
        ordered
            .filter_map(|(name, is_required)| {
                let property = properties.get(name)?;
                Some(FieldRow {
                    name: name.to_owned(),
                    required: is_required,
                    summary: self.summarize(property),
                })
            })
            .collect()
    }

    fn summarize(&mut self, schema: &Value) -> TypeSummary {
        let description = text(schema, "description");
        if let Some(name) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(def_name)
        {
            return self.summarize_reference(name, description);
        }
        if let Some(values) = enum_values(schema) {
            let type_text = type_names(schema).unwrap_or_else(|| "string".to_owned());
            return TypeSummary {
                type_text,
                constraints: vec![one_of(&values)],
                description,
            };
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(alternatives) = schema.get(keyword).and_then(Value::as_array) {
                return self.summarize_alternatives(alternatives, description);
            }
        }
        let mut constraints = constraints(schema);
        let type_text = match type_names(schema) {
            Some(names) => self.expand_containers(schema, names, &mut constraints),
            None => "any".to_owned(),
        };
        TypeSummary {
            type_text,
            constraints,
            description,
        }
    }

    /// `$ref` into `$defs`: name objects and enums (described later), inline anything else.
    fn summarize_reference(&mut self, name: &str, description: Option<String>) -> TypeSummary {
        let Some(definition) = self.definition(name) else {
            return TypeSummary {
                type_text: format!("`{name}`"),
                constraints: Vec::new(),
                description,
            };
        };
        let named = definition.get("properties").is_some() || enum_values(definition).is_some();
        if !named {
            let mut inlined = self.summarize(definition);
            inlined.description = description.or(inlined.description);
            return inlined;
        }
        if !self.referenced.iter().any(|seen| seen == name) {
            self.referenced.push(name.to_owned());
        }
        let constraints = enum_values(definition)
            .map(|values| vec![one_of(&values)])
            .unwrap_or_default();
        TypeSummary {
            type_text: format!("`{name}`"),
            constraints,
            description: description.or_else(|| text(definition, "description")),
        }
    }

    /// `anyOf`/`oneOf`: `T | null` reads "T or null"; other unions list their types.
    fn summarize_alternatives(
        &mut self,
        alternatives: &[Value],
        description: Option<String>,
    ) -> TypeSummary {
        let (nulls, others): (Vec<&Value>, Vec<&Value>) =
            alternatives.iter().partition(|alternative| {
                is_type(alternative, "null")
                    && alternative.get("type").is_some_and(Value::is_string)
            });
        let mut summaries: Vec<TypeSummary> = others
            .into_iter()
            .map(|other| self.summarize(other))
            .collect();
        let mut type_text = summaries
            .iter()
            .map(|summary| summary.type_text.as_str())
            .collect::<Vec<_>>()
            .join(" or ");
        if !nulls.is_empty() {
            type_text.push_str(" or null");
        }
        // A single non-null alternative keeps its constraints and description; a real
        // union has no one set of constraints to show.
        let (constraints, inner_description) = match summaries.pop() {
            Some(only) if summaries.is_empty() => (only.constraints, only.description),
            _ => (Vec::new(), None),
        };
        TypeSummary {
            type_text,
            constraints,
            description: description.or(inner_description),
        }
    }

    /// `array` becomes "array of T" and a map-like `object` "map of T"; the element's own
    /// constraints are kept, marked "each item".
    fn expand_containers(
        &mut self,
        schema: &Value,
        names: String,
        constraints: &mut Vec<String>,
    ) -> String {
        let element = if names.starts_with("array") {
            schema.get("items").map(|items| ("array", items))
        } else if names.starts_with("object") {
            schema
                .get("additionalProperties")
                .filter(|values| values.is_object())
                .map(|values| ("map", values))
        } else {
            None
        };
        let Some((container, element)) = element else {
            return names;
        };
        let element = self.summarize(element);
        constraints.extend(
            element
                .constraints
                .iter()
                .map(|constraint| format!("each item {constraint}")),
        );
        let rest = names
            .split_once(" or ")
            .map(|(_, rest)| format!(" or {rest}"))
            .unwrap_or_default();
        format!("{container} of {}{rest}", element.type_text)
    }
}

/// `#/$defs/Shift` → `Shift`.
fn def_name(reference: &str) -> Option<&str> {
    reference.strip_prefix("#/$defs/")
}

fn text(schema: &Value, key: &str) -> Option<String> {
    schema.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn is_type(schema: &Value, name: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(type_name)) => type_name == name,
        Some(Value::Array(type_names)) => type_names.iter().any(|t| t.as_str() == Some(name)),
        _ => false,
    }
}

/// `"string"` → `string`; `["string", "null"]` → `string or null` (null always last).
fn type_names(schema: &Value) -> Option<String> {
    let mut names: Vec<&str> = match schema.get("type")? {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    names.sort_by_key(|name| *name == "null");
    Some(names.join(" or "))
}

/// The values of an enum, written `enum: [...]` or `oneOf: [{const, description}, ...]`.
fn enum_values(schema: &Value) -> Option<Vec<(String, Option<String>)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.iter().map(|value| (literal(value), None)).collect());
    }
    let alternatives = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    alternatives
        .iter()
        .map(|alternative| {
            let value = alternative.get("const")?;
            Some((literal(value), text(alternative, "description")))
        })
        .collect()
}

fn one_of(values: &[(String, Option<String>)]) -> String {
    let values: Vec<String> = values
        .iter()
        .map(|(value, _)| format!("`{value}`"))
        .collect();
    format!("one of {}", values.join(", "))
}

/// A JSON value as it would be typed: strings without quotes, anything else as JSON.
fn literal(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The validation keywords of one schema, in a fixed order.
fn constraints(schema: &Value) -> Vec<String> {
    const KEYWORDS: [&str; 15] = [
        "format",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "exclusiveMinimum",
        "maximum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "default",
    ];
    let mut found: Vec<String> = KEYWORDS
        .iter()
        .filter_map(|keyword| {
            let value = schema.get(*keyword)?;
            Some(match value {
                Value::String(text) if *keyword == "format" => format!("format: {text}"),
                other => format!("{keyword}: `{}`", literal(other)),
            })
        })
        .collect();
    if let Some(value) = schema.get("const") {
        found.push(format!("always `{}`", literal(value)));
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summary(type_text: &str, constraints: &[&str], description: Option<&str>) -> TypeSummary {
        TypeSummary {
            type_text: type_text.to_owned(),
            constraints: constraints.iter().map(|c| (*c).to_owned()).collect(),
            description: description.map(str::to_owned),
        }
    }

    #[test]
    fn orders_required_fields_first_and_reads_constraints() {
        let schema = json!({
            "type": "object",
            "properties": {
                "b_optional": {"type": ["string", "null"], "maxLength": 500},
                "a_optional": {"type": "integer", "minimum": 0, "format": "uint"},
                "to": {"type": "string", "format": "date", "description": "Last day."},
                "from": {"type": "string", "format": "date"}
            },
            "required": ["from", "to"]
        });
        let Body::Fields(rows) = describe(&schema).body else {
            panic!("an object with properties has fields");
        };
        let names: Vec<(&str, bool)> = rows.iter().map(|r| (r.name.as_str(), r.required)).collect();
        assert_eq!(
            names,
            [
                ("from", true),
                ("to", true),
                ("a_optional", false),
                ("b_optional", false)
            ]
        );
        assert_eq!(
            rows[1].summary,
            summary("string", &["format: date"], Some("Last day."))
        );
        assert_eq!(
            rows[2].summary,
            summary("integer", &["format: uint", "minimum: `0`"], None)
        );
        assert_eq!(
            rows[3].summary,
            summary("string or null", &["maxLength: `500`"], None)
        );
    }

    #[test]
    fn names_objects_and_enums_and_inlines_other_definitions() {
        let schema = json!({
            "type": "object",
            "properties": {
                "shift": {"$ref": "#/$defs/Shift", "description": "The shift."},
                "shifts": {"type": "array", "items": {"$ref": "#/$defs/Shift"}},
                "status": {"$ref": "#/$defs/Status"},
                "day": {"$ref": "#/$defs/Day"},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Shift"}, {"type": "null"}]}
            },
            "required": ["shift", "shifts", "status", "day"],
            "$defs": {
                "Shift": {
                    "type": "object",
                    "description": "One shift.",
                    "properties": {"next": {"$ref": "#/$defs/Shift"}, "id": {"type": "string"}},
                    "required": ["id"]
                },
                "Status": {
                    "description": "Where it stands.",
                    "oneOf": [{"const": "proposed", "type": "string", "description": "Not applied."}]
                },
                "Day": {"type": "string", "format": "date", "description": "A day."}
            }
        });
        let doc = describe(&schema);
        let Body::Fields(rows) = &doc.body else {
            panic!("an object with properties has fields");
        };
        let types: Vec<&str> = rows.iter().map(|r| r.summary.type_text.as_str()).collect();
        assert_eq!(
            types,
            [
                "`Shift`",
                "array of `Shift`",
                "`Status`",
                "string",
                "`Shift` or null"
            ]
        );
        assert_eq!(rows[0].summary.description.as_deref(), Some("The shift."));
        assert_eq!(rows[2].summary.constraints, ["one of `proposed`"]);
        assert_eq!(
            rows[3].summary,
            summary("string", &["format: date"], Some("A day."))
        );

        let named: Vec<&str> = doc.named_types.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            named,
            ["Shift", "Status"],
            "each definition once, recursion included"
        );
        assert_eq!(
            doc.named_types[1].shape,
            NamedShape::Values(vec![(
                "proposed".to_owned(),
                Some("Not applied.".to_owned())
            )])
        );
    }

    #[test]
    fn an_object_without_properties_takes_no_fields() {
        let schema = json!({"type": "object", "additionalProperties": false, "title": "NoInput"});
        assert_eq!(describe(&schema).body, Body::NoFields);
    }
}

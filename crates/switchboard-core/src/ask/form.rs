//! The schema of an elicitation form, derived from a Rust type.
//!
//! A client renders an elicitation form from its schema, and the MCP specification allows only
//! what every client can render: a flat object whose properties are strings (optionally with a
//! `format` of `email`, `uri`, `date` or `date-time`), numbers, integers, booleans, single-select
//! enums and multi-select arrays of enums. [`form_schema`] derives the schema of a type with
//! `schemars` (so doc comments become descriptions and `#[serde(default)]` values become
//! `default`s, as SEP-1034 describes), turns what schemars writes for enums into the shapes of
//! SEP-1330, and refuses, naming the property, anything a form cannot hold, so that a tool
//! finds out when it first asks, not from a client that draws nothing.
//!
//! Enums come out as SEP-1330 has them:
//!
//! - a unit-variant enum without doc comments: `{"type": "string", "enum": [...]}`;
//! - one whose variants have doc comments or titles: `{"type": "string", "oneOf": [{"const":
//!   ..., "title": ...}]}`, the title being the variant's title or first doc line;
//! - a `Vec` (or set) of either: `{"type": "array", "items": {"type": "string", "enum": [...]}}`
//!   or `{"type": "array", "items": {"anyOf": [{"const": ..., "title": ...}]}}`.
//!
//! An `Option<T>` field is an optional property of type `T`.

use schemars::{JsonSchema, generate::SchemaSettings, transform::RecursiveTransform};
use serde_json::{Map, Value};

use crate::schema::{self, formats};

/// The `format`s a form's string may carry.
const FORM_FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// Keywords kept on every property.
const ANNOTATIONS: [&str; 3] = ["title", "description", "default"];

/// Why a type cannot be an elicitation form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{type_name}` cannot be an elicitation form: {reason}")]
pub struct FormError {
    /// The Rust type asked for.
    pub type_name: String,
    /// What is wrong, naming the property.
    pub reason: String,
}

/// The elicitation schema of `T`: `{"type": "object", "properties": ..., "required": [...]}`.
pub fn form_schema<T: JsonSchema>() -> Result<Value, FormError> {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let schema = settings
        .with_transform(RecursiveTransform(formats::keep_standard_formats))
        .with_transform(RecursiveTransform(schema::unwrap_description))
        .into_generator()
        .into_root_schema_for::<T>();
    let fail = |reason: String| FormError {
        type_name: T::schema_name().into_owned(),
        reason,
    };
    form_of(schema.as_value()).map_err(fail)
}

/// Checks and reshapes a derived object schema into a form schema.
pub(crate) fn form_of(schema: &Value) -> Result<Value, String> {
    let object = schema
        .as_object()
        .ok_or_else(|| "its schema is not an object schema".to_owned())?;
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err("a form is a struct with named fields".to_owned());
    }
    let properties = object
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| "a form is a struct with named fields".to_owned())?;
    let mut out = Map::new();
    for (name, property) in properties {
        let shaped =
            property_of(property).map_err(|reason| format!("property `{name}`: {reason}"))?;
        out.insert(name.clone(), shaped);
    }
    let mut form = Map::new();
    form.insert("type".to_owned(), Value::from("object"));
    form.insert("properties".to_owned(), Value::Object(out));
    if let Some(required) = object
        .get("required")
        .filter(|required| required.as_array().is_some_and(|list| !list.is_empty()))
    {
        form.insert("required".to_owned(), required.clone());
    }
    Ok(Value::Object(form))
}

/// One property, in the shape a form allows.
fn property_of(property: &Value) -> Result<Value, String> {
    let object = property
        .as_object()
        .ok_or_else(|| "its schema is `true` or `false`, not a field".to_owned())?;
    let mut object = object.clone();
    unwrap_nullable(&mut object);
    let mut out = Map::new();
    for key in ANNOTATIONS {
        if let Some(value) = object.get(key) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    if let Some(choices) = titled_choices(&object)? {
        out.insert("type".to_owned(), Value::from("string"));
        out.insert("oneOf".to_owned(), choices);
        return Ok(Value::Object(out));
    }
    let kind = object
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| "a field must be a string, number, integer, boolean or enum".to_owned())?;
    let allowed: &[&str] = match kind {
        "string" => {
            if let Some(format) = object.get("format").and_then(Value::as_str)
                && !FORM_FORMATS.contains(&format)
            {
                return Err(format!(
                    "a form's string may have the format email, uri, date or date-time, not `{format}`"
                ));
            }
            &["minLength", "maxLength", "format", "enum", "enumNames"]
        }
        "number" | "integer" => &["minimum", "maximum"],
        "boolean" => &[],
        "array" => {
            let items = object
                .get("items")
                .and_then(Value::as_object)
                .ok_or_else(|| "a list must say what its items are".to_owned())?;
            let items = if let Some(choices) = titled_choices(items)? {
                let mut titled = Map::new();
                titled.insert("anyOf".to_owned(), choices);
                titled
            } else if items.get("type").and_then(Value::as_str) == Some("string")
                && items.get("enum").is_some()
            {
                let mut plain = Map::new();
                plain.insert("type".to_owned(), Value::from("string"));
                plain.insert("enum".to_owned(), items["enum"].clone());
                plain
            } else {
                return Err("a list in a form must be a list of enum choices".to_owned());
            };
            out.insert("items".to_owned(), Value::Object(items));
            &["minItems", "maxItems", "uniqueItems"]
        }
        other => {
            return Err(format!(
                "a form's field is a string, number, integer, boolean or list of choices, not `{other}`"
            ));
        }
    };
    out.insert("type".to_owned(), Value::from(kind));
    for key in allowed {
        if let Some(value) = object.get(*key) {
            out.insert((*key).to_owned(), value.clone());
        }
    }
    Ok(Value::Object(out))
}

/// `Option<T>`'s `type: [T, "null"]` or `anyOf: [T, {type: null}]` as plain `T`: in a form, an
/// optional field is one that is not required.
fn unwrap_nullable(object: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = object.get("type") {
        let types: Vec<&Value> = types.iter().filter(|kind| *kind != "null").collect();
        if let [only] = types.as_slice() {
            let only = (*only).clone();
            object.insert("type".to_owned(), only);
        }
    }
    let branch = match object.get("anyOf").and_then(Value::as_array) {
        Some(branches) if branches.len() == 2 => branches
            .iter()
            .find(|branch| branch.get("type").and_then(Value::as_str) != Some("null"))
            .and_then(Value::as_object)
            .cloned(),
        _ => None,
    };
    if let Some(branch) = branch {
        object.remove("anyOf");
        for (key, value) in branch {
            object.entry(key).or_insert(value);
        }
    }
    if let Some(Value::Array(choices)) = object.get_mut("enum") {
        choices.retain(|choice| !choice.is_null());
    }
}

/// A titled single-select: schemars' `oneOf` of `{const, title or description}` per variant,
/// as `[{const, title}]`. `None` when the schema is no such enum.
fn titled_choices(object: &Map<String, Value>) -> Result<Option<Value>, String> {
    let Some(variants) = object
        .get("oneOf")
        .or_else(|| object.get("anyOf"))
        .and_then(Value::as_array)
    else {
        return Ok(None);
    };
    let mut choices = Vec::with_capacity(variants.len());
    for variant in variants {
        let constant = variant
            .get("const")
            .and_then(Value::as_str)
            .or_else(|| {
                variant
                    .get("enum")
                    .and_then(Value::as_array)
                    .filter(|values| values.len() == 1)
                    .and_then(|values| values[0].as_str())
            })
            .ok_or_else(|| "a choice must be a unit enum variant (a fixed string)".to_owned())?;
        let title = variant
            .get("title")
            .or_else(|| variant.get("description"))
            .and_then(Value::as_str)
            .unwrap_or(constant);
        let mut choice = Map::new();
        choice.insert("const".to_owned(), Value::from(constant));
        choice.insert("title".to_owned(), Value::from(first_line(title)));
        choices.push(Value::Object(choice));
    }
    Ok(Some(Value::Array(choices)))
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text).trim()
}

#[cfg(test)]
mod tests;

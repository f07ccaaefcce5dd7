//! Routes: which tool an utterance reaches, with which params, at what cost.
//!
//! [`RouteTable`] joins the intent table with what the registry knows of each tool's input, so
//! that captured text becomes typed JSON (`"3"` becomes `3` where the input wants an integer,
//! `"Low"` becomes `"low"` where it wants one of the strings `"low"` and `"out"`), and so that
//! an intent naming a field the input does not have, or a fixed value (`=> limit=5`) that does
//! not fit its field, is refused at boot, not at the first call.

use std::{collections::BTreeMap, sync::Arc};

use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_core::{BoxFuture, ToolDescriptor};

use crate::{
    error::OrchestratorError,
    intent::{Facts, IntentPattern, IntentTable, NoMatch},
};

/// How an utterance reached a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    /// The tool called.
    pub tool: String,
    /// 1 for a declared intent (pattern match); higher tiers are fallbacks.
    pub tier: u8,
    /// What routing cost, in US dollars: 0 for a pattern match.
    pub cost: f64,
    /// The intent that matched, for tier 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// The params handed to the tool.
    pub params: Value,
}

/// Where a route the intents cannot make would come from (a language model, say). None is
/// configured by default; the orchestrator then answers `no_route`.
pub trait RouteFallback: Send + Sync + 'static {
    /// Picks a tool and params for `utterance` among `tools`, or none.
    fn route<'a>(
        &'a self,
        utterance: &'a str,
        tools: &'a [Arc<ToolDescriptor>],
    ) -> BoxFuture<'a, Option<Route>>;
}

/// The intent table plus the input types needed to turn captures into params.
#[derive(Debug, Default)]
pub(crate) struct RouteTable {
    intents: IntentTable,
    /// Per tool: what routing reads of each input property.
    property_types: BTreeMap<Arc<str>, BTreeMap<String, Property>>,
}

/// What routing reads of one input property: its JSON type and, for a string enum, its values.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Property {
    /// `"integer"`, `"number"`, `"boolean"`, `"string"`, …: the first type that is not null.
    json_type: String,
    /// The values of a string enum, as the schema spells them; empty for any other property.
    choices: Vec<String>,
}

impl RouteTable {
    pub(crate) fn build(tools: &[Arc<ToolDescriptor>]) -> Result<Self, OrchestratorError> {
        let mut property_types = BTreeMap::new();
        let mut routes = Vec::new();
        let mut descriptions = Vec::new();
        for tool in tools {
            let name: Arc<str> = Arc::from(&*tool.name);
            let properties = input_properties(&tool.input_schema);
            if !tool.intents.is_empty() {
                let title = tool.title.as_deref().unwrap_or_default();
                descriptions.push((Arc::clone(&name), format!("{title}. {}", tool.description)));
            }
            for intent in &tool.intents {
                let pattern = IntentPattern::parse(intent).map_err(|reason| {
                    OrchestratorError::InvalidIntent {
                        tool: tool.name.to_string(),
                        intent: intent.to_string(),
                        reason: reason.to_string(),
                    }
                })?;
                if let Some(unknown) = pattern
                    .placeholders()
                    .find(|placeholder| !properties.contains_key(*placeholder))
                {
                    return Err(OrchestratorError::UnknownIntentParam {
                        tool: tool.name.to_string(),
                        intent: intent.to_string(),
                        param: unknown.to_owned(),
                        known: properties.keys().cloned().collect::<Vec<_>>().join(", "),
                    });
                }
                for (param, value) in pattern.fixed_values() {
                    if let Err(reason) = fixed_value(param, value, &properties) {
                        return Err(OrchestratorError::InvalidFixedValue {
                            tool: tool.name.to_string(),
                            intent: intent.to_string(),
                            param: param.to_owned(),
                            value: value.to_owned(),
                            reason,
                        });
                    }
                }
                routes.push((Arc::clone(&name), pattern));
            }
            property_types.insert(name, properties);
        }
        let intents = IntentTable::from_patterns(routes, descriptions)
            .map_err(|error| OrchestratorError::ConflictingIntents(error.to_string()))?;
        Ok(Self {
            intents,
            property_types,
        })
    }

    /// The tier-1 route for `utterance`.
    pub(crate) fn route(&self, utterance: &str, facts: &Facts<'_>) -> Result<Route, NoMatch> {
        let matched = self.intents.route(utterance, facts)?;
        let types = self.property_types.get(&matched.tool);
        let params: Map<String, Value> = matched
            .params
            .into_iter()
            .map(|(name, text)| {
                let value = coerce(&text, types.and_then(|types| types.get(&name)));
                (name, value)
            })
            .collect();
        Ok(Route {
            tool: matched.tool.to_string(),
            tier: 1,
            cost: 0.0,
            intent: Some(matched.intent),
            params: Value::Object(params),
        })
    }

    pub(crate) fn intents(&self) -> &IntentTable {
        &self.intents
    }
}

/// How deep `$ref`s are followed; a schema that refers further (or in a cycle) reads as a
/// plain string there.
const MAX_REF_DEPTH: usize = 8;

/// The top-level properties of an input schema: each one's JSON type (the first that is not
/// null, looking through local `$ref`s, `anyOf` and `oneOf`; `"string"` when none is said)
/// and, for a string enum (`enum`, or `oneOf` of `const`s), its values.
fn input_properties(schema: &Value) -> BTreeMap<String, Property> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let property = Property {
                json_type: json_type(property, schema, 0).unwrap_or_else(|| "string".to_owned()),
                choices: string_choices(property, schema, 0).unwrap_or_default(),
            };
            (name.clone(), property)
        })
        .collect()
}

/// `subschema` with its local `$ref` (`#/$defs/X`, `#/definitions/X`) followed, if it has one.
fn resolve<'s>(subschema: &'s Value, root: &'s Value) -> Option<&'s Value> {
    match subschema.get("$ref").and_then(Value::as_str) {
        None => Some(subschema),
        Some(reference) => root.pointer(reference.strip_prefix('#')?),
    }
}

/// The branches of `anyOf` or `oneOf`, if the subschema is one.
fn branches(subschema: &Value) -> Option<&Vec<Value>> {
    subschema
        .get("anyOf")
        .or_else(|| subschema.get("oneOf"))
        .and_then(Value::as_array)
}

/// The first JSON type of `subschema` that is not null.
fn json_type(subschema: &Value, root: &Value, depth: usize) -> Option<String> {
    if depth > MAX_REF_DEPTH {
        return None;
    }
    let subschema = resolve(subschema, root)?;
    match subschema.get("type") {
        Some(Value::String(single)) if single != "null" => return Some(single.clone()),
        Some(Value::Array(many)) => {
            return many
                .iter()
                .filter_map(Value::as_str)
                .find(|name| *name != "null")
                .map(str::to_owned);
        }
        _ => {}
    }
    if let Some(branches) = branches(subschema) {
        return branches
            .iter()
            .find_map(|branch| json_type(branch, root, depth + 1));
    }
    let is_string = |value: &Value| value.is_string();
    let enum_of_strings = subschema
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|values| values.iter().any(is_string));
    (enum_of_strings || subschema.get("const").is_some_and(is_string)).then(|| "string".to_owned())
}

/// The values of a string enum: an `enum` or `const` of strings (nulls aside), or `anyOf` /
/// `oneOf` branches that each are one or are null. `None` for anything else.
fn string_choices(subschema: &Value, root: &Value, depth: usize) -> Option<Vec<String>> {
    if depth > MAX_REF_DEPTH {
        return None;
    }
    let subschema = resolve(subschema, root)?;
    if let Some(values) = subschema.get("enum").and_then(Value::as_array) {
        let choices = values
            .iter()
            .filter(|value| !value.is_null())
            .map(|value| value.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>()?;
        return (!choices.is_empty()).then_some(choices);
    }
    if let Some(value) = subschema.get("const") {
        return value.as_str().map(|value| vec![value.to_owned()]);
    }
    let mut choices = Vec::new();
    for branch in branches(subschema)? {
        let is_null = resolve(branch, root)
            .and_then(|branch| branch.get("type"))
            .is_some_and(|json_type| json_type == "null");
        if !is_null {
            choices.extend(string_choices(branch, root, depth + 1)?);
        }
    }
    (!choices.is_empty()).then_some(choices)
}

/// Turns captured text into the JSON the input expects; text that does not parse stays a
/// string, and input validation then says what is wrong with it. A string enum's value is
/// matched case-insensitively and handed on in the schema's spelling ("Low" becomes "low").
fn coerce(text: &str, property: Option<&Property>) -> Value {
    let Some(property) = property else {
        return Value::from(text);
    };
    match property.json_type.as_str() {
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(text)),
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(|| Value::from(text)),
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "true" | "yes" => Value::Bool(true),
            "false" | "no" => Value::Bool(false),
            _ => Value::from(text),
        },
        _ => {
            let lowercase = text.to_lowercase();
            let choice = property
                .choices
                .iter()
                .find(|choice| choice.to_lowercase() == lowercase);
            Value::from(choice.map_or(text, String::as_str))
        }
    }
}

/// Checks that the fixed value `param=text` fits the input's field, read as a capture of the
/// same words would be; says why not otherwise.
fn fixed_value(
    param: &str,
    text: &str,
    properties: &BTreeMap<String, Property>,
) -> Result<Value, String> {
    let Some(property) = properties.get(param) else {
        let known = properties.keys().cloned().collect::<Vec<_>>().join(", ");
        return Err(format!(
            "the input has no field `{param}` (fields: {known}): name one of them before `=`"
        ));
    };
    let value = coerce(text, Some(property));
    let fits = match property.json_type.as_str() {
        "integer" => value.is_i64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "string" => {
            value.is_string()
                && (property.choices.is_empty()
                    || property.choices.iter().any(|choice| value == **choice))
        }
        other => {
            return Err(format!(
                "`{param}` takes values of type {other}, and a fixed value is a string, a \
                 number or a boolean"
            ));
        }
    };
    if fits {
        return Ok(value);
    }
    let expected = match property.json_type.as_str() {
        "integer" => "an integer, e.g. `5`".to_owned(),
        "number" => "a number, e.g. `2.5`".to_owned(),
        "boolean" => "`true` or `false`".to_owned(),
        _ => format!("one of {}", property.choices.join(", ")),
    };
    Err(format!("`{param}` takes {expected}, not {text:?}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn property(json_type: &str, choices: &[&str]) -> Property {
        Property {
            json_type: json_type.to_owned(),
            choices: choices.iter().map(|&choice| choice.to_owned()).collect(),
        }
    }

    #[test]
    fn coerces_captures_to_the_input_types() {
        let typed = |text: &str, json_type: &str| coerce(text, Some(&property(json_type, &[])));
        assert_eq!(typed("3", "integer"), json!(3));
        assert_eq!(typed("three", "integer"), json!("three"));
        assert_eq!(typed("2.5", "number"), json!(2.5));
        assert_eq!(typed("Yes", "boolean"), json!(true));
        assert_eq!(typed("2026-11-23", "string"), json!("2026-11-23"));
        assert_eq!(coerce("x", None), json!("x"));
    }

    #[test]
    fn enum_captures_take_the_schemas_spelling_whatever_their_case() {
        let filter = property("string", &["low", "out_of_stock", "Ålesund"]);
        assert_eq!(coerce("Low", Some(&filter)), json!("low"));
        assert_eq!(coerce("LOW", Some(&filter)), json!("low"));
        assert_eq!(coerce("OUT_of_STOCK", Some(&filter)), json!("out_of_stock"));
        assert_eq!(coerce("åLESUND", Some(&filter)), json!("Ålesund"));
        // Not a value of the enum: handed on as written, for validation to refuse.
        assert_eq!(coerce("High", Some(&filter)), json!("High"));
    }

    #[test]
    fn reads_property_types_including_nullable_ones() {
        let schema = json!({
            "type": "object",
            "properties": {
                "from": {"type": "string", "format": "date"},
                "limit": {"type": ["integer", "null"]},
                "filter": {"$ref": "#/$defs/Filter"},
                "maybe_count": {"anyOf": [{"$ref": "#/$defs/Count"}, {"type": "null"}]},
                "untyped": {}
            },
            "$defs": {
                "Filter": {"type": "string", "enum": ["low", "out"]},
                "Count": {"type": "integer"}
            }
        });
        let properties = input_properties(&schema);
        assert_eq!(properties["from"], property("string", &[]));
        assert_eq!(properties["limit"], property("integer", &[]));
        assert_eq!(properties["filter"], property("string", &["low", "out"]));
        assert_eq!(properties["maybe_count"], property("integer", &[]));
        assert_eq!(properties["untyped"], property("string", &[]));
    }

    #[test]
    fn reads_string_enums_in_the_shapes_schemars_writes() {
        let schema = json!({
            "type": "object",
            "properties": {
                // A documented enum: `oneOf` of `const`s; optional: `anyOf` with null.
                "documented": {"$ref": "#/$defs/Documented"},
                "optional": {"anyOf": [{"$ref": "#/$defs/Documented"}, {"type": "null"}]},
                "nullable": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "mixed": {"enum": ["a", 1]},
                "looping": {"$ref": "#/$defs/Loop"}
            },
            "$defs": {
                "Documented": {"oneOf": [
                    {"const": "low", "type": "string", "description": "Running low."},
                    {"const": "out", "type": "string", "description": "None left."}
                ]},
                "Loop": {"anyOf": [{"$ref": "#/$defs/Loop"}]}
            }
        });
        let properties = input_properties(&schema);
        assert_eq!(
            properties["documented"],
            property("string", &["low", "out"])
        );
        assert_eq!(properties["optional"], property("string", &["low", "out"]));
        assert_eq!(properties["nullable"], property("string", &["a", "b"]));
        assert!(properties["mixed"].choices.is_empty());
        assert_eq!(properties["looping"], property("string", &[]));
    }

    #[test]
    fn fixed_values_are_typed_by_their_field() {
        let properties: BTreeMap<String, Property> = [
            ("filter", property("string", &["low", "out"])),
            ("note", property("string", &[])),
            ("limit", property("integer", &[])),
            ("ratio", property("number", &[])),
            ("all", property("boolean", &[])),
            ("tags", property("array", &[])),
        ]
        .into_iter()
        .map(|(name, property)| (name.to_owned(), property))
        .collect();
        let fixed = |param: &str, text: &str| fixed_value(param, text, &properties);
        assert_eq!(fixed("filter", "low"), Ok(json!("low")));
        assert_eq!(fixed("filter", "Low"), Ok(json!("low")));
        assert_eq!(fixed("note", "5"), Ok(json!("5")));
        assert_eq!(fixed("limit", "5"), Ok(json!(5)));
        assert_eq!(fixed("ratio", "0.5"), Ok(json!(0.5)));
        assert_eq!(fixed("all", "true"), Ok(json!(true)));

        let reason = |param: &str, text: &str| fixed(param, text).err().unwrap_or_default();
        assert_eq!(
            reason("filter", "high"),
            "`filter` takes one of low, out, not \"high\""
        );
        assert_eq!(
            reason("limit", "five"),
            "`limit` takes an integer, e.g. `5`, not \"five\""
        );
        assert_eq!(
            reason("limit", "2.5"),
            "`limit` takes an integer, e.g. `5`, not \"2.5\""
        );
        assert_eq!(
            reason("ratio", "half"),
            "`ratio` takes a number, e.g. `2.5`, not \"half\""
        );
        assert_eq!(
            reason("all", "maybe"),
            "`all` takes `true` or `false`, not \"maybe\""
        );
        assert!(reason("tags", "x").contains("type array"));
        assert_eq!(
            reason("colour", "red"),
            "the input has no field `colour` (fields: all, filter, limit, note, ratio, tags): \
             name one of them before `=`"
        );
    }
}

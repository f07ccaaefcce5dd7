//! Routes: which tool an utterance reaches, with which params, at what cost.
//!
//! [`RouteTable`] joins the intent table with what the registry knows of each tool's input, so
//! that captured text becomes typed JSON (`"3"` becomes `3` where the input wants an integer)
//! and so that an intent naming a field the input does not have is refused at boot, not at the
//! first call.

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
    /// Per tool: the JSON type of each input property (`"integer"`, `"string"`, …).
    property_types: BTreeMap<Arc<str>, BTreeMap<String, String>>,
}

impl RouteTable {
    pub(crate) fn build(tools: &[Arc<ToolDescriptor>]) -> Result<Self, OrchestratorError> {
        let mut property_types = BTreeMap::new();
        let mut routes = Vec::new();
        let mut descriptions = Vec::new();
        for tool in tools {
            let name: Arc<str> = Arc::from(&*tool.name);
            let properties = input_property_types(&tool.input_schema);
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
                let json_type = types.and_then(|types| types.get(&name)).map(String::as_str);
                let value = coerce(&text, json_type);
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

/// The top-level properties of an input schema and their JSON types (first non-null type).
fn input_property_types(schema: &Value) -> BTreeMap<String, String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let json_type = match property.get("type") {
                Some(Value::String(single)) => single.clone(),
                Some(Value::Array(many)) => many
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|t| *t != "null")
                    .unwrap_or("string")
                    .to_owned(),
                _ => "string".to_owned(),
            };
            (name.clone(), json_type)
        })
        .collect()
}

/// Turns captured text into the JSON the input expects; text that does not parse stays a
/// string, and input validation then says what is wrong with it.
fn coerce(text: &str, json_type: Option<&str>) -> Value {
    match json_type {
        Some("integer") => text
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(text)),
        Some("number") => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(|| Value::from(text)),
        Some("boolean") => match text.to_ascii_lowercase().as_str() {
            "true" | "yes" => Value::Bool(true),
            "false" | "no" => Value::Bool(false),
            _ => Value::from(text),
        },
        _ => Value::from(text),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn coerces_captures_to_the_input_types() {
        assert_eq!(coerce("3", Some("integer")), json!(3));
        assert_eq!(coerce("three", Some("integer")), json!("three"));
        assert_eq!(coerce("2.5", Some("number")), json!(2.5));
        assert_eq!(coerce("Yes", Some("boolean")), json!(true));
        assert_eq!(coerce("2026-11-23", Some("string")), json!("2026-11-23"));
        assert_eq!(coerce("x", None), json!("x"));
    }

    #[test]
    fn reads_property_types_including_nullable_ones() {
        let schema = json!({
            "type": "object",
            "properties": {
                "from": {"type": "string", "format": "date"},
                "limit": {"type": ["integer", "null"]},
                "filter": {"$ref": "#/$defs/Filter"}
            }
        });
        let types = input_property_types(&schema);
        assert_eq!(types["from"], "string");
        assert_eq!(types["limit"], "integer");
        assert_eq!(types["filter"], "string");
    }
}

//! Tier 2: when no intent matches, the client's own model picks the tool.
//!
//! The orchestrator asks nothing of any model of its own. When
//! [`OrchestratorConfig::model_routes`](crate::OrchestratorConfig::model_routes) is on and the
//! call's client can sample (an MCP client with the `sampling` capability, or the registry's
//! [`client_handler`](switchboard_registry::RegistryBuilder::client_handler)), it sends the
//! utterance and the descriptions of the tools the caller may use to that model, and reads back
//! one tool and its params as JSON. The route is tier 2 and costs Switchboard nothing (the
//! client pays for its model). The call then goes through every check as any call does, and a
//! mutating tool chosen so becomes a proposal, whoever the caller is: a model's guess is never
//! run unseen. An answer that names no tool, an unknown or forbidden one, or is not JSON, leaves
//! the utterance unrouted (`no_route`), as does a client that cannot sample.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use switchboard_core::{
    ToolDescriptor,
    ask::{Capability, ClientLink, SampleRequest},
};

use crate::route::Route;

/// The tier a route the client's model chose carries.
pub const MODEL_TIER: u8 = 2;

/// The most tokens the model may answer with: one tool name and its params.
const MAX_TOKENS: u32 = 400;

/// What the model is asked to answer.
#[derive(Debug, Deserialize)]
struct Choice {
    tool: Option<String>,
    #[serde(default)]
    params: Map<String, Value>,
}

/// The route the client's model picks for `utterance` among `tools`, if it picks one of them.
pub(crate) async fn route(
    link: &ClientLink,
    utterance: &str,
    tools: &[Arc<ToolDescriptor>],
) -> Option<Route> {
    if tools.is_empty() || !link.can(Capability::Sampling) {
        return None;
    }
    let catalog: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.input_schema,
            })
        })
        .collect();
    let request = SampleRequest::new(
        format!(
            "Request: {utterance}\n\nTools:\n{}",
            serde_json::to_string(&catalog).unwrap_or_default()
        ),
        MAX_TOKENS,
    )
    .with_system_prompt(
        "Pick the one tool that serves the request, and its params, from the tools listed. \
         Answer with JSON only: {\"tool\": \"<name>\", \"params\": {...}}, or {\"tool\": null} \
         when no tool serves it.",
    );
    let sampled = match link.sample(&request).await {
        Ok(sampled) => sampled,
        Err(error) => {
            tracing::info!(%error, "the client's model did not route the utterance");
            return None;
        }
    };
    let text = sampled.text()?;
    let choice: Choice = match serde_json::from_str(json_part(text)) {
        Ok(choice) => choice,
        Err(error) => {
            tracing::info!(%error, "the client's model answered something other than a route");
            return None;
        }
    };
    let tool = choice.tool?;
    if !tools.iter().any(|known| *known.name == *tool) {
        tracing::info!(
            tool,
            "the client's model named a tool the caller cannot use"
        );
        return None;
    }
    Some(Route {
        tool,
        tier: MODEL_TIER,
        cost: 0.0,
        intent: None,
        params: Value::Object(choice.params),
    })
}

/// The JSON object in a model's answer, which may come wrapped in prose or a code fence.
fn json_part(text: &str) -> &str {
    match (text.find('{'), text.rfind('}')) {
        (Some(start), Some(end)) if start < end => &text[start..=end],
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_is_found_inside_prose_or_a_fence() {
        assert_eq!(
            json_part("Sure:\n```json\n{\"tool\": null}\n```"),
            "{\"tool\": null}"
        );
        assert_eq!(json_part("no json"), "no json");
    }
}

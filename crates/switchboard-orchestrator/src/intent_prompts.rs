//! Intent patterns offered as prompts: one run-time prompt per intent a tool declares, so a
//! person can pick "assign {shift} to {user}" from a client's prompt list, fill in its
//! placeholders, and hand the client's model exactly the request the orchestrator routes.
//!
//! Each prompt is named `intent_<tool>` (`intent_<tool>_<n>` for the n-th of several intents
//! of one tool), takes one required string argument per capture of the pattern (a date range
//! `{from..to}` is one date phrase, named after its first param), carries the tool's
//! permission (a caller who may not call the tool does not see it) and domain, and renders as
//! one user message: the pattern's reading that keeps every optional part, each literal as its
//! first alternative, each capture replaced by its argument. Give them to the registry with
//! [`RegistryBuilder::prompt`](switchboard_registry::RegistryBuilder::prompt).

use serde_json::{Map, Value};
use switchboard_core::{
    BoxFuture, Caller, PromptArgument, PromptDescriptor, PromptMessage, ToolDescriptor, ToolError,
};
use switchboard_registry::RuntimePrompt;

use crate::intent::{IntentPattern, pattern::Item};

/// The prefix of every intent prompt's name.
pub const INTENT_PROMPT_PREFIX: &str = "intent_";

/// One intent pattern, rendered as the request it routes.
#[derive(Debug, Clone)]
pub struct IntentPrompt {
    /// The words of the full reading, a capture's place holding its argument's name.
    words: Vec<Word>,
}

#[derive(Debug, Clone)]
enum Word {
    Literal(String),
    Argument(String),
}

impl IntentPrompt {
    /// The request `arguments` (by capture name) fill in.
    pub fn request(&self, arguments: &Map<String, Value>) -> String {
        self.words
            .iter()
            .map(|word| match word {
                Word::Literal(text) => text.as_str(),
                Word::Argument(name) => arguments
                    .get(name)
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            })
            .filter(|word| !word.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl RuntimePrompt for IntentPrompt {
    fn render<'a>(
        &'a self,
        _caller: &'a Caller,
        arguments: &'a Map<String, Value>,
    ) -> BoxFuture<'a, Result<Vec<PromptMessage>, ToolError>> {
        let request = self.request(arguments);
        Box::pin(async move { Ok(vec![PromptMessage::user_text(request)]) })
    }
}

/// The prompts of every intent the tools of `tools` declare, in their order. An intent that
/// does not parse, or whose prompt name would pass 64 characters, is left out (the
/// orchestrator reports a bad intent when it boots).
pub fn intent_prompts<'a>(
    tools: impl IntoIterator<Item = &'a ToolDescriptor>,
) -> Vec<(PromptDescriptor, IntentPrompt)> {
    let mut prompts = Vec::new();
    for tool in tools {
        let several = tool.intents.len() > 1;
        for (index, text) in tool.intents.iter().enumerate() {
            let name = if several {
                format!("{INTENT_PROMPT_PREFIX}{}_{}", tool.name, index + 1)
            } else {
                format!("{INTENT_PROMPT_PREFIX}{}", tool.name)
            };
            if name.len() > 64 {
                tracing::debug!(tool = %tool.name, intent = %text, "intent prompt name too long; not offered");
                continue;
            }
            let Ok(pattern) = IntentPattern::parse(text) else {
                continue;
            };
            prompts.push(prompt(tool, &pattern, name));
        }
    }
    prompts
}

fn prompt(
    tool: &ToolDescriptor,
    pattern: &IntentPattern,
    name: String,
) -> (PromptDescriptor, IntentPrompt) {
    let words: Vec<Word> = pattern.expansions[0]
        .items
        .iter()
        .map(|item| match item {
            Item::Literal(alternatives) => Word::Literal(
                alternatives
                    .first()
                    .map(|a| a.to_string())
                    .unwrap_or_default(),
            ),
            Item::Capture(index) => Word::Argument(pattern.captures[*index].name.to_string()),
        })
        .collect();
    let mut arguments: Vec<PromptArgument> = pattern
        .captures
        .iter()
        .map(|capture| PromptArgument {
            name: capture.name.to_string(),
            description: Some(match &capture.last_name {
                Some(last) => format!(
                    "A date phrase (\"next week\", \"2026-12-01\") that sets `{}` and `{last}`.",
                    capture.name
                ),
                None => format!("The {} for `{}`.", capture.kind, capture.name),
            }),
            required: true,
            values: Vec::new(),
        })
        .collect();
    arguments.sort_by(|a, b| a.name.cmp(&b.name));
    let descriptor = PromptDescriptor {
        name,
        title: Some(pattern.example().to_owned()),
        description: format!(
            "Asks for \"{}\", which calls `{}`: {}",
            pattern.as_str(),
            tool.name,
            tool.description
        ),
        domain: tool.domain.to_string(),
        permission: tool.permission.to_string(),
        arguments,
    };
    (descriptor, IntentPrompt { words })
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::json;
    use switchboard_core::{Category, TaskSupport, ToolOrigin};

    use super::*;

    fn tool(name: &'static str, intents: &[&'static str]) -> ToolDescriptor {
        ToolDescriptor {
            name: Cow::Borrowed(name),
            title: None,
            domain: Cow::Borrowed("roster"),
            category: Category::Execute,
            permission: Cow::Borrowed("roster.write"),
            description: Cow::Borrowed("Assigns a shift."),
            intents: intents
                .iter()
                .map(|intent| Cow::Borrowed(*intent))
                .collect(),
            tags: Vec::new(),
            timeout: None,
            input_schema: std::sync::Arc::new(json!({"type": "object"})),
            output_schema: None,
            origin: ToolOrigin::Runtime {
                source: "test".to_owned(),
            },
            tasks: TaskSupport::Forbidden,
            asks_before_task: false,
        }
    }

    #[test]
    fn each_intent_becomes_a_prompt_with_its_captures_as_arguments_and_the_tools_permission() {
        let tools = [
            tool("roster_assign", &["assign {shift} to {who:user}"]),
            tool(
                "roster_list",
                &[
                    "who am i",
                    "[list|show] shifts [{from..to=this week}] [for {who:user}]",
                ],
            ),
        ];
        let prompts = intent_prompts(&tools);
        let names: Vec<&str> = prompts.iter().map(|(d, _)| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "intent_roster_assign",
                "intent_roster_list_1",
                "intent_roster_list_2"
            ]
        );
        let (assign, body) = &prompts[0];
        assert_eq!(assign.permission, "roster.write");
        assert_eq!(assign.domain, "roster");
        let arguments: Vec<(&str, bool)> = assign
            .arguments
            .iter()
            .map(|argument| (argument.name.as_str(), argument.required))
            .collect();
        assert_eq!(arguments, [("shift", true), ("who", true)]);
        let filled = json!({"shift": "night", "who": "bob"});
        assert_eq!(
            body.request(filled.as_object().expect("object")),
            "assign night to bob"
        );
        let (list, body) = &prompts[2];
        let arguments: Vec<&str> = list.arguments.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(arguments, ["from", "who"]);
        let filled = json!({"from": "next week", "who": "ann"});
        assert_eq!(
            body.request(filled.as_object().expect("object")),
            "list shifts next week for ann"
        );
        assert!(prompts[1].0.arguments.is_empty());
    }
}

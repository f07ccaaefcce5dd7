//! The question put to the human (an elicitation form) and how their answer is read.
//!
//! An elicitation form is flat (primitive fields only), so what the proposal would do is in
//! the message: the tool, its category, the proposal's summary, its params as JSON, its id and
//! expiry. The form itself has a required choice, `decision` (`approve` or `reject`), an
//! optional `feedback` for the agent, and for a restricted tool a `confirm` box: a restricted
//! tool cannot be undone, and runs only when its human has confirmed it, here by ticking it.
//!
//! Elicitation actions map onto decisions: `accept` with `approve` approves, `accept` with
//! `reject` rejects with the feedback, and `decline` or `cancel` decides nothing (the proposal
//! stays pending, for the CLI or the API).

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::{Value, json};
use switchboard_core::Category;
use switchboard_registry::Proposal;

/// The key of the one input request in an `input_required` result.
pub(crate) const INPUT_KEY: &str = "approval";

/// The longest feedback kept, in characters.
pub(crate) const MAX_FEEDBACK_CHARS: usize = 2000;

/// The longest params JSON shown in the message, in characters.
const MAX_PARAMS_CHARS: usize = 1500;

/// The feedback a rejection without any gets.
const NO_FEEDBACK: &str = "rejected in the MCP client, without feedback";

/// What the human answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Run it; `confirmed` if they ticked the confirmation (restricted tools need it).
    Approve { confirmed: bool },
    /// Do not run it.
    Reject { feedback: String },
    /// They declined or cancelled the question: nothing is decided.
    Undecided,
}

/// The form asking to decide on `proposal`, whose tool is of `category`, as `user`.
pub(crate) fn question(proposal: &Proposal, category: Category, user: &str) -> ElicitRequestParams {
    let mut params = proposal.params.to_string();
    if params.chars().count() > MAX_PARAMS_CHARS {
        params = params
            .chars()
            .take(MAX_PARAMS_CHARS - 1)
            .collect::<String>()
            + "…";
    }
    let restricted = category == Category::Restricted;
    let mut message = format!(
        "Your agent asks to run `{tool}` ({category}): {summary}\n\nParameters: {params}\n\n\
         Approve to run it once, as you ({user}); reject to tell the agent why not. \
         Proposal {id}, expires {expires}.",
        tool = proposal.tool,
        summary = proposal.summary,
        id = proposal.id,
        expires = proposal.expires_at,
    );
    if restricted {
        message.push_str("\n\nThis tool's effects cannot be undone: tick `confirm` to approve it.");
    }
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema(restricted),
    }
}

fn schema(restricted: bool) -> ElicitationSchema {
    let mut properties = json!({
        "decision": {
            "type": "string",
            "title": "Decision",
            "oneOf": [
                {"const": "approve", "title": "Approve: run it once, as me"},
                {"const": "reject", "title": "Reject: do not run it"},
            ],
        },
        "feedback": {
            "type": "string",
            "title": "Feedback for the agent",
            "description": "Why you reject it (optional)",
            "maxLength": MAX_FEEDBACK_CHARS,
        },
    });
    if restricted {
        properties["confirm"] = json!({
            "type": "boolean",
            "title": "I confirm: this cannot be undone",
            "default": false,
        });
    }
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": ["decision"],
    });
    let object = match schema {
        Value::Object(object) => object,
        _ => serde_json::Map::new(),
    };
    ElicitationSchema::from_json_schema(object).unwrap_or_else(|error| {
        // The schema above is fixed; a unit test checks that rmcp accepts it.
        tracing::error!(%error, "the approval form's schema is refused by rmcp");
        ElicitationSchema::new(std::collections::BTreeMap::new())
    })
}

/// Reads an answer. `Err` says what is wrong with an `accept` whose content is not a decision.
pub(crate) fn read(result: &ElicitResult) -> Result<Answer, String> {
    match result.action {
        ElicitationAction::Accept => {}
        // Decline, cancel, and whatever a later revision adds: nothing is decided.
        _ => return Ok(Answer::Undecided),
    }
    let content = result.content.as_ref().unwrap_or(&Value::Null);
    match content.get("decision").and_then(Value::as_str) {
        Some("approve") => Ok(Answer::Approve {
            confirmed: content.get("confirm").and_then(Value::as_bool) == Some(true),
        }),
        Some("reject") => {
            let feedback = content
                .get("feedback")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|feedback| !feedback.is_empty())
                .unwrap_or(NO_FEEDBACK);
            Ok(Answer::Reject {
                feedback: feedback.chars().take(MAX_FEEDBACK_CHARS).collect(),
            })
        }
        Some(other) => Err(format!(
            "the approval answer's `decision` is `{other}`; expected `approve` or `reject`"
        )),
        None => Err("the approval answer has no `decision` (`approve` or `reject`)".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(content: Value) -> ElicitResult {
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
    }

    #[test]
    fn the_form_is_an_elicitation_schema_rmcp_accepts() {
        for restricted in [false, true] {
            let schema = serde_json::to_value(schema(restricted)).expect("serialises");
            assert_eq!(schema["required"], json!(["decision"]), "{schema}");
            assert_eq!(
                schema["properties"]["decision"]["oneOf"][0]["const"], "approve",
                "{schema}"
            );
            assert_eq!(schema["properties"].get("confirm").is_some(), restricted);
        }
    }

    #[test]
    fn answers_map_onto_decisions() {
        assert_eq!(
            read(&accept(json!({"decision": "approve"}))),
            Ok(Answer::Approve { confirmed: false })
        );
        assert_eq!(
            read(&accept(json!({"decision": "approve", "confirm": true}))),
            Ok(Answer::Approve { confirmed: true })
        );
        assert_eq!(
            read(&accept(
                json!({"decision": "reject", "feedback": " not Sunday "})
            )),
            Ok(Answer::Reject {
                feedback: "not Sunday".to_owned()
            })
        );
        assert_eq!(
            read(&accept(json!({"decision": "reject"}))),
            Ok(Answer::Reject {
                feedback: NO_FEEDBACK.to_owned()
            })
        );
        for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
            assert_eq!(read(&ElicitResult::new(action)), Ok(Answer::Undecided));
        }
        assert!(read(&accept(json!({"decision": "maybe"}))).is_err());
        assert!(read(&ElicitResult::new(ElicitationAction::Accept)).is_err());
    }
}

//! The conformance tools that ask the client: a sampling request and three elicitation forms
//! (scenarios `tools-call-sampling`, `tools-call-elicitation`, `elicitation-sep1034-defaults`,
//! `elicitation-sep1330-enums`).
//!
//! Every form is a Rust type, derived into its schema by [`ToolContext::elicit`], so these
//! tools also show that defaults (SEP-1034) and the five enum shapes (SEP-1330) come out of
//! ordinary `serde` and `schemars` attributes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{
    NoInput, ToolContent, ToolContext, ToolError, ToolInput,
    ask::{Answer, SampleRequest},
    tool,
};
use validator::Validate;

/// The input of `test_sampling`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct SamplingInput {
    /// The prompt to send to the client's model.
    pub prompt: String,
}

/// Asks the client's model to answer `prompt` (at most 100 tokens) and answers
/// `LLM response: <its answer>`. For the MCP conformance scenario `tools-call-sampling`.
#[tool(
    name = "test_sampling",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn sampling(ctx: &ToolContext, input: SamplingInput) -> Result<ToolContent, ToolError> {
    let sampled = ctx.sample(&SampleRequest::new(input.prompt, 100)).await?;
    let said = sampled.text().unwrap_or("(no text)");
    Ok(ToolContent::text(format!("LLM response: {said}")))
}

/// The input of `test_elicitation`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct ElicitationInput {
    /// The message to show the person.
    pub message: String,
}

/// The form `test_elicitation` shows.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct UserInfo {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

/// Asks the person for a user name and an email address, and answers with what they did.
/// For the MCP conformance scenario `tools-call-elicitation`.
#[tool(
    name = "test_elicitation",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn elicitation(
    ctx: &ToolContext,
    input: ElicitationInput,
) -> Result<ToolContent, ToolError> {
    let answer = ctx.elicit::<UserInfo>(&input.message).await?;
    Ok(ToolContent::text(format!(
        "User response: {}",
        described(&answer)
    )))
}

// A status with a default, for `test_elicitation_sep1034_defaults`. Neither it nor its values
// have doc comments: a type's doc comment becomes its field's description, and values with doc
// comments are offered as titled choices instead of a plain `enum`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
    Pending,
}

fn default_name() -> String {
    "John Doe".to_owned()
}

fn default_age() -> i64 {
    30
}

fn default_score() -> f64 {
    95.5
}

fn default_status() -> Status {
    Status::Active
}

fn default_verified() -> bool {
    true
}

/// A form whose every field has a default (SEP-1034).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Defaults {
    #[serde(default = "default_name")]
    name: String,
    #[serde(default = "default_age")]
    age: i64,
    #[serde(default = "default_score")]
    score: f64,
    #[serde(default = "default_status")]
    status: Status,
    #[serde(default = "default_verified")]
    verified: bool,
}

/// Asks for a form whose fields all have defaults, and answers with what the person did.
/// For the MCP conformance scenario `elicitation-sep1034-defaults`.
#[tool(
    name = "test_elicitation_sep1034_defaults",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn elicitation_sep1034_defaults(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let answer = ctx
        .elicit::<Defaults>("Please review and update the form fields with defaults")
        .await?;
    Ok(ToolContent::text(format!(
        "Elicitation completed: {}",
        described(&answer)
    )))
}

// A choice without titles (no doc comments, see `Status`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Plain {
    Option1,
    Option2,
    Option3,
}

// A choice with a title per value: each value's doc comment.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Titled {
    /// First Option
    Value1,
    /// Second Option
    Value2,
    /// Third Option
    Value3,
}

// A choice named the deprecated way, with `enumNames` beside `enum` (added on its field).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Legacy {
    Opt1,
    Opt2,
    Opt3,
}

/// The five enum shapes of SEP-1330.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Enums {
    untitled_single: Option<Plain>,
    titled_single: Option<Titled>,
    #[schemars(extend("enumNames" = ["Option One", "Option Two", "Option Three"]))]
    legacy_enum: Option<Legacy>,
    untitled_multi: Option<Vec<Plain>>,
    titled_multi: Option<Vec<Titled>>,
}

/// Asks for a form with each of SEP-1330's enum shapes, and answers with what the person did.
/// For the MCP conformance scenario `elicitation-sep1330-enums`.
#[tool(
    name = "test_elicitation_sep1330_enums",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn elicitation_sep1330_enums(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let answer = ctx
        .elicit::<Enums>("Please select options from the enum fields")
        .await?;
    Ok(ToolContent::text(format!(
        "Elicitation completed: {}",
        described(&answer)
    )))
}

/// `action=<accept|decline|cancel>, content=<the form as JSON>`, as the suite's tools answer.
fn described<T: Serialize>(answer: &Answer<T>) -> String {
    match answer {
        Answer::Accepted(form) => format!(
            "action=accept, content={}",
            serde_json::to_string(form).unwrap_or_else(|error| format!("<{error}>"))
        ),
        Answer::Declined => "action=decline, content={}".to_owned(),
        Answer::Cancelled => "action=cancel, content={}".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use switchboard_core::ask::form_schema;

    use super::*;

    #[test]
    fn the_defaults_form_carries_a_default_for_every_field() {
        let schema = form_schema::<Defaults>().expect("a form");
        assert_eq!(
            schema["properties"],
            json!({
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true}
            })
        );
    }

    #[test]
    fn the_enums_form_has_each_of_the_five_shapes() {
        let schema = form_schema::<Enums>().expect("a form");
        assert_eq!(
            schema["properties"],
            json!({
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}]},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}]}}
            })
        );
        assert_eq!(schema.get("required"), None);
    }
}

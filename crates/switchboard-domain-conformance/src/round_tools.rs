//! The conformance tools that ask the client on protocol 2026-07-28, where a question ends the
//! call with an `input_required` result and the answer comes with the next call (scenarios
//! `input-required-result-*`, SEP-2322). Each names the keys the suite expects its questions
//! under, so they ask through [`ToolContext::ask_all`]; on the 2025 revisions the same tools
//! ask while the call waits.

use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_core::{
    NoInput, ToolContent, ToolContext, ToolError,
    ask::{
        AskError, Capability, ElicitAction, Elicitation, Keyed, Question, Reply, SampleRequest,
        form_schema,
    },
    tool,
};

/// A name, for the forms that ask for one.
#[derive(Debug, Deserialize, JsonSchema)]
struct NameForm {
    name: String,
}

/// A colour, for the second round of `test_input_required_result_multi_round`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ColorForm {
    color: String,
}

/// A confirmation.
#[derive(Debug, Deserialize, JsonSchema)]
struct OkForm {
    ok: bool,
}

/// A form asking for `T` with `message`, under `key`.
pub(crate) fn form<T: JsonSchema>(key: &str, message: &str) -> Result<Keyed, AskError> {
    Ok(Keyed::new(
        key,
        Question::Elicit(Elicitation::Form {
            message: message.to_owned(),
            requested_schema: form_schema::<T>()?,
        }),
    ))
}

/// The content of an accepted form, read as `T`.
pub(crate) fn accepted<T: serde::de::DeserializeOwned>(
    reply: &Reply,
) -> Result<Option<T>, ToolError> {
    match reply {
        Reply::Elicit(reply) if reply.action == ElicitAction::Accept => {
            let content = reply.content.clone().unwrap_or_default();
            serde_json::from_value(content)
                .map(Some)
                .map_err(|error| AskError::BadAnswer(error.to_string()).into())
        }
        Reply::Elicit(_) => Ok(None),
        other => Err(AskError::BadAnswer(format!("not a form's answer: {other:?}")).into()),
    }
}

/// The model's text in a sampling reply.
fn said(reply: &Reply) -> String {
    match reply {
        Reply::Sample(sampled) => sampled.text().unwrap_or("(no text)").to_owned(),
        other => format!("(not a completion: {other:?})"),
    }
}

/// The roots' URIs in a roots reply, joined.
fn roots(reply: &Reply) -> String {
    match reply {
        Reply::Roots { roots } => roots
            .iter()
            .map(|root| root.uri.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        other => format!("(not roots: {other:?})"),
    }
}

/// Asks the person's name (key `user_name`) and greets them.
/// For the MCP conformance scenario `input-required-result-basic-elicitation` and those that
/// send it wrong, extra or missing answers.
#[tool(
    name = "test_input_required_result_elicitation",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn input_required_elicitation(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let replies = ctx
        .ask_all(&[form::<NameForm>("user_name", "What is your name?")?])
        .await?;
    let name =
        accepted::<NameForm>(&replies[0])?.map_or_else(|| "stranger".to_owned(), |form| form.name);
    Ok(ToolContent::text(format!("Hello, {name}!")))
}

/// Asks the client's model the capital of France (key `capital_question`) and answers with
/// what it said. For the MCP conformance scenario `input-required-result-basic-sampling`.
#[tool(
    name = "test_input_required_result_sampling",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn input_required_sampling(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let question = Question::Sample(SampleRequest::new("What is the capital of France?", 100));
    let replies = ctx
        .ask_all(&[Keyed::new("capital_question", question)])
        .await?;
    Ok(ToolContent::text(format!(
        "The model said: {}",
        said(&replies[0])
    )))
}

/// Asks the client for its roots (key `client_roots`) and names them.
/// For the MCP conformance scenario `input-required-result-basic-list-roots`.
#[tool(
    name = "test_input_required_result_list_roots",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn input_required_list_roots(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let replies = ctx
        .ask_all(&[Keyed::new("client_roots", Question::Roots)])
        .await?;
    Ok(ToolContent::text(format!(
        "The client's roots: {}",
        roots(&replies[0])
    )))
}

/// Asks for a confirmation (key `confirm`); its answer comes back with the sealed
/// `requestState`, which the server checks before the tool runs again.
/// For the MCP conformance scenario `input-required-result-request-state`.
#[tool(
    name = "test_input_required_result_request_state",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn input_required_request_state(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    confirmed(ctx).await
}

/// As `test_input_required_result_request_state`: a client that changes the state it was
/// given is refused. For the MCP conformance scenario `input-required-result-tampered-state`.
#[tool(
    name = "test_input_required_result_tampered_state",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn input_required_tampered_state(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    confirmed(ctx).await
}

async fn confirmed(ctx: &ToolContext) -> Result<ToolContent, ToolError> {
    let replies = ctx
        .ask_all(&[form::<OkForm>("confirm", "Please confirm")?])
        .await?;
    let ok = accepted::<OkForm>(&replies[0])?.is_some_and(|form| form.ok);
    Ok(ToolContent::text(format!("state-ok: confirmed={ok}")))
}

/// Asks three things at once: the person's name (`user_name`), a greeting from the model
/// (`greeting`) and the client's roots (`client_roots`).
/// For the MCP conformance scenario `input-required-result-multiple-input-requests`.
#[tool(
    name = "test_input_required_result_multiple_inputs",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn input_required_multiple_inputs(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let replies = ctx
        .ask_all(&[
            form::<NameForm>("user_name", "What is your name?")?,
            Keyed::new(
                "greeting",
                Question::Sample(SampleRequest::new("Generate a greeting", 50)),
            ),
            Keyed::new("client_roots", Question::Roots),
        ])
        .await?;
    let name = accepted::<NameForm>(&replies[0])?.map_or_else(String::new, |form| form.name);
    Ok(ToolContent::text(format!(
        "name={name}; greeting={}; roots={}",
        said(&replies[1]),
        roots(&replies[2])
    )))
}

/// Asks in two rounds: a name (`step1`), then a favourite colour (`step2`).
/// For the MCP conformance scenario `input-required-result-multi-round`.
#[tool(
    name = "test_input_required_result_multi_round",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn input_required_multi_round(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let first = ctx
        .ask_all(&[form::<NameForm>("step1", "Step 1: What is your name?")?])
        .await?;
    let name = accepted::<NameForm>(&first[0])?.map_or_else(String::new, |form| form.name);
    let second = ctx
        .ask_all(&[form::<ColorForm>(
            "step2",
            "Step 2: What is your favorite color?",
        )?])
        .await?;
    let color = accepted::<ColorForm>(&second[0])?.map_or_else(String::new, |form| form.color);
    Ok(ToolContent::text(format!("{name} likes {color}")))
}

/// Asks for a name and for a completion, each only if the client can answer it.
/// For the MCP conformance scenario `input-required-result-capability-check`.
#[tool(
    name = "test_input_required_result_capabilities",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn input_required_capabilities(
    ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    let mut questions = Vec::new();
    if ctx.client_can(Capability::ElicitationForm) {
        questions.push(form::<NameForm>("user_name", "What is your name?")?);
    }
    if ctx.client_can(Capability::Sampling) {
        questions.push(Keyed::new(
            "greeting",
            Question::Sample(SampleRequest::new("Generate a greeting", 50)),
        ));
    }
    let asked = questions.len();
    ctx.ask_all(&questions).await?;
    Ok(ToolContent::text(format!(
        "asked {asked} question(s) the client can answer"
    )))
}

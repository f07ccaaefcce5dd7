//! The reference prompts of the conformance suite's `prompts-*`, `completion-complete` and
//! `input-required-result-non-tool-request` scenarios, with the names and messages the
//! scenarios ask for.

use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_core::{
    ContentBlock, NoInput, Prompt, PromptMessage, PromptSpec, ToolContext, ToolError,
};

use crate::{Conformance, media::RED_PIXEL_PNG};

/// One user message: "This is a simple prompt for testing." For `prompts-get-simple`.
#[derive(Debug)]
pub struct SimplePrompt;

impl Prompt for SimplePrompt {
    type Domain = Conformance;
    type Args = NoInput;
    const SPEC: PromptSpec = switchboard_core::prompt_spec! {
        domain: Conformance,
        full_name: "test_simple_prompt",
        description: "A simple prompt without arguments, for the MCP conformance suite.",
        permission: crate::PERMISSION,
    };

    async fn render(_ctx: &ToolContext, _args: NoInput) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![PromptMessage::user_text(
            "This is a simple prompt for testing.",
        )])
    }
}

switchboard_core::prompt!(SimplePrompt);

/// The arguments of [`PromptWithArguments`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TwoArguments {
    /// First test argument.
    pub arg1: String,
    /// Second test argument.
    pub arg2: String,
}

/// One user message naming both arguments. For `prompts-get-with-args` and
/// `completion-complete`.
#[derive(Debug)]
pub struct PromptWithArguments;

impl Prompt for PromptWithArguments {
    type Domain = Conformance;
    type Args = TwoArguments;
    const SPEC: PromptSpec = switchboard_core::prompt_spec! {
        domain: Conformance,
        full_name: "test_prompt_with_arguments",
        description: "A prompt with two required arguments, for the MCP conformance suite.",
        permission: crate::PERMISSION,
    };

    async fn render(
        _ctx: &ToolContext,
        args: TwoArguments,
    ) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![PromptMessage::user_text(format!(
            "Prompt with arguments: arg1='{}', arg2='{}'",
            args.arg1, args.arg2
        ))])
    }

    /// `arg1` completes among a few fixed words, as the scenario's example does.
    fn complete(_ctx: &ToolContext, argument: &str, value: &str) -> Vec<String> {
        if argument != "arg1" {
            return Vec::new();
        }
        ["paris", "park", "party", "test", "testing"]
            .into_iter()
            .filter(|word| word.starts_with(value))
            .map(str::to_owned)
            .collect()
    }
}

switchboard_core::prompt!(PromptWithArguments);

/// The argument of [`PromptWithEmbeddedResource`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUri {
    /// URI of the resource to embed.
    pub resource_uri: String,
}

/// The resource the argument names, embedded, then a text message. For
/// `prompts-get-embedded-resource`.
#[derive(Debug)]
pub struct PromptWithEmbeddedResource;

impl Prompt for PromptWithEmbeddedResource {
    type Domain = Conformance;
    type Args = ResourceUri;
    const SPEC: PromptSpec = switchboard_core::prompt_spec! {
        domain: Conformance,
        full_name: "test_prompt_with_embedded_resource",
        description: "A prompt embedding a resource, for the MCP conformance suite.",
        permission: crate::PERMISSION,
    };

    async fn render(
        _ctx: &ToolContext,
        args: ResourceUri,
    ) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![
            PromptMessage::user(ContentBlock::text_resource(
                args.resource_uri,
                "text/plain",
                "Embedded resource content for testing.",
            )),
            PromptMessage::user_text("Please process the embedded resource above."),
        ])
    }
}

switchboard_core::prompt!(PromptWithEmbeddedResource);

/// A PNG image, then a text message. For `prompts-get-with-image`.
#[derive(Debug)]
pub struct PromptWithImage;

impl Prompt for PromptWithImage {
    type Domain = Conformance;
    type Args = NoInput;
    const SPEC: PromptSpec = switchboard_core::prompt_spec! {
        domain: Conformance,
        full_name: "test_prompt_with_image",
        description: "A prompt with an image, for the MCP conformance suite.",
        permission: crate::PERMISSION,
    };

    async fn render(_ctx: &ToolContext, _args: NoInput) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![
            PromptMessage::user(ContentBlock::image(RED_PIXEL_PNG, "image/png")),
            PromptMessage::user_text("Please analyze the image above."),
        ])
    }
}

switchboard_core::prompt!(PromptWithImage);

/// The form [`PromptThatAsks`] shows.
#[derive(Debug, Deserialize, JsonSchema)]
struct UserContext {
    /// What the prompt should be about.
    context: String,
}

/// Asks the person what context to use, then one user message with it. For
/// `input-required-result-non-tool-request`: a prompt's body asks as a tool does, so on
/// 2026-07-28 the first `prompts/get` ends with an `input_required` result.
#[derive(Debug)]
pub struct PromptThatAsks;

impl Prompt for PromptThatAsks {
    type Domain = Conformance;
    type Args = NoInput;
    const SPEC: PromptSpec = switchboard_core::prompt_spec! {
        domain: Conformance,
        full_name: "test_input_required_result_prompt",
        description: "A prompt that asks the person for its context, for the MCP conformance \
                      suite.",
        permission: crate::PERMISSION,
    };

    async fn render(ctx: &ToolContext, _args: NoInput) -> Result<Vec<PromptMessage>, ToolError> {
        let answer = ctx
            .elicit::<UserContext>("What context should the prompt use?")
            .await?;
        let context = match answer.accepted() {
            Some(UserContext { context }) => context,
            None => "none given".to_owned(),
        };
        Ok(vec![PromptMessage::user_text(format!(
            "Prompt with context: {context}"
        ))])
    }
}

switchboard_core::prompt!(PromptThatAsks);

//! The conformance tools that answer with content blocks: text, an image, a sound, an embedded
//! resource, and all of them at once (scenarios `tools-call-simple-text`, `tools-call-image`,
//! `tools-call-audio`, `tools-call-embedded-resource`, `tools-call-mixed-content`).
//!
//! Each returns [`ToolContent`], so the MCP server answers with exactly these blocks (and no
//! `structuredContent`), as the suite expects. The texts are the suite's own.

use switchboard_core::{ContentBlock, NoInput, ToolContent, ToolContext, ToolError, tool};

use crate::media::{EMPTY_WAV, RED_PIXEL_PNG};

/// Returns one text block: "This is a simple text response for testing."
/// For the MCP conformance scenario `tools-call-simple-text`.
#[tool(
    name = "test_simple_text",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn simple_text(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::text(
        "This is a simple text response for testing.",
    ))
}

/// Returns one image block: a 1x1 red PNG.
/// For the MCP conformance scenario `tools-call-image`.
#[tool(
    name = "test_image_content",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn image_content(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::new([ContentBlock::image(
        RED_PIXEL_PNG,
        "image/png",
    )]))
}

/// Returns one audio block: an empty WAV file.
/// For the MCP conformance scenario `tools-call-audio`.
#[tool(
    name = "test_audio_content",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn audio_content(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::new([ContentBlock::audio(
        EMPTY_WAV,
        "audio/wav",
    )]))
}

/// Returns one embedded text resource, `test://embedded-resource`.
/// For the MCP conformance scenario `tools-call-embedded-resource`.
#[tool(
    name = "test_embedded_resource",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn embedded_resource_content(
    _ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::new([ContentBlock::text_resource(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )]))
}

/// Returns a text, an image and an embedded JSON resource, in that order.
/// For the MCP conformance scenario `tools-call-mixed-content`.
#[tool(
    name = "test_multiple_content_types",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn multiple_content_types(
    _ctx: &ToolContext,
    _input: NoInput,
) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::text("Multiple content types test:")
        .with(ContentBlock::image(RED_PIXEL_PNG, "image/png"))
        .with(ContentBlock::text_resource(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        )))
}

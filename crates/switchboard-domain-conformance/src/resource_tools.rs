//! The conformance suite's fixture resources, each served by a read tool of its own
//! (scenarios `resources-read-text`, `resources-read-binary`, `resources-templates-read`,
//! `resources-subscribe` and `resources-unsubscribe`).
//!
//! They are declared with [`switchboard_core::resource!`], so reading one is a call of its
//! tool: checked and audited like any other. The texts are the suite's own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{
    ContentBlock, NoInput, ToolContent, ToolContext, ToolError, ToolInput, tool,
};
use validator::Validate;

use crate::media::RED_PIXEL_PNG;

/// Returns the text of the resource `test://static-text`.
#[tool(
    name = "test_resource_static_text",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn static_text(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::text(
        "This is the content of the static text resource.",
    ))
}

switchboard_core::resource!(StaticText {
    uri: "test://static-text",
    name: "static-text",
    title: "Static text",
    description: "A fixed text, for the conformance scenario `resources-read-text`.",
    mime_type: "text/plain",
});

/// Returns the bytes of the resource `test://static-binary`: a 1x1 red PNG.
#[tool(
    name = "test_resource_static_binary",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn static_binary(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::new([ContentBlock::image(
        RED_PIXEL_PNG,
        "image/png",
    )]))
}

switchboard_core::resource!(StaticBinary {
    uri: "test://static-binary",
    name: "static-binary",
    title: "Static binary",
    description: "A 1x1 red PNG, for the conformance scenario `resources-read-binary`.",
    mime_type: "image/png",
});

/// The `{id}` of `test://template/{id}/data`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct TemplateDataInput {
    /// Any id, such as `123`.
    #[validate(length(min = 1, max = 64))]
    pub id: String,
}

/// The data behind `test://template/{id}/data`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TemplateRecord {
    /// The id from the URI.
    pub id: String,
    /// Always `true`: this is the suite's template fixture.
    #[serde(rename = "templateTest")]
    pub template_test: bool,
    /// `Data for ID: {id}`.
    pub data: String,
}

/// Returns the data of `test://template/{id}/data` for one id.
#[tool(
    name = "test_resource_template_data",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn template_data(
    _ctx: &ToolContext,
    input: TemplateDataInput,
) -> Result<TemplateRecord, ToolError> {
    Ok(TemplateRecord {
        data: format!("Data for ID: {}", input.id),
        id: input.id,
        template_test: true,
    })
}

switchboard_core::resource!(TemplateData {
    uri: "test://template/{id}/data",
    name: "template-data",
    title: "Template data",
    description: "Data for any id, for the conformance scenario `resources-templates-read`.",
    mime_type: "application/json",
});

/// Returns the text of the resource `test://watched-resource`.
#[tool(
    name = "test_resource_watched",
    domain = crate::Conformance,
    category = read,
    permission = "conformance.test"
)]
pub async fn watched(_ctx: &ToolContext, _input: NoInput) -> Result<ToolContent, ToolError> {
    Ok(ToolContent::text(
        "A resource to subscribe to. Nothing writes it, so no update is ever sent for it.",
    ))
}

switchboard_core::resource!(Watched {
    uri: "test://watched-resource",
    name: "watched-resource",
    title: "Watched resource",
    description: "A resource to subscribe to, for the conformance scenarios \
                  `resources-subscribe` and `resources-unsubscribe`.",
    mime_type: "text/plain",
});

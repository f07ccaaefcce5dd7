#![doc = include_str!("../README.md")]

mod behaviour_tools;
mod content_tools;
mod media;
mod prompts;
mod resource_tools;
#[cfg(test)]
mod tests;

pub use behaviour_tools::{
    ContactMethod, ErrorHandling, JsonSchemaFeatures, JsonSchemaFeaturesInput,
    JsonSchemaFeaturesOutput, LoggingTool, PostalAddress, Reconnection, ToolWithLogging,
    ToolWithProgress, error_handling, json_schema_features, logging_tool, reconnection,
    tool_with_logging, tool_with_progress,
};
pub use content_tools::{
    AudioContent, EmbeddedResourceContent, ImageContent, MultipleContentTypes, SimpleText,
    audio_content, embedded_resource_content, image_content, multiple_content_types, simple_text,
};
pub use prompts::{
    PromptWithArguments, PromptWithEmbeddedResource, PromptWithImage, ResourceUri, SimplePrompt,
    TwoArguments,
};
pub use resource_tools::{
    StaticBinary, StaticText, TemplateData, TemplateDataInput, TemplateRecord, Watched,
    static_binary, static_text, template_data, watched,
};

/// The domain's name: what `RegistryBuilder::exclude_domain` takes to leave these tools out.
pub const DOMAIN: &str = "conformance";

/// The permission every conformance tool requires (the built-in `admin` role has it).
pub const PERMISSION: &str = "conformance.test";

switchboard_core::domain! {
    /// The MCP conformance suite's reference tools. For `switchboard serve --conformance` only.
    pub Conformance { name: "conformance" }
}

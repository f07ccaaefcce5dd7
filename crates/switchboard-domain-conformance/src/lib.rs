#![doc = include_str!("../README.md")]

mod asking_tools;
mod behaviour_tools;
mod content_tools;
mod media;
mod prompts;
mod protocol_tools;
mod resource_tools;
mod round_tools;
mod task_tools;
#[cfg(test)]
mod tests;

pub use asking_tools::{
    Elicitation, ElicitationInput, ElicitationSep1034Defaults, ElicitationSep1330Enums, Sampling,
    SamplingInput, elicitation, elicitation_sep1034_defaults, elicitation_sep1330_enums, sampling,
};
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
    PromptThatAsks, PromptWithArguments, PromptWithEmbeddedResource, PromptWithImage, ResourceUri,
    SimplePrompt, TwoArguments,
};
pub use protocol_tools::{
    HeaderParameter, HeaderParameterInput, MissingCapability, StreamingElicitation,
    header_parameter, missing_capability, streaming_elicitation,
};
pub use resource_tools::{
    StaticBinary, StaticText, TemplateData, TemplateDataInput, TemplateRecord, Watched,
    static_binary, static_text, template_data, watched,
};
pub use round_tools::{
    InputRequiredCapabilities, InputRequiredElicitation, InputRequiredListRoots,
    InputRequiredMultiRound, InputRequiredMultipleInputs, InputRequiredRequestState,
    InputRequiredSampling, InputRequiredTamperedState, input_required_capabilities,
    input_required_elicitation, input_required_list_roots, input_required_multi_round,
    input_required_multiple_inputs, input_required_request_state, input_required_sampling,
    input_required_tampered_state,
};
pub use task_tools::{
    ConfirmDelete, ConfirmDeleteInput, FailingJob, Greet, GreetInput, MultiInput, ProtocolErrorJob,
    SlowCompute, SlowComputeInput, ToolWithTask, confirm_delete, failing_job, greet, multi_input,
    protocol_error_job, slow_compute, tool_with_task,
};

/// The domain's name: what `RegistryBuilder::exclude_domain` takes to leave these tools out.
pub const DOMAIN: &str = "conformance";

/// The permission every conformance tool requires (the built-in `admin` role has it).
pub const PERMISSION: &str = "conformance.test";

switchboard_core::domain! {
    /// The MCP conformance suite's reference tools. For `switchboard serve --conformance` only.
    pub Conformance { name: "conformance" }
}

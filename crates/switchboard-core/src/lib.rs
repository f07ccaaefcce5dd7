#![doc = include_str!("../README.md")]

pub mod ask;
mod category;
mod content;
mod context;
pub mod digest;
mod doc_text;
mod domain;
mod error;
mod error_record;
mod grants;
mod ids;
mod page;
mod policy;
mod progress;
mod prompt;
mod resource;
pub mod schema;
mod tool;
mod tool_context;
mod workflow;

pub use category::{Category, UnknownCategory};
pub use content::{CONTENT_SCHEMA_MARKER, ContentBlock, EmbeddedResource, ToolContent};
pub use context::{CallContext, CallContextBuilder, Caller, Initiator, REQUIRED_CONTEXT_FIELDS};
pub use digest::{Digest, DigestError, digest_json, digest_of};
pub use domain::{
    Domain, DomainCell, DomainEntry, DomainWriter, ErasedCell, StateRef, WriteOp, linked_domains,
};
pub use error::{ErrorKind, FieldError, InvokeError, ToolError, UnknownErrorKind};
pub use error_record::InvalidErrorRecord;
pub use grants::{DefaultGrantsEntry, linked_default_grants};
pub use ids::{
    ActionId, AgentType, CorrelationId, ID_FORMAT, IdempotencyKey, MAX_ID_LEN, MAX_TAG_LEN, OrgId,
    ProjectId, ProposalId, Role, SessionId, TAG_FORMAT, ThreadId, UserId, is_valid_id,
    is_valid_tag, mint_id,
};
pub use page::{
    Action, AvailableFn, BindFn, LoadFn, LoadedPage, NextFn, Page, PageAction, PageEntry,
    PageError, PageLoader, PageSpec, ToolInvoker, linked_pages,
};
pub use policy::{GateFn, ScopeField, ToolPolicyEntry, linked_policies};
pub use progress::{Progress, ProgressNotifier, ProgressSink};
pub use prompt::{
    CompleteFn, Prompt, PromptArgument, PromptDescriptor, PromptEntry, PromptError, PromptMessage,
    PromptRole, PromptSpec, PromptStateOf, RenderFn, RenderedPrompt, linked_prompts, prompt_scope,
};
pub use resource::{ResourceSpec, linked_resources};
pub use schema::{ToolDescriptor, ToolOrigin};
pub use switchboard_macros::{ToolInput, derives, tool};
pub use tool::{
    BoxFuture, ErasedInput, ErasedOutput, IntoToolResult, NoInput, OutputDecoder, SourceLocation,
    StateOf, TaskSupport, Tool, ToolEntry, ToolInput, ToolOutput, ToolSpec, decode_typed,
    linked_tools, validate_typed,
};
pub use tool_context::{ActionKey, CallScope, ToolContext};
pub use workflow::{WorkflowSpec, linked_workflows};

/// Re-exports for the code `#[tool]` and `domain!` generate, so that domain crates need
/// neither `inventory` nor `schemars` paths of their own. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use core::{concat, stringify};
    pub use inventory;
    pub use std::boxed::Box;
    pub use std::time::Duration;
    // What `#[switchboard::derives(...)]` derives through.
    pub use schemars;
    pub use serde;
    pub use validator;

    pub use crate::tool::{NoOutputDecoder, OutputDecoding};

    /// The initial state of a domain declared without one.
    pub const fn no_state() {}

    /// `name`, if it is a valid domain name (1 to 32 characters from `[a-z0-9_]`); a compile
    /// error otherwise, since `domain!` evaluates it as a constant.
    pub const fn domain_name(name: &'static str) -> &'static str {
        let bytes = name.as_bytes();
        assert!(
            !bytes.is_empty() && bytes.len() <= 32,
            "a domain name has 1 to 32 characters"
        );
        let mut index = 0;
        while index < bytes.len() {
            let byte = bytes[index];
            assert!(
                byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_',
                "a domain name uses only the characters [a-z0-9_]"
            );
            index += 1;
        }
        name
    }

    /// The bytes of `<domain>_<function>`, a tool's default name, `N` long; a compile error if
    /// it is longer than 64 bytes, since `#[tool]` evaluates it as a constant.
    pub const fn tool_name<const N: usize>(domain: &str, function: &str) -> [u8; N] {
        assert!(
            N <= 64,
            "the tool's default name `<domain>_<function>` is longer than 64 bytes: give it a shorter `name = \"...\"`"
        );
        let mut name = [b'_'; N];
        let mut index = 0;
        while index < domain.len() {
            name[index] = domain.as_bytes()[index];
            index += 1;
        }
        let mut index = 0;
        while index < function.len() {
            name[domain.len() + 1 + index] = function.as_bytes()[index];
            index += 1;
        }
        name
    }

    /// A tool name's bytes as text. They are ASCII: a domain name and a Rust identifier.
    pub const fn tool_name_str(bytes: &'static [u8]) -> &'static str {
        match core::str::from_utf8(bytes) {
            Ok(name) => name,
            Err(_) => panic!("a tool name is ASCII"),
        }
    }

    /// A tool function's return type, checked: `IntoToolResult` with a `ToolOutput` success
    /// type. `#[tool]` names the output and converts the result through this trait, with the
    /// spans of the user's return type, so a wrong return type is reported at that type with
    /// the message of whichever of the two traits it misses. No `do_not_recommend` here: that
    /// would hide which one.
    pub trait ToolReturn {
        /// The success type.
        type Output: crate::ToolOutput;
        /// Converts into the runtime's result.
        fn into_tool_result(self) -> Result<Self::Output, crate::ToolError>;
    }

    impl<R> ToolReturn for R
    where
        R: crate::IntoToolResult,
        R::Output: crate::ToolOutput,
    {
        type Output = R::Output;

        fn into_tool_result(self) -> Result<Self::Output, crate::ToolError> {
            crate::IntoToolResult::into_tool_result(self)
        }
    }
}

#![doc = include_str!("../README.md")]

mod category;
mod content;
mod context;
pub mod digest;
mod domain;
mod error;
mod error_record;
mod grants;
mod ids;
mod policy;
mod progress;
pub mod schema;
mod tool;

pub use category::{Category, UnknownCategory};
pub use content::{CONTENT_SCHEMA_MARKER, ContentBlock, EmbeddedResource, ToolContent};
pub use context::{CallContext, CallContextBuilder, Caller, Initiator, REQUIRED_CONTEXT_FIELDS};
pub use digest::{Digest, DigestError, digest_json, digest_of};
pub use domain::{
    DomainCell, DomainEntry, DomainState, DomainWriter, StateRef, ToolContext, WriteOp,
    linked_domains,
};
pub use error::{ErrorKind, FieldError, InvokeError, ToolError, UnknownErrorKind};
pub use error_record::InvalidErrorRecord;
pub use grants::{DefaultGrantsEntry, linked_default_grants};
pub use ids::{
    ActionId, AgentType, CorrelationId, ID_FORMAT, IdempotencyKey, MAX_ID_LEN, OrgId, ProjectId,
    ProposalId, Role, SessionId, ThreadId, UserId, is_valid_id, mint_id,
};
pub use policy::{GateFn, ScopeField, ToolPolicyEntry, linked_policies};
pub use progress::{Progress, ProgressNotifier, ProgressSink};
pub use schema::{ToolDescriptor, ToolOrigin};
pub use switchboard_macros::{ToolInput, tool};
pub use tool::{
    BoxFuture, ErasedInput, IntoToolResult, NoInput, SourceLocation, Tool, ToolEntry, ToolInput,
    ToolOutput, ToolSpec, decode_typed, linked_tools, validate_typed,
};

/// Re-exports for the code `#[tool]` and `domain!` generate, so that domain crates need
/// neither `inventory` nor `schemars` paths of their own. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use core::{concat, stringify};
    pub use inventory;
    pub use std::boxed::Box;
    pub use std::time::Duration;

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

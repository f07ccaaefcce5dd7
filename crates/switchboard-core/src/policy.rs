//! Tool policies: what a domain declares about one of its tools beyond `#[tool]`.
//!
//! A policy can say that a mutating tool needs scope ids in the call context (a thread, a
//! project), and can attach a *gate*: an async check the runtime runs after the input is
//! validated and before the mutation context is checked, with the tool's validated input and
//! a read-only view of the domain ("the shift's week is not locked", "the idea is in the right
//! phase"). A gate refuses by returning a [`ToolError`] (a stable code and a message), which
//! the caller receives as `gate_refused`.
//!
//! Policies are declared with [`tool_policy!`](crate::tool_policy) next to the tool and
//! collected by `inventory`, like tools. The registry attaches them when it builds its table and
//! refuses to start if a policy names a tool that does not exist, or if a tool has two: a policy
//! cannot silently drift away from its tool.

use std::any::Any;

use crate::{
    context::Caller,
    error::ToolError,
    tool::{BoxFuture, SourceLocation},
    tool_context::CallScope,
};

/// A scope id a mutating tool can require in the call context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeField {
    /// `CallContext::thread_id`.
    ThreadId,
    /// `CallContext::project_id`.
    ProjectId,
}

impl ScopeField {
    /// The context field's name, as errors report it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ScopeField::ThreadId => "thread_id",
            ScopeField::ProjectId => "project_id",
        }
    }

    /// Whether `caller` carries this id.
    pub fn present_in(self, caller: &Caller) -> bool {
        match self {
            ScopeField::ThreadId => caller.thread_id.is_some(),
            ScopeField::ProjectId => caller.project_id.is_some(),
        }
    }
}

/// A gate, erased: the generated wrapper turns the scope into the tool's typed context and
/// downcasts the tool's validated input, which arrives as `&dyn Any`. The scope's category is
/// `read`, so a gate cannot write.
pub type GateFn =
    for<'a> fn(CallScope, &'a (dyn Any + Send + Sync)) -> BoxFuture<'a, Result<(), ToolError>>;

/// A policy declared with [`tool_policy!`](crate::tool_policy).
#[derive(Debug)]
pub struct ToolPolicyEntry {
    /// The tool it applies to.
    pub tool: &'static str,
    /// The scope ids a mutating call of the tool needs.
    pub requires: &'static [ScopeField],
    /// The gate, if any.
    pub gate: Option<GateFn>,
    /// Where the policy is declared.
    pub location: SourceLocation,
}

inventory::collect!(ToolPolicyEntry);

/// Every policy linked into this binary, in unspecified order.
pub fn linked_policies() -> impl Iterator<Item = &'static ToolPolicyEntry> {
    inventory::iter::<ToolPolicyEntry>.into_iter()
}

/// Declares a tool's policy: the scope ids its mutating calls need, a gate, or both.
///
/// The gate is an `async fn(&ToolContext<State>, &Input) -> Result<(), ToolError>` where
/// `State` is the state of the tool's domain and `Input` the tool's input type; it reads the
/// domain's state through the context and cannot write.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use switchboard_core::{ToolContext, ToolError, ToolInput, tool};
/// use validator::Validate;
///
/// #[derive(Clone, Default)]
/// pub struct IdeasState { pub frozen: bool }
/// switchboard_core::domain! {
///     /// Ideas.
///     pub Ideas { name: "ideas", state: IdeasState = IdeasState::default }
/// }
///
/// #[derive(Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
/// pub struct RenameInput { pub title: String }
///
/// /// Renames the idea.
/// #[tool(domain = Ideas, category = execute, permission = "ideas.rename")]
/// async fn rename(
///     ctx: &ToolContext<IdeasState>,
///     input: RenameInput,
/// ) -> Result<String, ToolError> {
///     Ok(input.title)
/// }
///
/// async fn not_frozen(
///     ctx: &ToolContext<IdeasState>,
///     _input: &RenameInput,
/// ) -> Result<(), ToolError> {
///     if ctx.state().frozen {
///         return Err(ToolError::new("idea_frozen", "the idea is frozen"));
///     }
///     Ok(())
/// }
///
/// switchboard_core::tool_policy! {
///     tool: Rename,
///     requires: [ThreadId],
///     gate: not_frozen,
/// }
/// ```
#[macro_export]
macro_rules! tool_policy {
    (tool: $tool:ty, requires: [$($field:ident),* $(,)?], gate: $gate:path $(,)?) => {
        $crate::__tool_policy_submit!($tool, [$($field),*], ::core::option::Option::Some(
            $crate::__tool_policy_gate!($tool, $gate)
        ));
    };
    (tool: $tool:ty, gate: $gate:path $(,)?) => {
        $crate::__tool_policy_submit!($tool, [], ::core::option::Option::Some(
            $crate::__tool_policy_gate!($tool, $gate)
        ));
    };
    (tool: $tool:ty, requires: [$($field:ident),* $(,)?] $(,)?) => {
        $crate::__tool_policy_submit!($tool, [$($field),*], ::core::option::Option::None);
    };
}

/// Submits a [`ToolPolicyEntry`]. Not a public API: use [`tool_policy!`](crate::tool_policy).
#[doc(hidden)]
#[macro_export]
macro_rules! __tool_policy_submit {
    ($tool:ty, [$($field:ident),*], $gate:expr) => {
        $crate::__private::inventory::submit! {
            $crate::ToolPolicyEntry {
                tool: <$tool as $crate::Tool>::SPEC.name,
                requires: &[$($crate::ScopeField::$field),*],
                gate: $gate,
                location: $crate::SourceLocation { file: ::core::file!(), line: ::core::line!() },
            }
        }
    };
}

/// The erased wrapper of a gate. Not a public API: use [`tool_policy!`](crate::tool_policy).
#[doc(hidden)]
#[macro_export]
macro_rules! __tool_policy_gate {
    ($tool:ty, $gate:path) => {{
        fn __switchboard_gate<'a>(
            scope: $crate::CallScope,
            input: &'a (dyn ::core::any::Any + ::core::marker::Send + ::core::marker::Sync),
        ) -> $crate::BoxFuture<'a, ::core::result::Result<(), $crate::ToolError>> {
            $crate::__private::Box::pin(async move {
                let ctx = scope.into_context::<$crate::StateOf<$tool>>()?;
                match input.downcast_ref::<<$tool as $crate::Tool>::Input>() {
                    ::core::option::Option::Some(input) => $gate(&ctx, input).await,
                    ::core::option::Option::None => {
                        ::core::result::Result::Err($crate::ToolError::new(
                            "input_type_mismatch",
                            "a gate was handed the input of another tool",
                        ))
                    }
                }
            })
        }
        __switchboard_gate as $crate::GateFn
    }};
}

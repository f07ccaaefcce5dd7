//! Prompts: messages a domain offers to start a conversation with, filled in from typed
//! arguments and the domain's state.
//!
//! A tool is something a model calls; a prompt is something a person picks ("plan next
//! week"), whose messages the client then hands to its model. A domain declares prompts next
//! to its tools, the same way: a type implementing [`Prompt`] (a [`PromptSpec`] with its
//! name, description and permission, an arguments type, and an async `render`) and one
//! [`prompt!`](crate::prompt!) line that registers it at link time. The registry collects the
//! prompts of the domains it hosts, lists them to the callers whose roles grant their
//! permission, and renders one for a caller (MCP's `prompts/list`, `prompts/get` and
//! `completion/complete`).
//!
//! The arguments' type derives `Deserialize` and `JsonSchema`; the argument list MCP clients
//! see (name, description, required) is derived from its schema's top-level properties. MCP
//! prompt arguments are strings on the wire, so each property must describe a string (see
//! [`PromptEntry::descriptor`]); the registry refuses any other at start. An enum's values
//! complete by themselves, and [`Prompt::complete`] completes any argument from the state.
//!
//! Rendering reads and never writes: the body gets a [`ToolContext`] of category `read` over
//! its domain's state ([`ToolContext::write`] refuses), and the verified caller, whose
//! organisation comes from the call context only. Through it the body may ask the client
//! ([`ToolContext::elicit`], [`ToolContext::sample`]) as a tool does, with the caller's
//! [`ClientLink`](crate::ask::ClientLink): when the client answers in a later request (MCP's
//! `input_required` rounds) the body runs again from the start, so it asks before it renders.

mod arguments;

use std::{any::TypeId, fmt, future::Future, sync::Arc};

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    category::Category,
    content::ContentBlock,
    domain::Domain,
    error::ToolError,
    ids::Role,
    schema,
    tool::{BoxFuture, SourceLocation},
    tool_context::{CallScope, ToolContext},
};

/// Everything a prompt declares about itself, known at compile time. Build it with
/// [`prompt_spec!`](crate::prompt_spec!), which fills in the domain and the location.
#[derive(Debug, Clone, Copy)]
pub struct PromptSpec {
    /// Unique name among prompts, `^[a-zA-Z0-9_-]{1,64}$`, by convention `<domain>_<name>`.
    pub name: &'static str,
    /// A short title for people (MCP `title`), if declared.
    pub title: Option<&'static str>,
    /// What the prompt is for: what a person reads to pick it.
    pub description: &'static str,
    /// The name of the domain whose state it renders from.
    pub domain: &'static str,
    /// The permission a caller's roles must grant to see and render it.
    pub permission: &'static str,
    /// Where it is declared.
    pub location: SourceLocation,
}

/// Who says a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PromptRole {
    /// The person (what the model is asked).
    User,
    /// The model (an answer given in advance, to steer the next one).
    Assistant,
}

/// One message of a rendered prompt: a role and a content block (text, an image, audio or an
/// embedded resource), serialised as MCP's `PromptMessage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptMessage {
    /// Who says it.
    pub role: PromptRole,
    /// What is said.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A message of the user.
    pub fn user(content: ContentBlock) -> Self {
        Self {
            role: PromptRole::User,
            content,
        }
    }

    /// A message of the assistant.
    pub fn assistant(content: ContentBlock) -> Self {
        Self {
            role: PromptRole::Assistant,
            content,
        }
    }

    /// A text message of the user.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::user(ContentBlock::text(text))
    }

    /// A text message of the assistant.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::assistant(ContentBlock::text(text))
    }
}

/// A prompt rendered for a caller: its description and its messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RenderedPrompt {
    /// The prompt's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

/// The state of prompt `P`'s domain.
pub type PromptStateOf<P> = <<P as Prompt>::Domain as Domain>::State;

/// A prompt: a spec, typed arguments, a body rendered from them, and optional completions.
///
/// Register it with [`prompt!`](crate::prompt!).
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use switchboard_core::{Prompt, PromptMessage, PromptSpec, ToolContext, ToolError};
///
/// switchboard_core::domain! {
///     /// Says hello.
///     pub Greetings { name: "greetings" }
/// }
///
/// #[derive(Deserialize, JsonSchema)]
/// pub struct GreetArgs {
///     /// Whom to greet.
///     pub name: String,
/// }
///
/// pub struct Greet;
///
/// impl Prompt for Greet {
///     type Domain = Greetings;
///     type Args = GreetArgs;
///     const SPEC: PromptSpec = switchboard_core::prompt_spec! {
///         domain: Greetings,
///         name: "greet",
///         description: "Asks the model for a warm greeting.",
///         permission: "greetings.read",
///     };
///
///     async fn render(
///         _ctx: &ToolContext,
///         args: GreetArgs,
///     ) -> Result<Vec<PromptMessage>, ToolError> {
///         Ok(vec![PromptMessage::user_text(format!(
///             "Write a warm greeting for {}.",
///             args.name
///         ))])
///     }
/// }
///
/// switchboard_core::prompt!(Greet);
/// assert_eq!(Greet::SPEC.name, "greetings_greet");
/// ```
pub trait Prompt: Send + Sync + 'static {
    /// The domain whose state it renders from.
    type Domain: Domain;
    /// Its arguments: a struct whose fields are strings, string enums, string-shaped types
    /// (dates, ids) or `Option`s of these. [`NoInput`](crate::NoInput) for none.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// Its declared metadata.
    const SPEC: PromptSpec;

    /// The messages, for the caller of `ctx` (a read-only context over the domain's state)
    /// with `args`. A failure reaches the caller as a render failure with this error.
    fn render(
        ctx: &ToolContext<PromptStateOf<Self>>,
        args: Self::Args,
    ) -> impl Future<Output = Result<Vec<PromptMessage>, ToolError>> + Send;

    /// Suggested values for `argument` that fit what the caller typed so far (`value`), best
    /// first. None by default; an enum argument completes by itself without this.
    fn complete(
        ctx: &ToolContext<PromptStateOf<Self>>,
        argument: &str,
        value: &str,
    ) -> Vec<String> {
        let _ = (ctx, argument, value);
        Vec::new()
    }
}

/// One argument of a prompt, as MCP lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptArgument {
    /// Its name: a field of the arguments' type.
    pub name: String,
    /// The field's doc comment, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the prompt cannot render without it.
    pub required: bool,
    /// The values an enum argument takes, sorted (empty for a free string).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// What a prompt is, to whoever lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptDescriptor {
    /// Its name.
    pub name: String,
    /// A title for people, if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    pub description: String,
    /// Its domain.
    pub domain: String,
    /// The permission it needs.
    pub permission: String,
    /// Its arguments, sorted by name.
    pub arguments: Vec<PromptArgument>,
}

/// Renders a prompt from its scope and its (schema-checked) arguments as a JSON object.
pub type RenderFn =
    fn(CallScope, Value) -> BoxFuture<'static, Result<Vec<PromptMessage>, PromptError>>;
/// Completes an argument of a prompt: `(scope, argument, value)`.
pub type CompleteFn = fn(CallScope, &str, &str) -> Result<Vec<String>, ToolError>;

/// The erased face of a linked prompt, collected by `inventory`.
pub struct PromptEntry {
    /// The declared metadata.
    pub spec: PromptSpec,
    /// JSON Schema (2020-12) of its arguments.
    pub args_schema: fn() -> Schema,
    /// Renders it.
    pub render: RenderFn,
    /// Completes one of its arguments from the state.
    pub complete: CompleteFn,
    /// The type of the domain cell it expects (`DomainCell<State>`).
    pub cell_type: fn() -> TypeId,
}

impl PromptEntry {
    /// The entry for prompt `P`. Const, so [`prompt!`](crate::prompt!) can hand it to
    /// `inventory`.
    pub const fn of<P: Prompt>() -> Self {
        PromptEntry {
            spec: P::SPEC,
            args_schema: schema::schema_of::<P::Args>,
            render: render_erased::<P>,
            complete: complete_erased::<P>,
            cell_type: TypeId::of::<crate::DomainCell<PromptStateOf<P>>>,
        }
    }

    /// Its descriptor, with the argument list derived from its arguments' schema; why not,
    /// when a property of that schema is not a string (prompt arguments are strings on the
    /// wire: `String`, a string enum, a type that deserializes from a string, or an `Option`
    /// of one) or the arguments' type is not a struct.
    pub fn descriptor(&self) -> Result<PromptDescriptor, String> {
        let arguments = arguments::from_schema(&(self.args_schema)().to_value())?;
        Ok(PromptDescriptor {
            name: self.spec.name.to_owned(),
            title: self.spec.title.map(str::to_owned),
            description: self.spec.description.to_owned(),
            domain: self.spec.domain.to_owned(),
            permission: self.spec.permission.to_owned(),
            arguments,
        })
    }
}

impl fmt::Debug for PromptEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptEntry")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

inventory::collect!(PromptEntry);

/// Every prompt linked into this binary, in unspecified order.
pub fn linked_prompts() -> impl Iterator<Item = &'static PromptEntry> {
    inventory::iter::<PromptEntry>.into_iter()
}

/// Decodes the arguments and renders `P` in its typed context.
fn render_erased<P: Prompt>(
    scope: CallScope,
    args: Value,
) -> BoxFuture<'static, Result<Vec<PromptMessage>, PromptError>> {
    Box::pin(async move {
        let prompt = P::SPEC.name;
        let args: P::Args = serde_path_to_error::deserialize(args).map_err(|error| {
            let argument = error.path().to_string();
            PromptError::InvalidArgument {
                prompt: prompt.to_owned(),
                argument: if argument == "." {
                    String::new()
                } else {
                    argument
                },
                reason: error.into_inner().to_string(),
            }
        })?;
        let failed = |error: ToolError| PromptError::RenderFailed {
            prompt: prompt.to_owned(),
            error,
        };
        let ctx = scope.into_context::<PromptStateOf<P>>().map_err(failed)?;
        P::render(&ctx, args).await.map_err(failed)
    })
}

fn complete_erased<P: Prompt>(
    scope: CallScope,
    argument: &str,
    value: &str,
) -> Result<Vec<String>, ToolError> {
    let ctx = scope.into_context::<PromptStateOf<P>>()?;
    Ok(P::complete(&ctx, argument, value))
}

/// The scope a registry renders prompt `name` in for `caller`: a `read` over `domain`.
pub fn prompt_scope(caller: crate::Caller, name: &str, domain: crate::ErasedCell) -> CallScope {
    CallScope::new(caller, Arc::from(name), Category::Read, domain)
}

/// Why a prompt could not be listed, rendered or completed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// No prompt of that name is served here.
    #[error("no prompt is named `{name}`{}", did_you_mean(.similar))]
    NotFound {
        /// The name asked for.
        name: String,
        /// Prompts with a similar name.
        similar: Vec<String>,
    },
    /// The call context lacks ids every request needs.
    #[error("the call context is missing {}; the caller must supply them", .fields.join(", "))]
    MissingContext {
        /// The missing fields.
        fields: Vec<&'static str>,
    },
    /// A required argument was not given.
    #[error("`{prompt}` needs the argument `{argument}`; give it a value")]
    MissingArgument {
        /// The prompt.
        prompt: String,
        /// The argument.
        argument: String,
    },
    /// An argument is unknown, or its value does not fit.
    #[error("`{prompt}`'s argument `{argument}` is not valid: {reason}")]
    InvalidArgument {
        /// The prompt.
        prompt: String,
        /// The argument (empty when the arguments as a whole are wrong).
        argument: String,
        /// What is wrong.
        reason: String,
    },
    /// None of the caller's roles grants the prompt's permission.
    #[error(
        "`{prompt}` needs the permission `{permission}`, which none of the roles [{}] grants; \
         ask an administrator for a role that does",
        join_roles(.roles)
    )]
    PermissionDenied {
        /// The prompt.
        prompt: String,
        /// The permission it needs.
        permission: String,
        /// The caller's roles.
        roles: Vec<Role>,
    },
    /// The prompt's body failed, panicked or ran out of time.
    #[error("`{prompt}` could not be rendered: {error}")]
    RenderFailed {
        /// The prompt.
        prompt: String,
        /// What went wrong.
        error: ToolError,
    },
}

fn join_roles(roles: &[Role]) -> String {
    roles
        .iter()
        .map(Role::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn did_you_mean(similar: &[String]) -> String {
    if similar.is_empty() {
        String::new()
    } else {
        format!("; did you mean `{}`?", similar.join("`, `"))
    }
}

impl PromptError {
    /// A stable code for scripts and transports to match on.
    pub fn kind(&self) -> &'static str {
        match self {
            PromptError::NotFound { .. } => "prompt_not_found",
            PromptError::MissingContext { .. } => "missing_context",
            PromptError::MissingArgument { .. } => "missing_argument",
            PromptError::InvalidArgument { .. } => "invalid_argument",
            PromptError::PermissionDenied { .. } => "permission_denied",
            PromptError::RenderFailed { .. } => "render_failed",
        }
    }
}

/// A [`PromptSpec`] with its domain and location filled in. `name` is joined to the domain's
/// name (`roster` + `plan_next_week` → `roster_plan_next_week`); `full_name` is taken as it
/// is. `title` is optional.
///
/// ```ignore
/// const SPEC: PromptSpec = switchboard_core::prompt_spec! {
///     domain: Roster,
///     name: "plan_next_week",
///     title: "Plan next week",
///     description: "States next week's shifts and open slots and asks for a plan.",
///     permission: "roster.shifts.read",
/// };
/// ```
#[macro_export]
macro_rules! prompt_spec {
    (
        domain: $domain:ty,
        name: $name:literal,
        $(title: $title:expr,)?
        description: $description:expr,
        permission: $permission:expr $(,)?
    ) => {
        $crate::__prompt_spec!(
            $domain,
            {
                const DOMAIN: &str = <$domain as $crate::Domain>::NAME;
                const LEN: usize = DOMAIN.len() + 1 + $name.len();
                const NAME: [u8; LEN] = $crate::__private::tool_name::<LEN>(DOMAIN, $name);
                $crate::__private::tool_name_str(&NAME)
            },
            [$($title)?],
            $description,
            $permission
        )
    };
    (
        domain: $domain:ty,
        full_name: $name:expr,
        $(title: $title:expr,)?
        description: $description:expr,
        permission: $permission:expr $(,)?
    ) => {
        $crate::__prompt_spec!($domain, $name, [$($title)?], $description, $permission)
    };
}

/// The expansion of [`prompt_spec!`](crate::prompt_spec!). Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __prompt_spec {
    ($domain:ty, $name:expr, [$($title:expr)?], $description:expr, $permission:expr) => {
        $crate::PromptSpec {
            name: $name,
            title: $crate::__prompt_title!($($title)?),
            description: $description,
            domain: <$domain as $crate::Domain>::NAME,
            permission: $permission,
            location: $crate::SourceLocation {
                file: ::core::file!(),
                line: ::core::line!(),
            },
        }
    };
}

/// An optional title. Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __prompt_title {
    () => {
        ::core::option::Option::None
    };
    ($title:expr) => {
        ::core::option::Option::Some($title)
    };
}

/// Registers a prompt at link time, as `#[tool]` does for a tool.
///
/// ```ignore
/// switchboard_core::prompt!(PlanNextWeek);
/// ```
#[macro_export]
macro_rules! prompt {
    ($prompt:ty) => {
        $crate::__private::inventory::submit! {
            $crate::PromptEntry::of::<$prompt>()
        }
    };
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{CallContext, DomainCell, ErasedCell, NoInput};

    crate::domain! {
        /// Test prompts.
        Prompting { name: "prompting", state: u32 = initial }
    }

    fn initial() -> u32 {
        7
    }

    #[derive(Deserialize, JsonSchema)]
    struct CountArgs {
        /// What to count.
        thing: String,
    }

    struct Count;

    impl Prompt for Count {
        type Domain = Prompting;
        type Args = CountArgs;
        const SPEC: PromptSpec = crate::prompt_spec! {
            domain: Prompting,
            name: "count",
            title: "Count",
            description: "Counts things.",
            permission: "prompting.read",
        };

        async fn render(
            ctx: &ToolContext<u32>,
            args: CountArgs,
        ) -> Result<Vec<PromptMessage>, ToolError> {
            Ok(vec![PromptMessage::user_text(format!(
                "There are {} {} (may write: {}).",
                *ctx.state(),
                args.thing,
                ctx.may_write().is_ok()
            ))])
        }
    }

    struct Fixed;

    impl Prompt for Fixed {
        type Domain = Prompting;
        type Args = NoInput;
        const SPEC: PromptSpec = crate::prompt_spec! {
            domain: Prompting,
            full_name: "fixed_prompt",
            description: "Always the same.",
            permission: "prompting.read",
        };

        async fn render(
            _ctx: &ToolContext<u32>,
            _args: NoInput,
        ) -> Result<Vec<PromptMessage>, ToolError> {
            Ok(vec![PromptMessage::assistant_text("same")])
        }

        fn complete(ctx: &ToolContext<u32>, argument: &str, value: &str) -> Vec<String> {
            vec![format!("{argument}={value}/{}", *ctx.state())]
        }
    }

    fn scope(name: &str) -> CallScope {
        let caller = CallContext::builder()
            .org("acme")
            .user("u")
            .session("s")
            .correlation("c")
            .build()
            .verify()
            .expect("complete context");
        let cell: ErasedCell = DomainCell::standalone("prompting", 7_u32);
        prompt_scope(caller, name, cell)
    }

    #[test]
    fn names_join_the_domain_unless_given_whole() {
        assert_eq!(Count::SPEC.name, "prompting_count");
        assert_eq!(Count::SPEC.title, Some("Count"));
        assert_eq!(Fixed::SPEC.name, "fixed_prompt");
        assert_eq!(Fixed::SPEC.title, None);
    }

    #[test]
    fn the_descriptor_lists_the_arguments() {
        let descriptor = PromptEntry::of::<Count>().descriptor().expect("strings");
        assert_eq!(
            descriptor.arguments,
            [PromptArgument {
                name: "thing".to_owned(),
                description: Some("What to count.".to_owned()),
                required: true,
                values: Vec::new(),
            }]
        );
    }

    #[test]
    fn a_render_reads_the_state_and_may_not_write() {
        let entry = PromptEntry::of::<Count>();
        let rendered = futures::executor::block_on((entry.render)(
            scope(entry.spec.name),
            json!({"thing": "apples"}),
        ));
        // A prompt renders as a read: its body may not write.
        assert_eq!(
            rendered,
            Ok(vec![PromptMessage::user_text(
                "There are 7 apples (may write: false)."
            )])
        );
        let fixed = PromptEntry::of::<Fixed>();
        let rendered =
            futures::executor::block_on((fixed.render)(scope("fixed_prompt"), json!({})))
                .expect("renders");
        assert_eq!(rendered, [PromptMessage::assistant_text("same")]);
    }

    #[test]
    fn an_argument_that_does_not_decode_is_named() {
        let fixed = PromptEntry::of::<Fixed>();
        let refused = futures::executor::block_on((fixed.render)(
            scope("fixed_prompt"),
            json!({"extra": "x"}),
        ))
        .expect_err("NoInput takes nothing");
        assert_eq!(refused.kind(), "invalid_argument");
    }

    #[test]
    fn completion_sees_the_state() {
        let fixed = PromptEntry::of::<Fixed>();
        let values = (fixed.complete)(scope("fixed_prompt"), "a", "b").expect("same state type");
        assert_eq!(values, ["a=b/7"]);
    }

    #[test]
    fn errors_name_what_to_fix() {
        let denied = PromptError::PermissionDenied {
            prompt: "p".to_owned(),
            permission: "x.read".to_owned(),
            roles: vec![Role::from("viewer"), Role::from("guest")],
        };
        assert_eq!(
            denied.to_string(),
            "`p` needs the permission `x.read`, which none of the roles [viewer, guest] grants; \
             ask an administrator for a role that does"
        );
        let unknown = PromptError::NotFound {
            name: "q".to_owned(),
            similar: vec!["p".to_owned()],
        };
        assert_eq!(
            unknown.to_string(),
            "no prompt is named `q`; did you mean `p`?"
        );
        assert_eq!(unknown.kind(), "prompt_not_found");
    }

    #[test]
    fn messages_serialise_in_the_mcp_shape() {
        let message = PromptMessage::user(ContentBlock::image("iVBO", "image/png"));
        assert_eq!(
            serde_json::to_value(&message).expect("serialises"),
            json!({"role": "user", "content": {"type": "image", "data": "iVBO", "mimeType": "image/png"}})
        );
    }
}

//! What a tool is, to the type system and to the link-time registry.
//!
//! A tool author writes an `async fn` and puts `#[tool(...)]` on it. The macro generates a
//! marker type implementing [`Tool`] (the typed face: `Input`, `Output`, `call`) and submits a
//! [`ToolEntry`] to `inventory` (the erased face the registry stores: JSON in, JSON out). The
//! typed face lets Rust callers skip JSON entirely; the erased face lets the registry hold
//! tools of every type in one table, next to tools registered at run time.

use std::{
    any::{Any, TypeId},
    fmt,
    future::Future,
    pin::Pin,
    time::Duration,
};

use schemars::{JsonSchema, Schema};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use validator::Validate;

use crate::{
    category::Category,
    domain::Domain,
    error::{FieldError, ToolError},
    schema,
    tool_context::{CallScope, ToolContext},
};

/// A boxed, sendable future, as stored in erased tool entries.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A decoded, validated input whose type only the tool knows.
pub type ErasedInput = Box<dyn Any + Send + Sync>;

/// Where a linked tool was defined; duplicate-name errors name both places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceLocation {
    /// Source file, as `file!()` gives it.
    pub file: &'static str,
    /// Line of the `#[tool]` attribute.
    pub line: u32,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// Everything the `#[tool]` attribute declares, known at compile time.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// Unique name, `^[a-zA-Z0-9_-]{1,64}$`, by convention `<domain>_<action>`.
    pub name: &'static str,
    /// Short human-readable title (MCP `title`), if declared.
    pub title: Option<&'static str>,
    /// The name of the domain whose actor supervises the tool.
    pub domain: &'static str,
    /// What the tool may do.
    pub category: Category,
    /// The permission a caller's roles must grant.
    pub permission: &'static str,
    /// The doc comment: what agents read to decide whether to call the tool.
    pub description: &'static str,
    /// Utterance patterns the orchestrator routes to this tool (`"shifts from {from} to {to}"`).
    pub intents: &'static [&'static str],
    /// Labels that group tools across domains (`"billing"`, `"beta"`), each
    /// [a valid tag](crate::is_valid_tag): a running registry disables and enables tools by
    /// tag, as by name or domain.
    pub tags: &'static [&'static str],
    /// Overrides the runtime's default call timeout.
    pub timeout: Option<Duration>,
    /// Whether a call may run as a task the client polls (MCP's tasks extension).
    pub tasks: TaskSupport,
    /// Whether the tool asks its questions before its task begins, at
    /// [`ToolContext::begin_task`]: the server does not start the task when the call comes,
    /// and asks the questions before it in `input_required` rounds. Only with
    /// [`TaskSupport::Optional`] or [`TaskSupport::Required`].
    pub asks_before_task: bool,
    /// Where the tool is defined.
    pub location: SourceLocation,
}

/// Whether a tool's calls may run as tasks: started, answered at once with a task id, and
/// polled for their result (MCP's tasks extension, `execution.taskSupport` of a tool). A
/// transport without tasks calls every tool while the request waits, except a
/// [`Required`](TaskSupport::Required) one, which it refuses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// Every call runs while the request waits.
    #[default]
    Forbidden,
    /// A client that supports tasks gets one; any other client waits for the result.
    Optional,
    /// Only a client that supports tasks may call the tool.
    Required,
}

impl TaskSupport {
    /// Whether a call may run as a task.
    pub fn allows_tasks(self) -> bool {
        self != TaskSupport::Forbidden
    }

    /// The MCP name of the setting (`forbidden`, `optional`, `required`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// A type that can be a tool's input. Derive it with `#[derive(ToolInput)]`, which also
/// refuses a field named `org_id` at compile time.
///
/// Inputs are `Serialize` because a typed call is keyed and stored by its params: its
/// idempotency key is derived from them, a proposal keeps them for the approver, and the audit
/// record keeps their digest. They are `Sync` because a gate reads the input while the call
/// holds it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool input",
    label = "not a tool input",
    note = "derive it: `#[derive(Serialize, Deserialize, JsonSchema, Validate, ToolInput)]`"
)]
pub trait ToolInput:
    Serialize + DeserializeOwned + JsonSchema + Validate + Send + Sync + 'static
{
}

/// A type that can be a tool's output: serializable and described by a JSON Schema, and
/// `Clone`, because a retry of a typed mutation gets a copy of the first run's output back.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool output",
    label = "not a tool output",
    note = "tool outputs must implement `Clone`, `Serialize` and `JsonSchema`: `#[derive(Clone, Serialize, JsonSchema)]`"
)]
pub trait ToolOutput: Clone + Serialize + JsonSchema + Send + 'static {}

#[diagnostic::do_not_recommend]
impl<T: Clone + Serialize + JsonSchema + Send + 'static> ToolOutput for T {}

/// What a tool function may return: `Result<Output, E>` where `E` converts into [`ToolError`].
#[diagnostic::on_unimplemented(
    message = "a tool must return `Result<Output, E>` where `E: Into<ToolError>`, not `{Self}`",
    label = "unsupported tool return type",
    note = "implement `From<YourError> for ToolError` to return your domain's error type"
)]
pub trait IntoToolResult {
    /// The success type.
    type Output;
    /// Converts into the runtime's result.
    fn into_tool_result(self) -> Result<Self::Output, ToolError>;
}

#[diagnostic::do_not_recommend]
impl<T, E: Into<ToolError>> IntoToolResult for Result<T, E> {
    type Output = T;

    fn into_tool_result(self) -> Result<T, ToolError> {
        self.map_err(Into::into)
    }
}

/// The state of tool `T`'s domain.
pub type StateOf<T> = <<T as Tool>::Domain as Domain>::State;

/// The typed face of a tool, implemented by the marker type `#[tool]` generates.
pub trait Tool: Send + Sync + 'static {
    /// The domain the tool belongs to.
    type Domain: Domain;
    /// The input the tool takes.
    type Input: ToolInput;
    /// The output it returns on success.
    type Output: ToolOutput;
    /// Its declared metadata.
    const SPEC: ToolSpec;

    /// Runs the tool body. The runtime calls this after every check has passed.
    fn call(
        ctx: &ToolContext<StateOf<Self>>,
        input: Self::Input,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send;
}

/// The erased face of a linked tool, collected by `inventory` and stored by the registry.
pub struct ToolEntry {
    /// The declared metadata.
    pub spec: ToolSpec,
    /// JSON Schema (2020-12) of the input.
    pub input_schema: fn() -> Schema,
    /// JSON Schema (2020-12) of the output.
    pub output_schema: fn() -> Schema,
    /// Deserializes and validates params into the tool's input type.
    pub decode: fn(&Value) -> Result<ErasedInput, Vec<FieldError>>,
    /// Runs the tool on a decoded input and serializes its output.
    pub run: fn(CallScope, ErasedInput) -> BoxFuture<'static, Result<Value, ToolError>>,
    /// The marker type, so a typed call can prove it reached the tool it named.
    pub type_id: fn() -> TypeId,
    /// The type of the domain cell the tool expects (`DomainCell<State>`), so the registry can
    /// check at boot that its domain holds that state.
    pub cell_type: fn() -> TypeId,
    /// Rebuilds the tool's output from its JSON form, for a typed call answered by another
    /// registry; `None` when the output type does not implement `Deserialize`. `#[tool]` sets
    /// it ([`ToolEntry::with_output_decoder`]).
    pub decode_output: Option<OutputDecoder>,
}

/// Rebuilds a tool's output (boxed, as `T::Output`) from its JSON form, or says why it cannot.
pub type OutputDecoder = fn(Value) -> Result<ErasedOutput, String>;

/// A tool's output, its type erased.
pub type ErasedOutput = Box<dyn Any + Send>;

impl ToolEntry {
    /// The entry for tool `T`. Const, so the macro can hand it to `inventory::submit!`.
    pub const fn of<T: Tool>() -> Self {
        ToolEntry {
            spec: T::SPEC,
            input_schema: schema::schema_of::<T::Input>,
            output_schema: schema::schema_of::<T::Output>,
            decode: decode_input::<T>,
            run: run_erased::<T>,
            type_id: TypeId::of::<T>,
            cell_type: TypeId::of::<crate::DomainCell<StateOf<T>>>,
            decode_output: None,
        }
    }

    /// This entry, its output rebuilt from JSON by `decoder` (`None`: it cannot be). Const, so
    /// the macro can hand it to `inventory::submit!`.
    pub const fn with_output_decoder(self, decoder: Option<OutputDecoder>) -> Self {
        Self {
            decode_output: decoder,
            ..self
        }
    }
}

/// Picks a tool output's [`OutputDecoder`] where its type is concrete (the `#[tool]` expansion):
/// `<OutputDecoding<O>>::DECODER` is the inherent constant, `Some`, when `O` implements
/// `Deserialize`, and otherwise the [`NoOutputDecoder`] trait's `None`.
#[doc(hidden)]
#[derive(Debug)]
pub struct OutputDecoding<O>(std::marker::PhantomData<O>);

impl<O: DeserializeOwned + Send + 'static> OutputDecoding<O> {
    /// Decodes `O` from JSON.
    pub const DECODER: Option<OutputDecoder> = Some(decode_output::<O>);
}

/// The fallback of [`OutputDecoding`] for an output without `Deserialize`.
#[doc(hidden)]
pub trait NoOutputDecoder {
    /// No decoder.
    const DECODER: Option<OutputDecoder> = None;
}

impl<O> NoOutputDecoder for OutputDecoding<O> {}

fn decode_output<O: DeserializeOwned + Send + 'static>(
    output: Value,
) -> Result<ErasedOutput, String> {
    serde_json::from_value::<O>(output)
        .map(|output| Box::new(output) as ErasedOutput)
        .map_err(|error| error.to_string())
}

impl fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

inventory::collect!(ToolEntry);

/// Every tool linked into this binary, in unspecified order.
pub fn linked_tools() -> impl Iterator<Item = &'static ToolEntry> {
    inventory::iter::<ToolEntry>.into_iter()
}

/// Deserializes params into `T::Input` and runs its `validator` rules, reporting every error.
///
/// A value serde refuses is reported at its JSON Pointer; a field the input's type does not
/// take (`deny_unknown_fields`) is reported at the field itself, with the field probably meant.
pub fn decode_typed<I: ToolInput>(params: &Value) -> Result<I, Vec<FieldError>> {
    // Every call decodes its params; tracking the path costs an allocation per key, so it is
    // paid only to report a refusal, by decoding the refused value again.
    let input = match I::deserialize(params) {
        Ok(input) => input,
        Err(error) => {
            return Err(vec![
                match serde_path_to_error::deserialize::<_, I>(params) {
                    Err(tracked) => serde_field_error(&tracked),
                    Ok(_) => FieldError::new("", error.to_string()),
                },
            ]);
        }
    };
    validate_typed(&input)?;
    Ok(input)
}

/// The field error of a value serde refused, at its JSON Pointer.
fn serde_field_error(error: &serde_path_to_error::Error<serde_json::Error>) -> FieldError {
    use serde_path_to_error::Segment;
    // Each step's start in `pointer`, to cut the pointer back to a step's parent.
    let mut steps: Vec<(usize, String)> = Vec::new();
    let mut pointer = String::new();
    for segment in error.path() {
        let step = match segment {
            Segment::Seq { index } => index.to_string(),
            Segment::Map { key } => key.clone(),
            Segment::Enum { variant } => variant.clone(),
            // serde could not follow the value further: the pointer stops at its parent.
            Segment::Unknown => break,
        };
        steps.push((pointer.len(), step.clone()));
        pointer.push('/');
        pointer.push_str(&step.replace('~', "~0").replace('/', "~1"));
    }
    let message = error.inner().to_string();
    let Some((field, expected)) = unknown_field(&message) else {
        return FieldError::new(pointer, message);
    };
    // The path ends at the unknown key itself when serde got that far.
    let object_path = match steps.last() {
        Some((start, step)) if step == field => &pointer[..*start],
        _ => &pointer[..],
    };
    FieldError::unknown_field(object_path, field, expected)
}

/// The field and the fields expected, from serde's "unknown field `x`, expected `a` or `b`"
/// (none for "there are no fields"); `None` for any other message.
fn unknown_field(message: &str) -> Option<(&str, Vec<&str>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, expected) = rest.split_once("`, ")?;
    Some((field, expected.split('`').skip(1).step_by(2).collect()))
}

/// Runs `validator` rules on a typed input, reporting every error with its JSON Pointer.
pub fn validate_typed<I: Validate>(input: &I) -> Result<(), Vec<FieldError>> {
    input
        .validate()
        .map_err(|errors| schema::field_errors(&errors))
}

fn decode_input<T: Tool>(params: &Value) -> Result<ErasedInput, Vec<FieldError>> {
    decode_typed::<T::Input>(params).map(|input| Box::new(input) as ErasedInput)
}

fn run_erased<T: Tool>(
    scope: CallScope,
    input: ErasedInput,
) -> BoxFuture<'static, Result<Value, ToolError>> {
    Box::pin(async move {
        let ctx = scope.into_context::<StateOf<T>>()?;
        let input = input.downcast::<T::Input>().map_err(|_| {
            ToolError::new(
                "input_type_mismatch",
                format!("`{}` was handed an input of another tool", T::SPEC.name),
            )
        })?;
        let output = T::call(&ctx, *input).await?;
        serde_json::to_value(&output).map_err(|error| {
            ToolError::new(
                "output_not_serializable",
                format!(
                    "`{}` produced an output that is not JSON: {error}",
                    T::SPEC.name
                ),
            )
        })
    })
}

/// The input of a tool that takes no parameters. Accepts `{}` (and a missing params object).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

impl Validate for NoInput {
    fn validate(&self) -> Result<(), validator::ValidationErrors> {
        Ok(())
    }
}

impl ToolInput for NoInput {}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    /// One line of an order.
    #[derive(Debug, Serialize, Deserialize, JsonSchema, Validate)]
    #[serde(deny_unknown_fields)]
    struct Line {
        name: String,
        #[serde(default)]
        count: u32,
    }

    /// An order.
    #[derive(Debug, Serialize, Deserialize, JsonSchema, Validate)]
    #[serde(deny_unknown_fields)]
    struct Order {
        title: String,
        #[serde(default)]
        items: Vec<Line>,
    }

    impl ToolInput for Order {}

    fn errors_of(params: Value) -> Vec<(String, String)> {
        decode_typed::<Order>(&params)
            .expect_err("the params are refused")
            .into_iter()
            .map(|error| (error.path, error.reason))
            .collect()
    }

    #[test]
    fn an_unknown_field_is_reported_at_itself_with_the_field_probably_meant() {
        assert_eq!(
            errors_of(json!({"titel": "x"})),
            [(
                "/titel".to_owned(),
                "unknown field `titel`; did you mean `title`?".to_owned()
            )]
        );
        assert_eq!(
            errors_of(json!({"title": "x", "items": [{"nmae": "bolts"}]})),
            [(
                "/items/0/nmae".to_owned(),
                "unknown field `nmae`; did you mean `name`?".to_owned()
            )]
        );
        assert_eq!(
            errors_of(json!({"title": "x", "colour": "red"})),
            [(
                "/colour".to_owned(),
                "unknown field `colour`; the fields here are `items`, `title`".to_owned()
            )]
        );
    }

    #[test]
    fn a_refused_value_is_reported_at_its_pointer() {
        let errors = errors_of(json!({"title": "x", "items": [{"name": "a", "count": "many"}]}));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].0, "/items/0/count");
        assert!(errors[0].1.contains("invalid type"), "{errors:?}");
    }

    #[test]
    fn serdes_unknown_field_message_is_read_in_each_of_its_forms() {
        assert_eq!(
            unknown_field("unknown field `a`, expected `b`"),
            Some(("a", vec!["b"]))
        );
        assert_eq!(
            unknown_field("unknown field `a`, expected `b` or `c`"),
            Some(("a", vec!["b", "c"]))
        );
        assert_eq!(
            unknown_field("unknown field `a`, expected one of `b`, `c`, `d`"),
            Some(("a", vec!["b", "c", "d"]))
        );
        assert_eq!(
            unknown_field("unknown field `a`, there are no fields"),
            Some(("a", vec![]))
        );
        assert_eq!(unknown_field("missing field `a`"), None);
    }
}

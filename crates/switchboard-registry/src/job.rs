//! What differs between a JSON call and a typed call, behind two traits, so that the call path
//! (`invoke.rs`) and the mutation path (`mutation.rs`) are written once.
//!
//! A [`Request`] is what a caller handed in, before the input checks: JSON params
//! ([`JsonRequest`], for linked and run-time tools alike) or a typed input ([`TypedRequest`]).
//! Validating it gives a [`Job`]: the tool body ready to run, which also says how its params
//! are digested, proposed and audited, and how a mutation's first result is stored for retries
//! and rebuilt from storage.

use std::{
    any::{Any, TypeId},
    future::Future,
    sync::{Arc, Mutex},
};

use serde_json::Value;
use switchboard_approvals::StoredOutcome;
use switchboard_audit::{DigestError, digest_json};
use switchboard_core::{
    ActionId, CallScope, ErasedInput, FieldError, InvokeError, StateOf, Tool, ToolEntry, ToolError,
    validate_typed,
};

use crate::{
    audit::{Digested, digest_value},
    invoke::{domain_unavailable, not_found},
    table::{Handler, RegisteredTool, RuntimeTool},
};

/// A call's input as the caller gave it, before the input checks.
pub(crate) trait Request: Send {
    /// The tool body the input becomes once it is valid.
    type Job: Job;

    /// The JSON params, which must not name an `org_id`; `None` for a typed input, which
    /// cannot (`ToolInput` refuses such a field at compile time).
    fn params(&self) -> Option<&Value>;

    /// The input, as the call's audit record keeps it.
    fn audit_input(&self) -> Digested;

    /// Checks the input against `tool` (step "input" of the call path) and decodes it.
    fn validate(self, tool: &RegisteredTool) -> Result<Self::Job, InvokeError>;
}

/// A tool body ready to run, once the context exists.
///
/// Jobs own what they carry (`'static`): a mutation's job moves into a task of its own.
pub(crate) trait Job: Send + 'static {
    type Output: Send + 'static;

    /// Runs the tool body in `scope`. The future is declared `Send` so that every call's
    /// future is.
    fn run(
        self,
        scope: CallScope,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send + 'static;

    /// The validated input, as a gate sees it.
    fn gate_input(&self) -> &(dyn Any + Send + Sync);

    /// The JSON params, for a call that came as JSON.
    fn params(&self) -> Option<&Value>;

    /// The params, as a proposal stores them; refused if they cannot be written as JSON.
    fn proposal_params(&self, tool: &RegisteredTool) -> Result<Arc<Value>, InvokeError>;

    /// The params, as a call to a linked domain sends them; refused if this face cannot take
    /// the remote's JSON answer back.
    fn linked_params(&self, tool: &RegisteredTool) -> Result<Arc<Value>, InvokeError>;

    /// The output of a call to a linked domain, from the remote's JSON answer.
    fn decode_linked(tool: &RegisteredTool, output: Value) -> Result<Self::Output, InvokeError>;

    /// The output, as the call's audit record keeps it.
    fn audit_output(output: &Self::Output) -> Digested;

    /// The first result of a mutation, as retries will get it back.
    fn stored(action_id: ActionId, result: &Result<Self::Output, InvokeError>) -> StoredOutcome;

    /// A retry's answer, from the first result; `None` if this face cannot rebuild it (a
    /// typed retry of an action first run through JSON).
    fn replayed(stored: &StoredOutcome) -> Option<Result<Self::Output, InvokeError>>;
}

/// JSON params, as agents and transports send them.
pub(crate) struct JsonRequest {
    params: Arc<Value>,
}

impl JsonRequest {
    pub(crate) fn new(params: Value) -> Self {
        // A tool without parameters may be called with none at all.
        let params = match params {
            Value::Null => Value::Object(serde_json::Map::new()),
            other => other,
        };
        Self {
            params: Arc::new(params),
        }
    }
}

impl Request for JsonRequest {
    type Job = JsonJob;

    fn params(&self) -> Option<&Value> {
        Some(&self.params)
    }

    fn audit_input(&self) -> Digested {
        digest_json(&self.params)
    }

    /// The params against the compiled schema, then (a linked tool) serde and `validator`.
    fn validate(self, tool: &RegisteredTool) -> Result<JsonJob, InvokeError> {
        tool.schema_errors(&self.params)
            .map_err(|errors| invalid(tool, errors))?;
        let body = match &tool.handler {
            Handler::Linked(entry) => {
                let input = (entry.decode)(&self.params).map_err(|errors| invalid(tool, errors))?;
                JsonBody::Linked(entry, input)
            }
            Handler::Runtime(runtime) => JsonBody::Runtime(Arc::clone(runtime)),
        };
        Ok(JsonJob {
            params: self.params,
            body,
        })
    }
}

/// Valid JSON params and the body that runs on them.
pub(crate) struct JsonJob {
    params: Arc<Value>,
    body: JsonBody,
}

enum JsonBody {
    /// A linked tool, with its decoded input.
    Linked(&'static ToolEntry, ErasedInput),
    /// A run-time tool, which takes the params themselves.
    Runtime(Arc<dyn RuntimeTool>),
}

impl Job for JsonJob {
    type Output = Value;

    async fn run(self, scope: CallScope) -> Result<Value, ToolError> {
        match self.body {
            JsonBody::Linked(entry, input) => (entry.run)(scope, input).await,
            JsonBody::Runtime(tool) => {
                // The registry gives run-time tools stateless domains only.
                let ctx = scope.into_context::<()>()?;
                tool.call(&ctx, Arc::unwrap_or_clone(self.params)).await
            }
        }
    }

    fn gate_input(&self) -> &(dyn Any + Send + Sync) {
        match &self.body {
            JsonBody::Linked(_, input) => &**input,
            JsonBody::Runtime(_) => &*self.params,
        }
    }

    fn params(&self) -> Option<&Value> {
        Some(&self.params)
    }

    fn proposal_params(&self, _tool: &RegisteredTool) -> Result<Arc<Value>, InvokeError> {
        Ok(Arc::clone(&self.params))
    }

    fn linked_params(&self, _tool: &RegisteredTool) -> Result<Arc<Value>, InvokeError> {
        Ok(Arc::clone(&self.params))
    }

    /// The answer, if it fits the tool's output schema. One that does not is
    /// `remote_answer_invalid`, in doubt for a mutation (it may have run).
    fn decode_linked(tool: &RegisteredTool, output: Value) -> Result<Value, InvokeError> {
        let Some(validator) = &tool.output_validator else {
            return Ok(output);
        };
        let Some(first) = validator.iter_errors(&output).next() else {
            return Ok(output);
        };
        Err(answer_invalid(
            tool,
            &format!(
                "does not fit this tool's output schema (at `{}`: {first})",
                first.instance_path()
            ),
        ))
    }

    fn audit_output(output: &Value) -> Digested {
        digest_json(output)
    }

    fn stored(action_id: ActionId, result: &Result<Value, InvokeError>) -> StoredOutcome {
        StoredOutcome {
            action_id,
            result: result.clone(),
            typed: None,
        }
    }

    fn replayed(stored: &StoredOutcome) -> Option<Result<Value, InvokeError>> {
        Some(stored.result.clone())
    }
}

/// A typed input of tool `T`, as Rust services pass it.
pub(crate) struct TypedRequest<T: Tool>(pub(crate) T::Input);

impl<T: Tool> Request for TypedRequest<T> {
    type Job = TypedJob<T>;

    fn params(&self) -> Option<&Value> {
        None
    }

    fn audit_input(&self) -> Digested {
        digest_value(&self.0)
    }

    /// The tool's marker type (the name must lead to `T` itself), then the `validator` rules.
    fn validate(self, tool: &RegisteredTool) -> Result<TypedJob<T>, InvokeError> {
        if tool.type_id() != Some(TypeId::of::<T>()) {
            return Err(not_found(&tool.name, Vec::new()));
        }
        validate_typed(&self.0).map_err(|errors| invalid(tool, errors))?;
        Ok(TypedJob(self.0))
    }
}

/// A valid typed input of tool `T`.
pub(crate) struct TypedJob<T: Tool>(T::Input);

impl<T: Tool> Job for TypedJob<T> {
    type Output = T::Output;

    async fn run(self, scope: CallScope) -> Result<T::Output, ToolError> {
        let ctx = scope.into_context::<StateOf<T>>()?;
        T::call(&ctx, self.0).await
    }

    fn gate_input(&self) -> &(dyn Any + Send + Sync) {
        &self.0
    }

    fn params(&self) -> Option<&Value> {
        None
    }

    fn proposal_params(&self, tool: &RegisteredTool) -> Result<Arc<Value>, InvokeError> {
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            serde_json::to_value(&self.0).map_err(|error| DigestError::Serialize(error.to_string()))
        }))
        .unwrap_or(Err(DigestError::Panicked));
        written
            .map(Arc::new)
            .map_err(|error| unkeyable(tool, &error))
    }

    /// The input, as JSON; refused before anything is sent when the tool's output cannot be
    /// rebuilt from the JSON answer (its type does not implement `Deserialize`).
    fn linked_params(&self, tool: &RegisteredTool) -> Result<Arc<Value>, InvokeError> {
        output_decoder(tool)?;
        self.proposal_params(tool)
    }

    /// The output, rebuilt from the answer once it fits the tool's output schema.
    fn decode_linked(tool: &RegisteredTool, output: Value) -> Result<T::Output, InvokeError> {
        let decode = output_decoder(tool)?;
        let output = JsonJob::decode_linked(tool, output)?;
        decode(output)
            .ok()
            .and_then(|output| output.downcast::<T::Output>().ok())
            .map(|output| *output)
            .ok_or_else(|| answer_invalid(tool, "it does not decode to the tool's output type"))
    }

    fn audit_output(output: &T::Output) -> Digested {
        digest_value(output)
    }

    fn stored(action_id: ActionId, result: &Result<T::Output, InvokeError>) -> StoredOutcome {
        let (json, typed) = match result {
            Ok(output) => {
                // Outputs are `Serialize`; one that fails is kept as `null` (the typed copy
                // still replays it in this process).
                let json = serde_json::to_value(output).unwrap_or(Value::Null);
                let typed: switchboard_approvals::TypedOutput =
                    Arc::new(Mutex::new(output.clone()));
                (Ok(json), Some(typed))
            }
            Err(error) => (Err(error.clone()), None),
        };
        StoredOutcome {
            action_id,
            result: json,
            typed,
        }
    }

    fn replayed(stored: &StoredOutcome) -> Option<Result<T::Output, InvokeError>> {
        match &stored.result {
            Err(error) => Some(Err(error.clone())),
            Ok(_) => stored
                .typed
                .as_ref()
                .and_then(|typed| typed.downcast_ref::<Mutex<T::Output>>())
                .and_then(|output| output.lock().ok().map(|output| Ok(output.clone()))),
        }
    }
}

/// The refusal of a mutation whose input cannot be written as JSON: without it, the call can
/// be neither keyed for retries nor stored for an approver.
pub(crate) fn unkeyable(tool: &RegisteredTool, error: &DigestError) -> InvokeError {
    invalid(
        tool,
        vec![FieldError::new(
            "",
            format!(
                "{error}; a mutation's input must be JSON, to key its retries and store its proposal"
            ),
        )],
    )
}

/// How a linked tool's output is rebuilt from JSON for a typed call; refused with
/// `domain_unavailable` when its output type does not implement `Deserialize`.
fn output_decoder(tool: &RegisteredTool) -> Result<switchboard_core::OutputDecoder, InvokeError> {
    match &tool.handler {
        Handler::Linked(ToolEntry {
            decode_output: Some(decode),
            ..
        }) => Ok(*decode),
        _ => Err(domain_unavailable(
            tool,
            "it is served by another registry, whose JSON answer a typed call rebuilds into the \
             tool's output type, and that type does not implement `Deserialize`: derive \
             `Deserialize` on it, or call the tool with JSON params (`ToolRegistry::invoke`)",
        )),
    }
}

/// The error of a linked call whose answer is not the tool's output: `remote_answer_invalid`,
/// in doubt for a mutation (it may have run).
fn answer_invalid(tool: &RegisteredTool, why: &str) -> InvokeError {
    let error = ToolError::new(
        "remote_answer_invalid",
        format!(
            "the registry serving the `{}` domain answered with output that {why}; the two \
             registries link different versions of the tool: deploy the same version on both",
            tool.domain.name,
        ),
    );
    let error = if tool.category().mutates() {
        error.in_doubt()
    } else {
        error
    };
    InvokeError::ToolFailed {
        tool: tool.name.to_string(),
        error,
    }
}

fn invalid(tool: &RegisteredTool, errors: Vec<FieldError>) -> InvokeError {
    InvokeError::InvalidInput {
        tool: tool.name.to_string(),
        errors,
    }
}

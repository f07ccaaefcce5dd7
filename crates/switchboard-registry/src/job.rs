//! The tool body of one call, in its two faces: [`JsonJob`] (a linked tool's decoded input, or
//! a run-time tool's params) and [`TypedJob`] (a typed caller's input). The call path
//! (`invoke.rs`) and the mutation path (`mutation.rs`) run either through [`Job`], which also
//! says how a first result is stored for retries and rebuilt from storage.

use std::{
    any::Any,
    future::Future,
    sync::{Arc, Mutex},
};

use serde_json::Value;
use switchboard_approvals::StoredOutcome;
use switchboard_core::{
    ActionId, ErasedInput, InvokeError, Tool, ToolContext, ToolEntry, ToolError,
};

use crate::table::RuntimeTool;

/// A tool body ready to run, once the context exists.
///
/// Jobs own what they carry (`'static`), so the future `run` returns borrows only the context:
/// that keeps `invoke` and `call` futures `Send` for every lifetime (a `Self: 'a` bound here
/// would not be provable, rust-lang/rust#100013) without boxing the typed path.
pub(crate) trait Job: Send + 'static {
    type Output: Send + 'static;

    fn run(
        self,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<Self::Output, ToolError>> + Send + '_;

    /// The validated input, as a gate sees it.
    fn gate_input(&self) -> &(dyn Any + Send);

    /// The first result of a mutation, as retries will get it back.
    fn stored(action_id: ActionId, result: &Result<Self::Output, InvokeError>) -> StoredOutcome;

    /// A retry's answer, from the first result; `None` if this face cannot rebuild it (a
    /// typed retry of an action first run through JSON).
    fn replayed(stored: &StoredOutcome) -> Option<Result<Self::Output, InvokeError>>;
}

pub(crate) enum JsonJob {
    Linked(&'static ToolEntry, ErasedInput),
    /// Run-time tools take their params by value; the audit draft keeps the caller's copy.
    Runtime(Arc<dyn RuntimeTool>, Value),
}

impl Job for JsonJob {
    type Output = Value;

    async fn run(self, ctx: &ToolContext) -> Result<Value, ToolError> {
        match self {
            JsonJob::Linked(entry, input) => (entry.run)(ctx, input).await,
            JsonJob::Runtime(tool, params) => tool.call(ctx, params).await,
        }
    }

    fn gate_input(&self) -> &(dyn Any + Send) {
        match self {
            JsonJob::Linked(_, input) => &**input,
            JsonJob::Runtime(_, params) => params,
        }
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

pub(crate) struct TypedJob<T: Tool>(pub(crate) T::Input);

impl<T: Tool> Job for TypedJob<T> {
    type Output = T::Output;

    fn run(
        self,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<T::Output, ToolError>> + Send + '_ {
        T::call(ctx, self.0)
    }

    fn gate_input(&self) -> &(dyn Any + Send) {
        &self.0
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

#![doc = include_str!("../README.md")]

pub mod builder;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod definition;
pub mod expression;
pub mod file;
mod memory_store;
pub mod node;
pub mod render;
pub mod run;
pub mod store;
pub mod validate;

pub use builder::{NodeBuilder, WorkflowBuilder};
pub use definition::{
    Block, Branch, Compensation, Definition, Jitter, Mapping, Node, NodeId, NodeKind, NodePath,
    OnFailure, Retrier, RetryOn, WaitFor,
};
pub use expression::{EvaluationError, Expression, ExpressionError, Scope};
pub use file::{Format, WorkflowFile, json_schema, load, load_str, parse};
pub use memory_store::MemoryRunStore;
pub use node::{IllegalNodeTransition, NodeEvent, NodeState};
pub use render::{
    GraphFormat, RenderOptions, UnknownGraphFormat, render_definition, render_run, render_run_with,
};
pub use run::{CompensationCause, CompensationFailure, IllegalRunTransition, RunEvent, RunState};
pub use store::{
    Checkpoint, EventRecord, Fence, Lease, ParentStep, RunChange, RunFilter, RunId, RunRecord,
    RunStore, RunStoreError, StepAnswer, StepKey, StepQuestion, StepRecord, WorkflowEvent,
};
pub use validate::{
    DEFAULT_MAX_STEPS, MAX_FOREACH_ITEMS, ToolSignature, ToolSignatures, ValidationError,
    ValidationErrors, validate,
};

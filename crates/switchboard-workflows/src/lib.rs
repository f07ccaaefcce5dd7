#![doc = include_str!("../README.md")]

#[cfg(feature = "conformance")]
pub mod conformance;
pub mod definition;
pub mod expression;
mod memory_store;
pub mod node;
pub mod render;
pub mod run;
pub mod store;

pub use definition::{
    Block, Branch, Compensation, Definition, Jitter, Mapping, Node, NodeId, NodeKind, NodePath,
    OnFailure, Retrier, RetryOn, WaitFor,
};
pub use expression::{EvaluationError, Expression, ExpressionError, Scope};
pub use memory_store::MemoryRunStore;
pub use node::{IllegalNodeTransition, NodeEvent, NodeState};
pub use render::{
    GraphFormat, RenderOptions, UnknownGraphFormat, render_definition, render_run, render_run_with,
};
pub use run::{CompensationCause, CompensationFailure, IllegalRunTransition, RunEvent, RunState};
pub use store::{
    Checkpoint, EventRecord, ParentStep, RunChange, RunFilter, RunId, RunRecord, RunStore,
    RunStoreError, StepKey, StepRecord, WorkflowEvent,
};

#![doc = include_str!("../README.md")]

mod drive;
mod engine;
mod error;
mod exported;
mod mapping;
mod retry;

pub use engine::{
    Answered, DefinitionLoader, Engine, EngineOptions, HandOver, LeaseOptions, RunOutcome, StuckRun,
};
pub use error::{EngineError, StartError};
pub use exported::{
    ANSWER_PERMISSION, ANSWER_REFUSED, ANSWER_TOOL, EXPORTED_CALL_TIMEOUT, EXPORTED_DOMAIN,
    ExportError, ExportedWorkflow, UNKNOWN_RUN, WORKFLOW_FAILED, WORKFLOW_UNAVAILABLE,
    validate_exported,
};

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
    EXPORTED_CALL_TIMEOUT, EXPORTED_DOMAIN, ExportError, ExportedWorkflow, WORKFLOW_FAILED,
    WORKFLOW_UNAVAILABLE, validate_exported,
};

#![doc = include_str!("../README.md")]

mod drive;
mod engine;
mod error;
mod mapping;
mod retry;

pub use engine::{DefinitionLoader, Engine, EngineOptions, RunOutcome, StuckRun};
pub use error::{EngineError, StartError};

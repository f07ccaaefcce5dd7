#![doc = include_str!("../README.md")]

mod node;
mod run;

pub use node::{IllegalNodeTransition, NodeEvent, NodeState};
pub use run::{CompensationCause, CompensationFailure, IllegalRunTransition, RunEvent, RunState};

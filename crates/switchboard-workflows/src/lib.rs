#![doc = include_str!("../README.md")]

pub mod node;
pub mod run;

pub use node::{IllegalNodeTransition, NodeEvent, NodeState};
pub use run::{CompensationCause, CompensationFailure, IllegalRunTransition, RunEvent, RunState};

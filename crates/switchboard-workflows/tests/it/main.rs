//! The workflows crate's tests, in one test binary: the state machines (every pair of state
//! and event against a reference table of the legal edges, random event sequences, the JSON
//! round trip of every state and event), definitions (the example files, every validation
//! check with its path, YAML, JSON and builder agreeing, sub-workflow files and their cycles,
//! and random documents that never panic validation), and the run store conformance suite
//! against the in-memory store, with flawed stores it must catch.

mod conformance;
mod conformance_catches;
mod definition_checks;
mod definition_files;
mod definition_fuzz;
mod definition_support;
mod node_machine;
mod run_machine;

//! The workflow state machines' tests, in one test binary: every pair of state and event
//! against a reference table of the legal edges, the data each edge carries, random event
//! sequences (proptest) and the JSON round trip of every state and event.

mod node_machine;
mod run_machine;

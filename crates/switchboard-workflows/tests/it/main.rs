//! The workflow crate's tests, in one test binary: the state machines (every pair of state and
//! event against a reference table of the legal edges, the data each edge carries, random event
//! sequences (proptest) and the JSON round trip of every state and event), and the run store
//! conformance suite against the in-memory store, with flawed stores it must catch.

mod conformance;
mod conformance_catches;
mod node_machine;
mod run_machine;

//! The approval stores' integration tests, in one test binary: the proposal and idempotency
//! conformance suites against the in-memory stores and against deliberately flawed stores.

mod conformance;
mod conformance_catches;

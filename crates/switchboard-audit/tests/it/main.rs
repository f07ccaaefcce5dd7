//! The audit log's integration tests, in one test binary: the store conformance suite against
//! the in-memory table and against deliberately flawed stores, the log's queue, acknowledgement
//! and retention policies, and the writer under failing and panicking stores.

mod conformance;
mod conformance_catches;
mod log_policies;
mod writer_faults;

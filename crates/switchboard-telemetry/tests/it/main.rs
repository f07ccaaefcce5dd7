//! The tracing layer's integration tests, over a registry with the sample domains.

// The sample domains, linked so their tools register (rust-lang/rust#64731).
use switchboard_domains as _;

mod spans;
mod workflow_trace;

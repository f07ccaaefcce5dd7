//! The roster domain's integration tests, in one binary.

mod conformance;

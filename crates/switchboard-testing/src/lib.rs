//! The conformance kit: Switchboard's promises checked on any service's tools, from its own tests.
//!
//! The cases come from each tool's input schema: values it accepts, values it refuses, and
//! params that try to smuggle an organisation id past the context.

#[allow(dead_code, reason = "used by the checks")]
mod generate;

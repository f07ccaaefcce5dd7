//! The registry's integration tests, in one binary: each module boots registries of the tools
//! linked here (its own, and those of the other modules) and checks one part of the runtime.
//!
//! The `boot_*` tests stay binaries of their own: each links a tool set that is broken on
//! purpose, which would stop every registry in this binary from starting.

#[path = "../common/mod.rs"]
mod common;
mod vault;

mod asking;
mod audit_outage;
mod category_advice;
mod dispatch;
mod domain_call;
#[cfg(feature = "cluster")]
mod domain_groups;
mod domain_state;
mod header_parameters;
mod idempotency;
mod invoke_props;
mod layers;
mod linked;
mod linked_faults;
mod linked_metrics;
mod mutation_context;
mod prompts;
mod proposals;
mod runtime_prompts;
mod supervision;
mod switches;
mod unknown_fields;
mod writes;

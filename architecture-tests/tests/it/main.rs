//! The architecture tests, in one test binary: each module guards the invariants its `//!`
//! header names (see the crate's README).

// Cargo dependencies only make crates candidates for linking; a crate whose `#[tool]`s must be
// registered has to be referenced (rust-lang/rust#64731). `switchboard_domains` links every
// sample domain; the opt-in conformance domain is linked on its own, as the CLI does.
use switchboard_domain_conformance as _;
use switchboard_domains as _;

mod actors;
mod audit;
mod databases;
mod deps;
mod discovery;
mod kit;
mod mutations;
mod org_id;
mod pages;
mod resources;
mod tidy;
mod workflows;
mod workspace_hack;

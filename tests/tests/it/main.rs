//! The cross-crate integration tests, in one test binary: a module per concern, all sharing
//! the helpers of `switchboard-integration-tests` (`src/lib.rs`).

// Cargo only makes a dependency available; a binary links a crate's `#[tool]`s only if it
// names the crate (rust-lang/rust#64731). `switchboard_domains` links every sample domain.
use switchboard_domains as _;

mod approvals;
mod ask_utterances;
mod audit_store;
mod categories_and_permissions;
mod embed_guide;
mod navigation;
mod orchestrator_chain;
mod runtime_tools;
mod store_failures;
mod supervision;
mod tenant_isolation;
mod typed_calls;
mod workflow_examples;
mod workflow_tools;

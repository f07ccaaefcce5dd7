#![doc = include_str!("../README.md")]

#[cfg(feature = "conformance")]
pub mod conformance;
mod idempotency;
mod in_flight;
mod memory_idempotency;
mod memory_proposals;
mod proposals;
mod retention;

pub use idempotency::{
    Claim, Fingerprint, IdempotencyScope, IdempotencyStore, StoredOutcome, TypedOutput, Waiter,
    new_action_id,
};
pub use in_flight::InFlight;
pub use memory_idempotency::MemoryIdempotencyStore;
pub use memory_proposals::MemoryProposalStore;
pub use proposals::{
    Decision, Proposal, ProposalStatus, ProposalStore, Proposer, StoreError, TransitionError,
};
pub use retention::Retention;

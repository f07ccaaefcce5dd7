//! The engine's integration tests, in one binary: each boots a real `ToolRegistry` with the
//! sample domains (the roster) and the `probe` test domain linked here, and runs workflows
//! built as typed definitions against an in-memory run store (and, for the leases of two
//! engines on one store, a PostgreSQL one).

// Referencing the crate links the sample domains' tools (rust-lang/rust#64731).
use switchboard_domains as _;

mod approvals;
mod asking;
mod commits;
mod crashes;
mod hand_over;
mod leases;
mod limits;
mod nodes;
mod probe;
mod recovery;
mod retries;
mod saga;
mod support;

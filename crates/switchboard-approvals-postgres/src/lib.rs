#![doc = include_str!("../README.md")]

mod codec;
mod database;
mod idempotency;
mod idempotency_rows;
mod liveness;
mod proposal_rows;
mod proposals;
mod schema;
mod waiter;

pub use database::ApprovalsDatabase;
pub use idempotency::PostgresIdempotencyStore;
pub use proposals::PostgresProposalStore;
pub use schema::SCHEMA_VERSION;
/// Connecting and migrating is `switchboard-postgres`'s job, shared by every PostgreSQL store;
/// its options and startup error are this crate's too.
pub use switchboard_postgres::{OpenError, PostgresOptions};
pub use waiter::{DECISIONS_CHANNEL, IDEMPOTENCY_CHANNEL, POLL_INTERVAL};

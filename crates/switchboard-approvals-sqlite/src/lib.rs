#![doc = include_str!("../README.md")]

mod database;
mod idempotency;
mod idempotency_rows;
mod proposal_rows;
mod proposals;
mod schema;

pub use database::{ApprovalsDatabase, SqliteOptions};
pub use idempotency::SqliteIdempotencyStore;
pub use proposals::SqliteProposalStore;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
/// Opening a database is `switchboard-sqlite`'s job, shared by every SQLite store; its error
/// and `synchronous` setting are this crate's too.
pub use switchboard_sqlite::{OpenError, Synchronous};
